package record

import (
	"bytes"
	"testing"
)

func FuzzParse(f *testing.F) {
	f.Add([]byte("\x08abcdefgh"))
	f.Add([]byte("\x09headbodyx"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if n := Parse(b); n > len(b) {
			t.Fatalf("length %d past the input", n)
		}
	})
}

// TestParse is a test the libfuzzer harness leaves out.
func TestParse(t *testing.T) {
	if Parse(bytes.Repeat([]byte{8}, 9)) != 8 {
		t.Fatal("a valid record")
	}
}
