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
	cache, err := exec.Command(goCmd, "env", "GOCACHE").Output()
	if err != nil {
		t.Skip(err)
	}
	env := GoEnv(goCmd, work, filepath.Join(work, "go"), 1<<30)
	for i, kv := range env {
		if strings.HasPrefix(kv, "GOCACHE=") {
			env[i] = "GOCACHE=" + strings.TrimSpace(string(cache))
		}
	}
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
