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

// MustTinyModule writes a module whose FuzzParse panics (a nil map write)
// on any input longer than 3 bytes between braces.
func MustTinyModule(tb testing.TB) string {
	tb.Helper()
	return writeModule(tb, map[string]string{
		"go.mod":             "module example.com/tiny\n\ngo 1.22\n",
		"parse/parse.go":     "package parse\n\n// Parse counts braces, badly.\nfunc Parse(b []byte) int {\n\tif len(b) > 3 && b[0] == '{' && b[len(b)-1] == '}' {\n\t\tvar m map[string]int\n\t\tm[\"x\"]++\n\t}\n\treturn len(b)\n}\n",
		"parse/fuzz_test.go": "package parse\n\nimport \"testing\"\n\nfunc FuzzParse(f *testing.F) {\n\tf.Add([]byte(\"{}\"))\n\tf.Fuzz(func(t *testing.T, b []byte) { Parse(b) })\n}\n",
	})
}

// writeModule writes files (path: content) under a new directory and
// returns it.
func writeModule(tb testing.TB, files map[string]string) string {
	tb.Helper()
	dir := tb.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return dir
}

// TestGoEngine builds a real module's fuzz target, lets Go's fuzzer find
// its crasher, and replays it (and a passing input) one at a time. It
// compiles the standard library with fuzzing instrumentation the first
// time (minutes on a cold build cache), so -short skips it.
func TestGoEngine(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an instrumented test binary")
	}
	goCmd, err := GoCommand()
	if err != nil {
		t.Skip(err)
	}
	work := t.TempDir()
	src := filepath.Join(work, "repo")
	if err := CheckoutRepo(context.Background(), MustTinyModule(t), src); err != nil {
		t.Fatal(err)
	}
	// The real build cache: the instrumented standard library is built once
	// per machine, not once per test run.
	env := machineEnv(t, goCmd, GoEnv(goCmd, work, filepath.Join(work, "go"), 1<<30), "GOCACHE")
	g := GoTarget{Dir: src, Package: "./parse", Func: "FuzzParse", Go: goCmd, Env: env, CacheDir: filepath.Join(work, "fuzzcache")}
	rep, err := RunGo(context.Background(), g, 60*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Crashers) != 1 {
		t.Fatalf("crashers %+v (execs %d)", rep.Crashers, rep.Execs)
	}
	c := rep.Crashers[0]
	want := "panic: assignment to entry in nil map @ parse.Parse < parse.FuzzParse.funcN"
	if c.Outcome != Crashed || c.State != want || rep.Engine != EngineGo {
		t.Errorf("crasher outcome %s state %q, want %q", c.Outcome, c.State, want)
	}
	vs, err := ParseGoCorpus(c.Input)
	if err != nil || len(vs) != 1 || len(vs[0].Bytes) <= 3 {
		t.Fatalf("crasher input %q: %v", c.Input, err)
	}
	again, err := ReplayGo(context.Background(), g, c.Input, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if again.Outcome != Crashed || again.State != want {
		t.Errorf("replay: %s %q", again.Outcome, again.State)
	}
	pass, err := ReplayGo(context.Background(), g, []byte("go test fuzz v1\n[]byte(\"{}\")\n"), time.Minute)
	if err != nil || pass.Outcome != Compiled {
		t.Errorf("a passing input replayed as %s (%v): %s", pass.Outcome, err, pass.Stderr)
	}
	if _, err := ReplayGo(context.Background(), g, []byte("not a corpus file"), time.Minute); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("malformed replay input: %v", err)
	}
}

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
	// The machine's caches: gjson 1.6.3 and what it requires are fetched
	// into the module cache through the machine's proxy first (a cold
	// machine has none of them: stop 41's CI), and the replays then build
	// with no network (GOPROXY=off), as a replay of a user's module does.
	env := machineEnv(t, goCmd, GoEnv(goCmd, t.TempDir(), t.TempDir(), 1<<30), "GOCACHE", "GOMODCACHE")
	dl := exec.Command(goCmd, "mod", "download", "github.com/tidwall/gjson@v1.6.3", "github.com/tidwall/match@v1.0.1", "github.com/tidwall/pretty@v1.0.2")
	dl.Env = machineEnv(t, goCmd, env, "GOPROXY", "GOSUMDB")
	if out, err := dl.CombinedOutput(); err != nil {
		t.Fatalf("go mod download gjson 1.6.3 and its requirements: %v\n%s", err, out)
	}
	env = setEnv(setEnv(env, "GOPROXY", "off"), "GOSUMDB", "off")
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
			// At once, each in its own copy (a replay writes its input and
			// its test binary into the copy): under load a spinning replay
			// is starved and replayed again with 4x the wall time.
			t.Parallel()
			g := GoTarget{Dir: hangModule(t), Package: "./lib", Func: tc.fn, Go: goCmd, Env: env}
			start := time.Now()
			c, err := ReplayGo(ctx, g, []byte(tc.input), 8*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if c.Outcome != TimedOut || string(c.Input) != tc.input || !strings.HasPrefix(c.State, "hang: ") {
				t.Fatalf("replay: outcome %s state %q input %q\n%s", c.Outcome, c.State, c.Input, c.Stderr)
			}
			if !strings.Contains(c.Stderr, "fleetd: the test ran for") || !strings.Contains(c.Stderr, "goroutine ") {
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
	t.Run("finishes", func(t *testing.T) {
		t.Parallel()
		g := GoTarget{Dir: src, Package: "./lib", Func: "FuzzLib", Go: goCmd, Env: env}
		c, err := ReplayGo(ctx, g, []byte("go test fuzz v1\n[]byte(\"xxlop\")\n"), 8*time.Second)
		if err != nil || c.Outcome != Compiled {
			t.Fatalf("a passing input replayed as %s (%v)\n%s", c.Outcome, err, c.Stderr)
		}
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

// machineEnv sets keys (GOCACHE, GOMODCACHE) in env to this machine's, as
// go env reports them.
func machineEnv(tb testing.TB, goCmd string, env []string, keys ...string) []string {
	tb.Helper()
	for _, k := range keys {
		v, err := exec.Command(goCmd, "env", k).Output()
		if err != nil {
			tb.Fatal(err)
		}
		env = setEnv(env, k, strings.TrimSpace(string(v)))
	}
	return env
}
