package fleet_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/fleet/fleettest"
	"github.com/qafleet/fleetd/trajectory"
)

// enderScript is a Script whose end-of-run calls undo its writes: one
// qa_undo call, then done with a summary that says how it went.
type enderScript struct {
	fleettest.Script
	endings []string // Ending and EndedAt as End saw them
}

func (m *enderScript) End(_ context.Context, s *fleet.State) (fleet.Step, error) {
	m.endings = append(m.endings, s.Ending)
	if len(s.History) == s.EndedAt {
		return fleettest.Calls("qa_undo", map[string]any{}), nil
	}
	last, _ := s.Last()
	return fleet.Step{Done: true, Summary: "the undo was " + string(last.Verdict)}, nil
}

// TestLoopRunsTheEndersEndCalls: a run that ends before its model is done
// (the budget spent by a call, a tool's infrastructure error, the kill
// switch) still makes its model's end-of-run calls: qa_undo runs (with
// the kill switch on it is refused without running), it is recorded as a
// turn after the last one, the run's outcome stays what ended it and its
// summary adds the model's end summary. A run the model ended itself, or
// whose model failed, makes none.
func TestLoopRunsTheEndersEndCalls(t *testing.T) {
	e := newEnv(t)
	undos := 0
	tool, _ := fleettest.Tool("qa_undo", fleet.Observe, func(context.Context, json.RawMessage) (fleet.Result, error) {
		undos++
		return fleet.OK(nil), nil
	})
	broken, _ := fleettest.Tool("qa_broken", fleet.Observe, func(context.Context, json.RawMessage) (fleet.Result, error) {
		return nil, errors.New("the tool's connection broke")
	})
	for _, tl := range []fleet.Tool{tool, broken} {
		if err := e.reg.Add(tl); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name    string
		steps   []any
		paused  bool
		outcome trajectory.Outcome
		undos   int
		summary string // the summary's end; "" for no end calls
	}{
		{"the budget", []any{fleettest.Calls("qa_ok", map[string]any{}), fleettest.Calls("qa_budget", map[string]any{})}, false, trajectory.OutcomeBudgetExhausted, 1, "; at the run's end: the undo was ok"},
		{"a tool's error", []any{fleettest.Calls("qa_broken", map[string]any{})}, false, trajectory.OutcomeHarnessError, 1, "; at the run's end: the undo was ok"},
		{"the kill switch", []any{fleettest.Calls("qa_ok", map[string]any{}), fleettest.Calls("qa_ok", map[string]any{})}, true, trajectory.OutcomeCancelled, 0, "; at the run's end: the undo was refused"},
		{"done", []any{fleettest.Calls("qa_ok", map[string]any{})}, false, trajectory.OutcomeDone, 0, ""},
		{"the model failed", []any{fleettest.Calls("qa_ok", map[string]any{}), errors.New("the model's API is down")}, false, trajectory.OutcomeHarnessError, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			undos = 0
			m := &enderScript{Script: fleettest.Script{Steps: tc.steps}}
			res, rec := e.run(context.Background(), m, func(c *fleet.LoopConfig) {
				if tc.paused {
					c.Paused = func() (bool, error) { return len(m.States) > 1, nil }
				}
			})
			turns := rec.Turns()
			if res.Outcome != tc.outcome || undos != tc.undos {
				t.Errorf("outcome %s, qa_undo ran %d times; want %s and %d", res.Outcome, undos, tc.outcome, tc.undos)
			}
			if tc.summary == "" {
				if len(m.endings) != 0 || strings.Contains(rec.Footer.FinalSummary, "at the run's end") {
					t.Errorf("end calls after a run that needs none: endings %q, summary %q", m.endings, rec.Footer.FinalSummary)
				}
				return
			}
			if !strings.HasSuffix(rec.Footer.FinalSummary, tc.summary) || len(m.endings) != 2 || m.endings[0] == "" {
				t.Errorf("footer summary %q (want it to end %q), endings %q", rec.Footer.FinalSummary, tc.summary, m.endings)
			}
			last := turns[len(turns)-1]
			obs, _ := last.Observation.(json.RawMessage)
			if last.ProposedAction == nil || last.ProposedAction.Tool != "qa_undo" || last.Index != turns[len(turns)-2].Index+1 || !strings.Contains(string(obs), `"ending":`) {
				t.Errorf("the end call's turn: %+v", last)
			}
		})
	}
}
