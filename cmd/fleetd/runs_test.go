package main

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/fleet/fleettest"
	"github.com/qafleet/fleetd/trajectory"
)

func TestRunsListAndShow(t *testing.T) {
	dataDir := t.TempDir()
	reg := fleet.NewRegistry()
	tool, _ := fleettest.Tool("qa_compile", fleet.Observe, func(context.Context, json.RawMessage) (fleet.Result, error) {
		return fleet.OK(map[string]any{"outcome": "crashed", "exit_code": 2}), nil
	})
	reg.Add(tool)
	w, err := trajectory.Create(dataDir, "r-20261122-040000-abc123", trajectory.Header{RunID: "r-20261122-040000-abc123", Specialist: "fuzz", Goal: "fuzz it"})
	if err != nil {
		t.Fatal(err)
	}
	model := &fleettest.Script{Steps: []any{fleettest.Calls("qa_compile", map[string]any{"source": "x"}), fleet.Step{Done: true, Summary: "found a crash"}}}
	if _, err := fleet.Run(context.Background(), fleet.LoopConfig{RunID: "r-20261122-040000-abc123", Specialist: "fuzz", Model: model, Tools: reg, Dial: fleettest.Dial(fleet.Observe), Meter: &fleettest.Meter{}, Record: w}); err != nil {
		t.Fatal(err)
	}
	// A crashed run: a header and no footer.
	w2, _ := trajectory.Create(dataDir, "r-crashed", trajectory.Header{RunID: "r-crashed", Specialist: "smoke"})
	_ = w2 // never closed: simulates a crash
	out, stderr, code := run(t, "", "runs", "--data-dir", dataDir)
	if code != 0 {
		t.Fatal(stderr)
	}
	if !strings.Contains(out, "r-20261122-040000-abc123") || !strings.Contains(out, "done") || !strings.Contains(out, "crashed") {
		t.Errorf("runs:\n%s", out)
	}
	out, stderr, code = run(t, "", "runs", "show", "r-20261122-040000-abc123", "--data-dir", dataDir)
	if code != 0 {
		t.Fatal(stderr)
	}
	for _, want := range []string{"specialist fuzz", "qa_compile", "outcome=crashed", "DONE: found a crash", "tool calls 1"} {
		if !strings.Contains(out, want) {
			t.Errorf("timeline lacks %q:\n%s", want, out)
		}
	}
	if _, stderr, code := run(t, "", "runs", "show", "r-nope", "--data-dir", dataDir); code == 0 || !strings.Contains(stderr, `no run "r-nope"`) {
		t.Errorf("missing run: %d %s", code, stderr)
	}
	raw, _, _ := run(t, "", "runs", "show", "r-20261122-040000-abc123", "--raw", "--data-dir", dataDir)
	file, _ := os.ReadFile(trajectory.Path(dataDir, "r-20261122-040000-abc123"))
	if raw != string(file) {
		t.Errorf("--raw does not reproduce the record byte for byte")
	}
}

// TestRunsShowDegraded: a run whose fuzz engine could not build says so
// under its outcome, with the cause.
func TestRunsShowDegraded(t *testing.T) {
	dataDir := t.TempDir()
	reg := fleet.NewRegistry()
	tool, _ := fleettest.Tool("qa_fuzz", fleet.Observe, func(context.Context, json.RawMessage) (fleet.Result, error) {
		return fleet.OK(map[string]any{"engine": "go", "execs": 10, fleet.ResultDegraded: map[string]any{
			"component": "libfuzzer engine", "fallback": "go test -fuzz", "cause": "on FuzzParse: parse_test.go:9:2: undefined: seeds"}}), nil
	})
	reg.Add(tool)
	const id = "r-20261206-020000-deg001"
	w, err := trajectory.Create(dataDir, id, trajectory.Header{RunID: id, Specialist: "fuzz", Goal: "fuzz it"})
	if err != nil {
		t.Fatal(err)
	}
	model := &fleettest.Script{Steps: []any{fleettest.Calls("qa_fuzz", map[string]any{}), fleet.Step{Done: true, Summary: "fuzzed"}}}
	if _, err := fleet.Run(context.Background(), fleet.LoopConfig{RunID: id, Specialist: "fuzz", Model: model, Tools: reg, Dial: fleettest.Dial(fleet.Observe), Meter: &fleettest.Meter{}, Record: w}); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := run(t, "", "runs", "show", id, "--data-dir", dataDir)
	want := "DEGRADED: libfuzzer engine degraded: on FuzzParse: parse_test.go:9:2: undefined: seeds; go test -fuzz ran instead"
	if code != 0 || !strings.Contains(out, want) {
		t.Errorf("runs show (%d %s) lacks %q:\n%s", code, stderr, want, out)
	}
}
