package fuzzing

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// hangModule writes a module with three fuzz targets: FuzzLib loops in
// the library on an input holding "loop", FuzzHarness loops in the fuzz
// function itself, and FuzzGJSON calls the real tidwall/gjson 1.6.3, whose
// wildcard match is exponential in a path's stars (a public ReDoS-like
// hang, fixed in tidwall/match 1.1).
func hangModule(tb testing.TB) string {
	tb.Helper()
	return writeModule(tb, map[string]string{
		"go.mod": "module example.com/hangs\n\ngo 1.22\n\nrequire (\n\tgithub.com/tidwall/gjson v1.6.3\n\tgithub.com/tidwall/match v1.0.1\n\tgithub.com/tidwall/pretty v1.0.2\n)\n",
		"lib/lib.go": "package lib\n\nimport \"bytes\"\n\n// Scan counts the bytes up to \"loop\", forever once it meets it.\n" +
			"func Scan(b []byte) int {\n\tn := 0\n\tfor i := 0; i < len(b); i++ {\n\t\tif bytes.HasPrefix(b[i:], []byte(\"loop\")) {\n\t\t\ti--\n\t\t}\n\t\tn++\n\t}\n\treturn n\n}\n",
		"lib/fuzz_test.go": "package lib\n\nimport (\n\t\"testing\"\n\n\t\"github.com/tidwall/gjson\"\n)\n\n" +
			"func FuzzLib(f *testing.F) {\n\tf.Fuzz(func(t *testing.T, b []byte) { Scan(b) })\n}\n\n" +
			"var sink int\n\nfunc FuzzHarness(f *testing.F) {\n\tf.Fuzz(func(t *testing.T, b []byte) {\n\t\tfor len(b) > 0 && b[0] == 'h' {\n\t\t\tsink++\n\t\t}\n\t})\n}\n\n" +
			"func FuzzGJSON(f *testing.F) {\n\tf.Fuzz(func(t *testing.T, js, path string) { gjson.Get(js, path) })\n}\n",
	})
}

