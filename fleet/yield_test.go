package fleet_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/fleet/fleettest"
	"github.com/qafleet/fleetd/trajectory"
)

// TestRunnerYieldEndsTheRunAtItsNextBoundary: a run asked to give its slot
// up finishes the tool call in flight (a fuzz session is not cut: its
// context is not cancelled), then ends cancelled at the loop's next
// boundary, saying it yielded, with its cleanup run; asking when nothing
// runs is a no.
func TestRunnerYieldEndsTheRunAtItsNextBoundary(t *testing.T) {
	e := newEnv(t)
	inTool, release := make(chan struct{}), make(chan struct{})
	var toolErr error
	tool, _ := fleettest.Tool("qa_session", fleet.Observe, func(ctx context.Context, _ json.RawMessage) (fleet.Result, error) {
		close(inTool)
		<-release
		toolErr = ctx.Err()
		return fleet.OK(nil), nil
	})
	if err := e.reg.Add(tool); err != nil {
		t.Fatal(err)
	}
	model := &fleettest.Script{Steps: []any{
		fleettest.Calls("qa_session", map[string]any{}),
		fleettest.Calls("qa_ok", map[string]any{}),
		fleettest.Calls("qa_ok", map[string]any{}),
	}}
	var rec *trajectory.Run
	r := fleet.NewRunner(fleet.RunnerConfig{Run: func(ctx context.Context, _, _ string) (fleet.RunResult, error) {
		res, rc := e.run(ctx, model, nil)
		rec = rc
		return res, nil
	}})
	if r.Yield("fuzz") {
		t.Error("Yield asked a run that is not going")
	}
	done, err := r.Start("fuzz", "continuous")
	if err != nil {
		t.Fatal(err)
	}
	<-inTool
	if !r.Yield("fuzz") {
		t.Error("Yield did not ask the running run")
	}
	close(release)
	d := <-done
	if d.Result.Outcome != trajectory.OutcomeCancelled || !strings.Contains(d.Result.Summary, fleet.ErrYielded.Error()) {
		t.Errorf("yielded run: %s (%s)", d.Result.Outcome, d.Result.Summary)
	}
	if n := len(turns(rec)); n != 1 || toolErr != nil || e.cleanups.Load() != 1 {
		t.Errorf("%d turns, the session's context ended %v, %d cleanups; want 1 turn, a session left to finish, 1 cleanup", n, toolErr, e.cleanups.Load())
	}
	if r.Yield("fuzz") {
		t.Error("Yield asked a run that ended")
	}
}
