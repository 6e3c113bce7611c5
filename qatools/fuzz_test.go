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
	// Replay is for Go fuzz targets only; a compiler input replays through qa_compile.
	out, _ = h.call(reg, "qa_fuzz", map[string]any{"engine": "builtin", "replay": "go test fuzz v1\n[]byte(\"x\")\n"})
	if out.Verdict != fleet.VerdictError || !strings.Contains(out.Result.Err(), "replay is for engine go") {
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
