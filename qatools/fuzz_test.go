package qatools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/fuzzing"
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
