package qatools

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/fuzzing"
	gen "github.com/qafleet/fleetd/fuzzing/harness"
)

// TestFuzzToolGeneratedHarness: a repository without a fuzz target
// (fuzzing/harness's toy module): harness=list generates and ranks
// targets, a generated target fuzzes with its own kept statistics under
// its own key, a replay of the library's crash is judged library with a
// reproducer, and a crash through a zero-value receiver is judged the
// harness's, counted and its entry dropped from the next list.
// shareGoCaches links h's FuzzDir/go (the go command's caches of the fuzz
// sessions) to one directory under the user's cache, shared across these
// tests and their runs: a cold one rebuilds the standard library three
// ways (export data, tests, coverage instrumentation) and, for libFuzzer,
// instrumented, minutes on two cores. Sets h.env.FuzzDir when unset.
func shareGoCaches(t *testing.T, h *harness) {
	t.Helper()
	if h.env.FuzzDir == "" {
		h.env.FuzzDir = filepath.Join(h.dataDir, "fuzz")
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return
	}
	shared := filepath.Join(cache, "fleetd-test-harnessgen")
	if os.MkdirAll(shared, 0o700) == nil && os.MkdirAll(h.env.FuzzDir, 0o700) == nil {
		if err := os.Symlink(shared, filepath.Join(h.env.FuzzDir, "go")); err != nil {
			t.Fatal(err)
		}
	}
}

// writeFiles writes files (slash paths) under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestFuzzToolGeneratedHarness(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and fuzzes a module for about a minute")
	}
	h := toyRepoHarness(t)
	mod := h.env.Target.Repo.URL
	shareGoCaches(t, h)
	_, reg := h.newRun("r-gen", fleet.Budget{})
	out, err := h.call(reg, "qa_fuzz", map[string]any{"harness": "list"})
	if err != nil || out.Verdict != fleet.VerdictOK {
		t.Fatalf("list: %v %v", err, out.Result)
	}
	hs, _ := out.Result["harnesses"].([]map[string]any)
	targets := map[string]map[string]any{}
	for _, x := range hs {
		targets[x["entry"].(string)] = x
	}
	parse, feed := targets["example.com/toy.Parse"], targets["example.com/toy.(*Machine).Feed"]
	if parse == nil || feed == nil || out.Result["module"] != "example.com/toy" {
		t.Fatalf("list: %v", out.Result)
	}
	if d, _ := out.Result["dropped"].([]map[string]any); len(d) != 1 || !strings.Contains(d[0]["why"].(string), "does not compile") {
		t.Errorf("dropped: %v", out.Result["dropped"])
	}
	// A session on the generated Parse target, go test -fuzz (no clang needed).
	out, err = h.call(reg, "qa_fuzz", map[string]any{"harness": parse["target"], "engine": "go", "seconds": 5})
	if err != nil || out.Verdict != fleet.VerdictOK || out.Result["harness"] != parse["target"] {
		t.Fatalf("session: %v %v", err, out.Result)
	}
	key := fuzzing.TargetKey("go", mod, parse["package"].(string), parse["target"].(string))
	if series, err := fuzzing.ReadStats(h.env.FuzzDir); err != nil || len(series) != 1 || series[0].Key != key {
		t.Errorf("statistics kept per harness: %v %v", err, series)
	}
	// The library bug, replayed and judged.
	out, err = h.call(reg, "qa_fuzz", map[string]any{"harness": parse["target"], "replay": "go test fuzz v1\nstring(\"[a\")\n"})
	if err != nil || out.Result["verdict"] != gen.Library || out.Result["outcome"] != Crashed {
		t.Fatalf("replay of the Parse bug: %v %v", err, out.Result)
	}
	if src, _ := out.Result["reproducer"].(string); !strings.Contains(src, "func TestFleetdReproParse_") || !strings.Contains(src, `"[a"`) {
		t.Errorf("reproducer: %v", out.Result["reproducer"])
	}
	if _, err := os.Stat(out.Result["reproducer_kept"].(string)); err != nil {
		t.Error(err)
	}
	// A misuse: the zero-value Machine.
	out, err = h.call(reg, "qa_fuzz", map[string]any{"harness": feed["target"], "replay": "go test fuzz v1\nstring(\"x\")\n"})
	if err != nil || out.Result["verdict"] != gen.Misuse || out.Result["harness_crashes"] != 1 {
		t.Fatalf("replay of the misuse: %v %v", err, out.Result)
	}
	out, _ = h.call(reg, "qa_fuzz", map[string]any{"harness": "list"})
	if out.Result["harness_crashes"] != 1 {
		t.Errorf("harness crashes after the misuse: %v", out.Result["harness_crashes"])
	}
	for _, x := range out.Result["harnesses"].([]map[string]any) {
		if x["entry"] == "example.com/toy.(*Machine).Feed" {
			t.Error("the misused entry was generated again")
		}
	}
	out, _ = h.call(reg, "qa_fuzz", map[string]any{"harness": "FuzzNope"})
	if out.Verdict == fleet.VerdictOK || !strings.Contains(out.Result.Err(), "was not generated") {
		t.Errorf("an unknown harness: %v", out.Result)
	}
}

// stoppedModel is a harness model whose service does not answer.
type stoppedModel struct{}

func (stoppedModel) Next(context.Context, *fleet.State) (fleet.Step, error) {
	return fleet.Step{}, errors.New("model service: connection refused")
}

// TestFuzzToolSaysTheHarnessModelStopped: with tools.harness_planner set
// and its model failing, harness=list still lists the generated targets,
// and its result carries a degradation (the run's footer, runs show, the
// console and /metrics read it), not only a note.
func TestFuzzToolSaysTheHarnessModelStopped(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module's generated harnesses")
	}
	h := toyRepoHarness(t)
	h.env.HarnessModel = stoppedModel{}
	_, reg := h.newRun("r-genmodel", fleet.Budget{})
	out, err := h.call(reg, "qa_fuzz", map[string]any{"harness": "list"})
	if err != nil || out.Verdict != fleet.VerdictOK {
		t.Fatalf("list: %v %v", err, out.Result)
	}
	if hs, _ := out.Result["harnesses"].([]map[string]any); len(hs) == 0 {
		t.Errorf("no generated harnesses listed without the model: %v", out.Result)
	}
	d, ok := out.Result.Degradation()
	if !ok || d.Component != "harness model" || !strings.Contains(d.Cause, "connection refused") {
		t.Errorf("degradation %+v (%v), want the harness model's, naming its error; result %v", d, ok, out.Result)
	}
}

// toyRepoHarness is a harness at observe whose target is the toy module
// given only as a repository (no compiler, no fuzz target), with its own
// fuzz directory.
func toyRepoHarness(t *testing.T) *harness {
	t.Helper()
	h := newHarness(t, fleet.Observe)
	mod, err := filepath.Abs(filepath.Join("..", "fuzzing", "harness", "testdata", "toy"))
	if err != nil {
		t.Fatal(err)
	}
	h.env.Target.Compiler = nil
	h.env.Target.Repo = &fleet.Repo{URL: mod}
	h.env.FuzzDir = filepath.Join(h.dataDir, "fuzz")
	return h
}
