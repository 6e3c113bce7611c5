package qatools

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/fuzzing"
	"github.com/qafleet/fleetd/poster"
)

// TestFuzzTool runs qa_fuzz's built-in engine on the fake compiler: a
// corpus word that crashes it is found and described with its crash
// state, the session's interesting inputs persist under Env.FuzzDir, and
// the run record's result names the engine.
func TestFuzzTool(t *testing.T) {
	h := newHarness(t, fleet.Observe)
	corpus := t.TempDir()
	for name, src := range map[string]string{"a.tl": "let x = 1;\nprint x;\n", "b.tl": "fn f() { return PANIC_SOON; }\n"} {
		if err := os.WriteFile(filepath.Join(corpus, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h.env.Target.Corpus = corpus
	h.env.FuzzDir = filepath.Join(h.dataDir, "fuzz")
	_, reg := h.newRun("r-fuzz", fleet.Budget{})
	out, err := h.call(reg, "qa_fuzz", map[string]any{"engine": "builtin", "seconds": 3})
	if err != nil {
		t.Fatal(err)
	}
	r := out.Result
	if out.Verdict != fleet.VerdictOK || r["engine"] != "builtin" {
		t.Fatalf("qa_fuzz: %s %v", out.Verdict, r)
	}
	crashers, _ := r["crashers"].([]map[string]any)
	found := false
	for _, c := range crashers {
		if c["outcome"] == Crashed && c["crash_state"] == "panic: runtime error: index out of range [N] with length N @ main.parse" {
			found = strings.Contains(c["input"].(string), "PANIC")
		}
	}
	if !found {
		t.Errorf("no crasher holding PANIC with the crash state: %v", crashers)
	}
	key := fuzzing.TargetKey("compiler", h.env.Target.Compiler...)
	if r["corpus_key"] != key {
		t.Errorf("corpus_key %v, want %s", r["corpus_key"], key)
	}
	if q, _ := os.ReadDir(filepath.Join(h.env.FuzzDir, key, "queue")); len(q) == 0 {
		t.Error("no interesting input persisted")
	}
	// The session's figures are in the result and kept in the target's
	// stats file, crash states and all.
	if r["new_coverage"] != true || r["plateau_sessions"] != 0 || r["execs_per_sec"] == nil {
		t.Errorf("statistics in the result: new_coverage %v, plateau_sessions %v, execs_per_sec %v", r["new_coverage"], r["plateau_sessions"], r["execs_per_sec"])
	}
	series, err := fuzzing.ReadStats(h.env.FuzzDir)
	if err != nil || len(series) != 1 || series[0].Key != key || series[0].Engine != "builtin" || series[0].Target != "compiler" {
		t.Fatalf("stats: %+v, %v", series, err)
	}
	if l := series[0].Last(); l.Execs == 0 || len(l.CrashStates) == 0 || !l.NewCoverage {
		t.Errorf("stats line: %+v", l)
	}
	// Replay is for Go fuzz targets only; a compiler input replays through qa_compile.
	out, _ = h.call(reg, "qa_fuzz", map[string]any{"engine": "builtin", "replay": "go test fuzz v1\n[]byte(\"x\")\n"})
	if out.Verdict != fleet.VerdictError || !strings.Contains(out.Result.Err(), "replay is for engine go, libfuzzer or aflpp") {
		t.Errorf("replay with builtin: %v", out.Result)
	}
	out, _ = h.call(reg, "qa_fuzz", map[string]any{"engine": "go"})
	if out.Verdict != fleet.VerdictError || !strings.Contains(out.Result.Err(), "target.repo") {
		t.Errorf("engine go without a repo: %v", out.Result)
	}
	out, _ = h.call(reg, "qa_fuzz", map[string]any{"seconds": 601})
	if out.Verdict != fleet.VerdictError || !strings.Contains(out.Result.Err(), "more than 600") {
		t.Errorf("seconds 601: %v", out.Result)
	}
}

// needLibFuzzer skips a test when clang has no libFuzzer runtime, and
// fails it when CI is set (.ci/run installs it).
func needLibFuzzer(t *testing.T) {
	t.Helper()
	if _, err := fuzzing.LibFuzzerClang(context.Background()); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set and the libfuzzer engine cannot build here: %v", err)
		}
		t.Skipf("libFuzzer unavailable: %v", err)
	}
}

// TestFuzzToolLibFuzzer runs qa_fuzz's libfuzzer engine on a small Go
// module with a planted crash (a 32-bit magic behind a length check, which
// blind mutation does not guess and comparison feedback reads off the
// compare): the crash is found within a 60 s session, its repro replays
// through both Go engines with one crash state, a second session starts
// from the first one's kept corpus, auto picks libfuzzer for a repo
// target, and a fuzz target the harness cannot build falls back to go
// test -fuzz with a note saying why.
func TestFuzzToolLibFuzzer(t *testing.T) {
	needLibFuzzer(t)
	if testing.Short() {
		t.Skip("builds instrumented binaries and fuzzes for up to 60 s")
	}
	h := newHarness(t, fleet.Observe)
	mod, err := filepath.Abs(filepath.Join("..", "fuzzing", "testdata", "magicmod"))
	if err != nil {
		t.Fatal(err)
	}
	h.env.Target.Repo = &fleet.Repo{URL: mod, FuzzPackage: "./record", FuzzTarget: "FuzzParse"}
	h.env.FuzzDir = filepath.Join(h.dataDir, "fuzz")
	_, reg := h.newRun("r-libfuzzer", fleet.Budget{})
	out, err := h.call(reg, "qa_fuzz", map[string]any{"engine": "libfuzzer", "seconds": 60})
	if err != nil {
		t.Fatal(err)
	}
	r := out.Result
	if out.Verdict != fleet.VerdictOK || r["engine"] != fuzzing.EngineLibFuzzer {
		t.Fatalf("qa_fuzz: %s %v", out.Verdict, r)
	}
	crashers, _ := r["crashers"].([]map[string]any)
	if len(crashers) == 0 {
		t.Fatalf("no crash in 60 s: %v", r)
	}
	c := crashers[0]
	want := "panic: assignment to entry in nil map @ record.Parse < record.FuzzParse.funcN"
	if c["outcome"] != Crashed || c["crash_state"] != want {
		t.Errorf("crasher %v", c)
	}
	for _, k := range []string{"execs_per_sec", "coverage", "features", "started_from"} {
		if n, _ := r[k].(int); n <= 0 {
			t.Errorf("%s = %v", k, r[k])
		}
	}
	t.Logf("found after %v ms: %d execs, %v/s, cov %v, ft %v, started from %v", c["found_after_ms"], r["execs"], r["execs_per_sec"], r["coverage"], r["features"], r["started_from"])
	for _, engine := range []string{"libfuzzer", "go"} {
		rep, err := h.call(reg, "qa_fuzz", map[string]any{"engine": engine, "replay": c["input"]})
		if err != nil || rep.Verdict != fleet.VerdictOK || rep.Result["outcome"] != Crashed || rep.Result["crash_state"] != want {
			t.Errorf("replay with %s: %v %v", engine, err, rep.Result)
		}
	}
	key := fuzzing.TargetKey("go", mod, "./record", "FuzzParse")
	kept, _ := os.ReadDir(filepath.Join(h.env.FuzzDir, key, "libfuzzer", "corpus"))
	if len(kept) == 0 {
		t.Fatal("no corpus kept")
	}
	h.env.Target.Compiler = nil // auto: the repo's fuzz target
	out, _ = h.call(reg, "qa_fuzz", map[string]any{"seconds": 2})
	if r := out.Result; r["engine"] != fuzzing.EngineLibFuzzer || r["started_from"].(int) < min(len(kept), 3) {
		t.Errorf("second session (auto): engine %v, started from %v, %d kept: %v", r["engine"], r["started_from"], len(kept), r)
	}
	h.env.Target.Repo.FuzzTarget = "FuzzNothing"
	out, _ = h.call(reg, "qa_fuzz", map[string]any{"engine": "libfuzzer", "seconds": 2})
	if note, _ := out.Result["note"].(string); out.Result["engine"] != fuzzing.EngineGo || !strings.Contains(note, "no func FuzzNothing") || !strings.Contains(note, "go test -fuzz ran instead") {
		t.Errorf("a target the harness cannot build: %s %v", out.Verdict, out.Result)
	}
	// The engine is degraded, said in the result (the loop puts it in the
	// run's footer) with its cause; go test -fuzz found no such target
	// either, and the result says it ran nothing; doctor reads the failure.
	d, ok := out.Result.Degradation()
	if !ok || d.Component != "libfuzzer engine" || !strings.Contains(d.Cause, "no func FuzzNothing") || d.Fallback != "go test -fuzz, which ran no input" {
		t.Errorf("degraded: %+v (%v)", d, ok)
	}
	f, err := fuzzing.LastBuildFailure(filepath.Join(h.env.FuzzDir, fuzzing.TargetKey("go", mod, "./record", "FuzzNothing"), "libfuzzer", "bin"))
	if err != nil || f == nil || !strings.Contains(f.Cause, "no func FuzzNothing") {
		t.Errorf("recorded build failure: %+v %v", f, err)
	}
}

// TestReportStateAndFlaky: qa_report's state makes the fingerprint the
// crash state's (two inputs, one fingerprint: the second is deduplicated),
// and flaky caps the severity at low and marks the envelope.
func TestReportStateAndFlaky(t *testing.T) {
	h := newHarness(t, fleet.Observe)
	_, reg := h.newRun("r-state", fleet.Budget{})
	state := "crashed: panic: runtime error: index out of range [N] with length N @ compiler.(*compiler).enum"
	report := func(src string, flaky bool) fleet.Result {
		t.Helper()
		out, err := h.call(reg, "qa_report", map[string]any{"severity": "high", "surface": "compiler", "summary": "Compiler crash on " + src,
			"repro": map[string]any{"tool": "qa_compile", "args": map[string]any{"source": src}}, "state": state, "flaky": flaky})
		if err != nil || out.Verdict != fleet.VerdictOK {
			t.Fatalf("qa_report: %v %v", err, out.Result)
		}
		return out.Result
	}
	first := report("enum E {}", false)
	second := report("enum E {}\n", false)
	if first["status"] != "posted" || second["status"] != "deduped" || first["fp"] != second["fp"] {
		t.Errorf("two inputs of one crash state: %v / %v", first, second)
	}
	f := fleet.Finding{Surface: fleet.SurfaceCompiler, Extra: []fleet.Field{{Key: fleet.KeyState, Value: fleet.StateID(state)}}}
	if first["fp"] != fleet.Fingerprint(f) {
		t.Errorf("fp %v, want the state's %s", first["fp"], fleet.Fingerprint(f))
	}
	// Post the flaky one too, whose state is the same: as another identity,
	// for which the first is no duplicate.
	other, _ := chain.GenerateKey()
	rep, err := poster.New(poster.Config{Log: h.env.Log, Identity: other, Sponsor: h.sponsor, OutboxDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	h.env.Reporter = rep
	flaky := report("enum F {}", true)
	if flaky["status"] != "posted" {
		t.Fatalf("flaky: %v", flaky)
	}
	var got *fleet.Finding
	if _, err := h.env.Log.Scan(context.Background(), 0, func(p []chain.Entry) error {
		for _, e := range p {
			if pf, err := fleet.Parse(e.Text); err == nil && strings.Contains(e.Text, "enum F") {
				got = &pf
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got == nil || got.Severity != fleet.SeverityLow || got.State() != fleet.StateID(state) || !hasExtra(*got, "flaky", "true") {
		t.Errorf("flaky finding on the log: %+v", got)
	}
}

func hasExtra(f fleet.Finding, k, v string) bool {
	for _, x := range f.Extra {
		if x.Key == k && x.Value == v {
			return true
		}
	}
	return false
}

// TestFuzzToolAFLHarness: a C repository with a harness and a build
// command but no target.compiler is fuzzed by auto with instrumented AFL++
// in persistent mode, the result saying which mode ran and why; the crash
// behind the record parser's magic is found, its binary input comes back
// in base64 and replays on the instrumented build with the same crash
// state. A harness afl-clang-fast cannot build is built plain and run
// non-instrumented (-n), mode_why saying why; one that does not build at
// all is an error naming the build; with target.compiler the session falls
// back to it, non-instrumented, and mode_why says why.
func TestFuzzToolAFLHarness(t *testing.T) {
	if fuzzing.AFLPath() == "" || fuzzing.AFLClangFast() == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("afl-fuzz or afl-clang-fast not installed: .ci/run installs Debian's afl++")
		}
		t.Skip("afl-fuzz or afl-clang-fast not installed")
	}
	if testing.Short() {
		t.Skip("builds with afl-clang-fast and fuzzes for up to 30 s")
	}
	h := newHarness(t, fleet.Observe)
	src, err := filepath.Abs(filepath.Join("..", "fuzzing", "testdata", "cmagic"))
	if err != nil {
		t.Fatal(err)
	}
	corpus := t.TempDir()
	if err := os.WriteFile(filepath.Join(corpus, "seed"), []byte("R\x05\x00hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	compiler := h.env.Target.Compiler
	h.env.Target.Compiler = nil
	h.env.Target.Corpus = corpus
	h.env.Target.Repo = &fleet.Repo{URL: src, Harness: "harness.c", Build: []string{"sh", "-c", "$CC $CFLAGS $LIB_FUZZING_ENGINE -o {out} {harness} parse.c"}}
	h.env.FuzzDir = filepath.Join(h.dataDir, "fuzz")
	_, reg := h.newRun("r-aflpp", fleet.Budget{})
	out, err := h.call(reg, "qa_fuzz", map[string]any{"seconds": 30})
	if err != nil {
		t.Fatal(err)
	}
	r := out.Result
	if out.Verdict != fleet.VerdictOK || r["engine"] != fuzzing.EngineAFL || r["mode"] != fuzzing.AFLModePersistent || r["target"] != "harness.c" {
		t.Fatalf("qa_fuzz: %s %v", out.Verdict, r)
	}
	if why, _ := r["mode_why"].(string); !strings.Contains(why, "harness (harness.c)") || !strings.Contains(why, "persistent loop") {
		t.Errorf("mode_why %q", why)
	}
	for _, k := range []string{"cpu_ms", "execs_per_cpu_sec", "dict_entries"} {
		if n, _ := r[k].(int64); n <= 0 {
			if n, _ := r[k].(int); n <= 0 {
				t.Errorf("%s = %v", k, r[k])
			}
		}
	}
	crashers, _ := r["crashers"].([]map[string]any)
	if len(crashers) == 0 {
		t.Fatalf("no crash in 30 s: %v", r)
	}
	c := crashers[0]
	b64, _ := c["input_base64"].(string)
	if c["outcome"] != Crashed || !strings.Contains(c["crash_state"].(string), "abort") || b64 == "" {
		t.Fatalf("crasher %v", c)
	}
	rep, err := h.call(reg, "qa_fuzz", map[string]any{"replay_base64": b64})
	if err != nil || rep.Verdict != fleet.VerdictOK || rep.Result["engine"] != fuzzing.EngineAFL || rep.Result["outcome"] != Crashed || rep.Result["crash_state"] != c["crash_state"] {
		t.Errorf("replay: %v %v", err, rep.Result)
	}
	rep, _ = h.call(reg, "qa_fuzz", map[string]any{"engine": "aflpp", "replay": "R\x05\x00hello"})
	if rep.Verdict != fleet.VerdictOK || rep.Result["outcome"] == Crashed {
		t.Errorf("the benign seed replayed: %v", rep.Result)
	}
	key := fuzzing.TargetKey("harness", src, "harness.c")
	if series, err := fuzzing.ReadStats(h.env.FuzzDir); err != nil || len(series) != 1 || series[0].Key != key || series[0].Engine != fuzzing.EngineAFL {
		t.Errorf("stats: %+v, %v", series, err)
	}

	// A build afl-clang-fast cannot do: the plain build runs -n, and the
	// crash replays on it.
	h.env.Target.Repo.Build = []string{"sh", "-c", "case $CC in *afl*) echo no AFL here >&2; exit 3;; esac; $CC $CFLAGS $LIB_FUZZING_ENGINE -o {out} {harness} parse.c"}
	out, _ = h.call(reg, "qa_fuzz", map[string]any{"seconds": 2})
	r = out.Result
	if why, _ := r["mode_why"].(string); out.Verdict != fleet.VerdictOK || r["mode"] != fuzzing.AFLModeBlind || !strings.Contains(why, "fallback to non-instrumented (-n) on a plain build") || !strings.Contains(why, "no AFL here") {
		t.Errorf("a harness afl-clang-fast cannot build: %s %v", out.Verdict, r)
	}
	rep, err = h.call(reg, "qa_fuzz", map[string]any{"replay_base64": b64})
	if err != nil || rep.Verdict != fleet.VerdictOK || rep.Result["outcome"] != Crashed {
		t.Errorf("replay on the plain build: %v %v", err, rep.Result)
	}

	h.env.Target.Repo.Build = []string{"sh", "-c", "$CC -o {out} missing.c"}
	out, _ = h.call(reg, "qa_fuzz", map[string]any{"seconds": 2})
	if e := out.Result.Err(); out.Verdict != fleet.VerdictError || !strings.Contains(e, "did not build") || !strings.Contains(e, "missing.c") || !strings.Contains(e, "(-n)") {
		t.Errorf("a harness that does not build: %v", out.Result)
	}
	h.env.Target.Compiler = compiler
	out, _ = h.call(reg, "qa_fuzz", map[string]any{"seconds": 2})
	r = out.Result
	if why, _ := r["mode_why"].(string); out.Verdict != fleet.VerdictOK || r["mode"] != fuzzing.AFLModeBlind || !strings.Contains(why, "build failed") || !strings.Contains(why, "missing.c") {
		t.Errorf("a failed build with target.compiler: %s %v", out.Verdict, r)
	}
}
