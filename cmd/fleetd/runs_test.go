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

// TestRunsShowFuzzTurn: a qa_fuzz turn reads as the session's figures.
func TestRunsShowFuzzTurn(t *testing.T) {
	res := json.RawMessage(`{"ok":true,"engine":"libfuzzer","execs":64000,"elapsed_ms":20000,"execs_per_sec":3200,"execs_per_cpu_sec":3350,"coverage":812,"features":2400,"corpus_size":57,"started_from":50,
		"crashers":[{"crash_state":"panic: a"},{"crash_state":"panic: a"}],"new_coverage":false,"plateau_sessions":3}`)
	line := turnLine(trajectory.Turn{Index: 4, ProposedAction: &trajectory.Action{Tool: "qa_fuzz"}, Validation: trajectory.Validation{Result: trajectory.ValidationOK}, Result: res})
	for _, want := range []string{"qa_fuzz", "engine=libfuzzer", "inputs=64000", "3200/s", "3350/CPU-s", "coverage=812", "features=2400", "corpus=57", "crashers=2 states=1", "plateau 3 sessions"} {
		if !strings.Contains(line, want) {
			t.Errorf("line lacks %q: %s", want, line)
		}
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

// TestRunsShowGeneratedHarness: a generated harness's session names the
// harness; the list turn counts the generated, dropped and crashed ones;
// a judged replay says its verdict.
func TestRunsShowGeneratedHarness(t *testing.T) {
	for _, tc := range []struct {
		res  string
		want []string
	}{
		{`{"ok":true,"harness":"FuzzGet","engine":"libfuzzer","execs":900,"coverage":647,"crashers":[],"new_coverage":true}`, []string{"harness=FuzzGet", "engine=libfuzzer", "inputs=900", "coverage=647", "new coverage"}},
		{`{"ok":true,"module":"github.com/tidwall/gjson","harnesses":[{"target":"FuzzGet"},{"target":"FuzzValid"}],"dropped":[{"entry":"x"}],"harness_crashes":2}`, []string{"generated=2 dropped=1 harness_crashes=2"}},
		{`{"ok":true,"harness":"FuzzGet","outcome":"crashed","verdict":"library"}`, []string{"verdict=library"}},
	} {
		line := turnLine(trajectory.Turn{Index: 2, ProposedAction: &trajectory.Action{Tool: "qa_fuzz"}, Validation: trajectory.Validation{Result: trajectory.ValidationOK}, Result: json.RawMessage(tc.res)})
		for _, w := range tc.want {
			if !strings.Contains(line, w) {
				t.Errorf("line lacks %q: %s", w, line)
			}
		}
	}
}