// TestReplayGoHang replays hangs through the go engine: the replay times
// out, names its input, and carries the hung goroutine's stack, which
// JudgeHang reads: a loop in the library is the library's, one in the
// fuzz function the harness's, and the real gjson 1.6.3 hang (inside
// tidwall/match, which gjson calls) is gjson's. A passing input is not a
// hang.
func TestReplayGoHang(t *testing.T) {
	if testing.Short() {
		t.Skip("builds test binaries")
	}
	goCmd, err := GoCommand()
	if err != nil {
		t.Fatal(err)
	}
	// The machine's caches: gjson 1.6.3 comes from the module cache, with
	// no network (GOPROXY=off).
	env := GoEnv(goCmd, t.TempDir(), t.TempDir(), 1<<30)
	for _, k := range []string{"GOCACHE", "GOMODCACHE"} {
		v, err := exec.Command(goCmd, "env", k).Output()
		if err != nil {
			t.Fatal(err)
		}
		env = setEnv(env, k, strings.TrimSpace(string(v)))
	}
	env = setEnv(setEnv(env, "GOPROXY", "off"), "GOSUMDB", "off")
	gm := strings.TrimSpace(envValue(env, "GOMODCACHE"))
	if _, err := os.Stat(filepath.Join(gm, "github.com", "tidwall", "gjson@v1.6.3")); err != nil {
		t.Fatalf("gjson 1.6.3 is not in the module cache (go mod download github.com/tidwall/gjson@v1.6.3): %v", err)
	}
	src := hangModule(t)
	ctx := context.Background()
	cases := []struct {
		fn, input, mod, verdict, frame string
	}{
		{"FuzzLib", "go test fuzz v1\n[]byte(\"xxloop\")\n", "example.com/hangs", HangLibrary, "example.com/hangs/lib.Scan"},
		{"FuzzHarness", "go test fuzz v1\n[]byte(\"hx\")\n", "example.com/hangs", HangHarness, "example.com/hangs/lib.FuzzHarness.func1"},
		{"FuzzGJSON", "go test fuzz v1\nstring(\"[{\\\"a\\\":\\\"" + strings.Repeat("a", 60) + "\\\"}]\")\nstring(\"#(a%*a*a*a*a*a*a*a*a*a*a*b)\")\n",
			"github.com/tidwall/gjson", HangLibrary, "github.com/tidwall/gjson."},
	}
	for _, tc := range cases {
		t.Run(tc.fn, func(t *testing.T) {
			g := GoTarget{Dir: src, Package: "./lib", Func: tc.fn, Go: goCmd, Env: env}
			start := time.Now()
			c, err := ReplayGo(ctx, g, []byte(tc.input), 8*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if c.Outcome != TimedOut || string(c.Input) != tc.input || !strings.HasPrefix(c.State, "hang: ") {
				t.Fatalf("replay: outcome %s state %q input %q\n%s", c.Outcome, c.State, c.Input, c.Stderr)
			}
			if !strings.Contains(c.Stderr, "panic: test timed out after") || !strings.Contains(c.Stderr, "goroutine ") {
				t.Fatalf("no goroutine dump in the replay's head:\n%s", c.Stderr)
			}
			// The harness's loop is judged against the module of its
			// library, with the harness package being lib itself.
			harnessPkg := "example.com/hangs/fleetdharness"
			v := JudgeHang([]byte(c.Stderr), tc.mod, harnessPkg)
			if v.Verdict != tc.verdict || !strings.HasPrefix(v.Frame, tc.frame) {
				t.Fatalf("verdict %+v, want %s at %s\n%s", v, tc.verdict, tc.frame, c.Stderr)
			}
			if tc.fn == "FuzzGJSON" && !strings.Contains(v.Why, "github.com/tidwall/match.") {
				t.Errorf("the gjson hang's why does not name the matcher it loops in: %s", v.Why)
			}
			t.Logf("%s: %s after %s", tc.fn, v.Why, time.Since(start).Round(time.Millisecond))
		})
	}
	// The same library on an input that finishes is no hang.
	g := GoTarget{Dir: src, Package: "./lib", Func: "FuzzLib", Go: goCmd, Env: env}
	c, err := ReplayGo(ctx, g, []byte("go test fuzz v1\n[]byte(\"xxlop\")\n"), 8*time.Second)
	if err != nil || c.Outcome != Compiled {
		t.Fatalf("a passing input replayed as %s (%v)\n%s", c.Outcome, err, c.Stderr)
	}
}

// TestJudgeHang judges goroutine dumps as go test prints them at its
// timeout: the fuzz function's goroutine is picked over the alarm's and
// the main goroutine, and each rule has a case.
func TestJudgeHang(t *testing.T) {
	dump := func(frames ...string) []byte {
		s := "panic: test timed out after 3s\n\trunning tests:\n\t\tFuzzX (3s)\n\n" +
			"goroutine 17 [running]:\ntesting.(*M).startAlarm.func1()\n\t/go/src/testing/testing.go:2484 +0x345\ncreated by time.goFunc\n\t/go/src/time/sleep.go:215 +0x2d\n\n" +
			"goroutine 1 [chan receive]:\ntesting.(*T).Run(0xc000003a40, {0x5c, 0x5}, 0xc0)\n\t/go/src/testing/testing.go:1859 +0x431\nmain.main()\n\t_testmain.go:47 +0x9b\n\n" +
			"goroutine 6 [running]:\n"
		for _, f := range frames {
			fn, file, _ := strings.Cut(f, " ")
			s += fn + "(...)\n\t" + file + " +0x1c\n"
		}
		s += "testing.(*F).Fuzz.func1.1(0xc000003c00)\n\t/go/src/testing/fuzz.go:341 +0x32c\ncreated by testing.(*F).Fuzz.func1 in goroutine 5\n\t/go/src/testing/fuzz.go:328 +0x4b5\n"
		return []byte(s)
	}
	const mod, h = "example.com/m", "example.com/m/fleetdharness"
	cases := []struct {
		name    string
		out     []byte
		verdict string
		frame   string
	}{
		{"library", dump("runtime.mallocgc /go/src/runtime/malloc.go:1", "example.com/m/p.loop /m/p/p.go:9", "example.com/m/fleetdharness/p.FuzzLoop.func1 /m/fleetdharness/p/harness_test.go:12"), HangLibrary, "example.com/m/p.loop"},
		{"dependency inside the library", dump("example.com/other.match /o/m.go:3", "example.com/m/p.Get /m/p/p.go:20", "example.com/m/fleetdharness/p.FuzzGet.func1 /m/fleetdharness/p/harness_test.go:12"), HangLibrary, "example.com/m/p.Get"},
		{"harness", dump("strings.Index /go/src/strings/strings.go:1", "example.com/m/fleetdharness/p.FuzzLoop.func1 /m/fleetdharness/p/harness_test.go:12"), HangHarness, "example.com/m/fleetdharness/p.FuzzLoop.func1"},
		{"dependency called by the harness", dump("example.com/other.match /o/m.go:3", "example.com/m/fleetdharness/p.FuzzLoop.func1 /m/fleetdharness/p/harness_test.go:12"), HangOutside, "example.com/m/fleetdharness/p.FuzzLoop.func1"},
		{"only the runtime", dump("runtime.futex /go/src/runtime/lock_futex.go:1"), HangOutside, ""},
		{"no dump", []byte("fatal: killed\n"), HangUnknown, ""},
	}
	for _, tc := range cases {
		v := JudgeHang(tc.out, mod, h)
		if v.Verdict != tc.verdict || v.Frame != tc.frame || v.Why == "" {
			t.Errorf("%s: %+v, want %s at %q", tc.name, v, tc.verdict, tc.frame)
		}
	}
	if ok, head := GoTestTimedOut(dump("example.com/m/p.loop /m/p/p.go:9")); !ok || !strings.HasPrefix(head, "panic: test timed out after 3s\n\ngoroutine 6 [running]:") {
		t.Errorf("GoTestTimedOut picked:\n%s", head)
	}
	deep := []string{}
	for range 200 {
		deep = append(deep, "example.com/other.deepMatch /o/m.go:46")
	}
	deep = append(deep, "example.com/m/p.Get /m/p/p.go:20")
	ok, head := GoTestTimedOut(dump(deep...))
	if v := JudgeHang([]byte(head), mod, h); !ok || len(head) > 2048 || !strings.Contains(head, "199 more calls of example.com/other.deepMatch") || v.Verdict != HangLibrary || v.Frame != "example.com/m/p.Get" {
		t.Errorf("a deep recursion (%d bytes) judged %+v:\n%s", len(head), v, head)
	}
	if ok, _ := GoTestTimedOut([]byte("panic: runtime error: index out of range\n")); ok {
		t.Error("a crash read as a test timeout")
	}
}

// FuzzJudgeHang: any output is judged without a panic, and a verdict
// always says why.
func FuzzJudgeHang(f *testing.F) {
	f.Add([]byte("panic: test timed out after 1s\n\ngoroutine 6 [running]:\nexample.com/m/p.loop(...)\n\t/m/p/p.go:9 +0x1c\n"), "example.com/m")
	f.Add([]byte("goroutine 1 [running]:\n"), "")
	f.Fuzz(func(t *testing.T, out []byte, mod string) {
		v := JudgeHang(out, mod, mod+"/fleetdharness")
		if v.Verdict == "" || v.Why == "" {
			t.Fatalf("verdict %+v", v)
		}
		GoTestTimedOut(out)
	})
}

func setEnv(env []string, k, v string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, k+"=") {
			out = append(out, kv)
		}
	}
	return append(out, k+"="+v)
}

func envValue(env []string, k string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, k+"="); ok {
			return v
		}
	}
	return ""
}
