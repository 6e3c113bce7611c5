package record

import "testing"

// FuzzFields takes one argument of each kind the harness lays out; it
// panics on one combination (the libfuzzer engine's argument layout test).
func FuzzFields(f *testing.F) {
	f.Add("name", int16(1), true, 1.5, []byte("rest"))
	f.Fuzz(func(t *testing.T, name string, n int16, ok bool, x float64, rest []byte) {
		if name == "FLTD" && n == -2 && ok && x == 0.5 && string(rest) == "tail" {
			panic("all fields matched")
		}
	})
}

// FuzzReject fails (t.Fatalf) on a record Parse rejects that starts with
// X: the harness prints a test failure as go test does.
func FuzzReject(f *testing.F) {
	f.Add([]byte("\x08abcdefgh"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 0 && b[0] == 'X' && Parse(b) == 0 {
			t.Fatalf("rejected %q", b)
		}
	})
}

// FuzzAlways panics on every input, seeds included (a target broken at
// the start: the engine must say so and still end cleanly).
func FuzzAlways(f *testing.F) {
	f.Add([]byte("seed"))
	f.Fuzz(func(t *testing.T, b []byte) {
		panic("broken on every input")
	})
}
