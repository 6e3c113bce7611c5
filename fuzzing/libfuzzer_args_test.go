package fuzzing

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestArgsRoundTrip: a `go test fuzz v1` file becomes a libFuzzer input
// and back unchanged, for every argument kind, and a malformed or
// mismatched one is an error.
func TestArgsRoundTrip(t *testing.T) {
	tests := []struct {
		name  string
		types []string
		in    string
	}{
		{"one []byte", []string{"[]byte"}, "go test fuzz v1\n[]byte(\"\\x00abc\\xff\")\n"},
		{"one string", []string{"string"}, "go test fuzz v1\nstring(\"héllo\")\n"},
		{"every kind", []string{"string", "int16", "bool", "float64", "uint8", "int32", "uint64", "float32", "[]byte"},
			"go test fuzz v1\nstring(\"FLTD\")\nint16(-2)\nbool(true)\nfloat64(0.5)\nuint8(255)\nint32(-70000)\nuint64(18446744073709551615)\nfloat32(-1.25)\n[]byte(\"tail\")\n"},
		{"special floats", []string{"float64", "float64", "float64"}, "go test fuzz v1\nfloat64(+Inf)\nfloat64(-Inf)\nfloat64(NaN)\n"},
		{"two byte slices", []string{"[]byte", "[]byte"}, "go test fuzz v1\n[]byte(\"first\")\n[]byte(\"\")\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := RawInput([]byte(tt.in), tt.types)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.in, string(GoInput(raw, tt.types))); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
	if raw, _ := RawInput([]byte("go test fuzz v1\n[]byte(\"abc\")\n"), nil); string(raw) != "abc" {
		t.Errorf("a single []byte is the input itself: %q", raw)
	}
	for _, bad := range []struct{ in, want string }{
		{"go test fuzz v1\nstring(\"a\")\n", "value 1 is string, the fuzz function takes []byte"},
		{"go test fuzz v1\n[]byte(\"a\")\n[]byte(\"b\")\n", "the input has 2 values, the fuzz function takes 1"},
		{"not a corpus file", "line 1"},
	} {
		if _, err := RawInput([]byte(bad.in), []string{"[]byte"}); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("RawInput(%q): %v, want %q", bad.in, err, bad.want)
		}
	}
	// Any bytes decode, short ones as zeros.
	if got := string(GoInput([]byte{3, 0, 0, 0, 'a'}, []string{"string", "int16", "bool"})); got != "go test fuzz v1\nstring(\"a\")\nint16(0)\nbool(false)\n" {
		t.Errorf("short input: %q", got)
	}
}

// TestHarnessArguments builds the fixture's five-argument fuzz target: the
// describe run reports its argument kinds and f.Add seed, and an input
// given as a `go test fuzz v1` file reaches the fuzz function with the
// same values through the harness's decoder as through go test.
func TestHarnessArguments(t *testing.T) {
	clang := MustLibFuzzer(t)
	if testing.Short() {
		t.Skip("builds an instrumented binary")
	}
	g := mustGoTarget(t, "magicmod", "./record", "FuzzFields")
	lt := LibFuzzerTarget{Go: g, Clang: clang, CacheDir: t.TempDir()}
	ctx := context.Background()
	b, err := lt.build(ctx)
	if err != nil {
		t.Fatal(err)
	}
	types := []string{"string", "int16", "bool", "float64", "[]byte"}
	if diff := cmp.Diff(types, b.types); diff != "" {
		t.Errorf("types (-want +got):\n%s", diff)
	}
	if len(b.seeds) != 1 || string(GoInput(b.seeds[0], b.types)) != "go test fuzz v1\nstring(\"name\")\nint16(1)\nbool(true)\nfloat64(1.5)\n[]byte(\"rest\")\n" {
		t.Errorf("seeds %q", b.seeds)
	}
	in := []byte("go test fuzz v1\nstring(\"FLTD\")\nint16(-2)\nbool(true)\nfloat64(0.5)\n[]byte(\"tail\")\n")
	want := "panic: all fields matched @ record.FuzzFields.funcN"
	c, err := ReplayLibFuzzer(ctx, lt, in, time.Minute)
	if err != nil || c.Outcome != Crashed || c.State != want {
		t.Errorf("libfuzzer replay: %s %q (%v)\n%s", c.Outcome, c.State, err, c.Stderr)
	}
	gr, err := ReplayGo(ctx, g, in, time.Minute)
	if err != nil || gr.Outcome != Crashed || gr.State != want {
		t.Errorf("go replay: %s %q (%v)", gr.Outcome, gr.State, err)
	}
	ok, err := ReplayLibFuzzer(ctx, lt, []byte(strings.Replace(string(in), "int16(-2)", "int16(-3)", 1)), time.Minute)
	if err != nil || ok.Outcome != Compiled {
		t.Errorf("a passing input: %s (%v)", ok.Outcome, err)
	}
}

// TestHarnessFailure: a t.Fatalf in the fuzz function fails the input
// with the state go test gives it ("test failure: <message>").
func TestHarnessFailure(t *testing.T) {
	clang := MustLibFuzzer(t)
	if testing.Short() {
		t.Skip("builds an instrumented binary")
	}
	g := mustGoTarget(t, "magicmod", "./record", "FuzzReject")
	lt := LibFuzzerTarget{Go: g, Clang: clang, CacheDir: t.TempDir()}
	in := []byte("go test fuzz v1\n[]byte(\"X1\")\n")
	want := `test failure: rejected "…"`
	c, err := ReplayLibFuzzer(context.Background(), lt, in, time.Minute)
	if err != nil || c.Outcome != Crashed || c.State != want {
		t.Errorf("libfuzzer: %s %q (%v)\n%s", c.Outcome, c.State, err, c.Stderr)
	}
	gr, err := ReplayGo(context.Background(), g, in, time.Minute)
	if err != nil || gr.Outcome != Crashed || gr.State != want {
		t.Errorf("go: %s %q (%v)", gr.Outcome, gr.State, err)
	}
}

// TestRewriteTestFile: a fuzz test file compiles as a regular file against
// the stand-in testing package, every line where it was; tests and the
// imports only they used are blanked out.
func TestRewriteTestFile(t *testing.T) {
	src := `package p

import (
	"bytes"
	"strings"
	"testing"
	"testing/synctest"
)

// TestX goes.
func TestX(t *testing.T) { bytes.Clone(nil) }

func FuzzX(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) { synctest.Test(t, func(t *testing.T) { strings.ToUpper(s) }) })
}

func FuzzOther(f *testing.F) {}

func BenchmarkX(b *testing.B) {}

func Testify() {}

func ExampleX() {}
`
	got, pkg, err := rewriteTestFile([]byte(src), func(n string) bool { return n == "FuzzX" }, "example.com/m/fleetdlibfuzzer/testing")
	if err != nil {
		t.Fatal(err)
	}
	blank := func(s string) string { return strings.Repeat(" ", len(s)) }
	want := strings.NewReplacer(
		"\t\"bytes\"\n", "\t"+blank(`"bytes"`)+"\n",
		`"testing"`, `"example.com/m/fleetdlibfuzzer/testing"`,
		`"testing/synctest"`, `"example.com/m/fleetdlibfuzzer/testing/synctest"`,
		"// TestX goes.\nfunc TestX(t *testing.T) { bytes.Clone(nil) }", blank("// TestX goes.")+"\n"+blank("func TestX(t *testing.T) { bytes.Clone(nil) }"),
		"func FuzzOther(f *testing.F) {}", blank("func FuzzOther(f *testing.F) {}"),
		"func BenchmarkX(b *testing.B) {}", blank("func BenchmarkX(b *testing.B) {}"),
		"func ExampleX() {}", blank("func ExampleX() {}"),
	).Replace(src)
	if diff := cmp.Diff(want, string(got)); diff != "" || pkg != "p" {
		t.Errorf("package %s (-want +got):\n%s", pkg, diff)
	}
	if strings.Count(string(got), "\n") != strings.Count(src, "\n") {
		t.Error("lines moved")
	}
}

// TestValueProfileEveryOtherWorker: the first worker always fuzzes with
// value profile, and half of the workers, rounded up, do.
func TestValueProfileEveryOtherWorker(t *testing.T) {
	for n := 1; n <= 4; n++ {
		on := 0
		for i := range n {
			switch valueProfile(i) {
			case "-use_value_profile=1":
				on++
			case "-use_value_profile=0":
			default:
				t.Fatalf("worker %d: %q", i, valueProfile(i))
			}
		}
		if valueProfile(0) != "-use_value_profile=1" || on != (n+1)/2 {
			t.Errorf("%d workers: %d with value profile", n, on)
		}
	}
}
