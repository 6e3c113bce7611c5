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

// TestLoopListsWhatCallsLeft: what the calls' results list as left on
// the platform (fleet.ResultLeftOnPlatform) is gathered once each into
// the run's result, and the footer's summary lists what the model's own
// summary does not say: all of it when a call ends the run (here the
// budget, spent after the call wrote), none when the model already did.
func TestLoopListsWhatCallsLeft(t *testing.T) {
	e := newEnv(t)
	calls := 0
	tool, _ := fleettest.Tool("qa_writes", fleet.Observe, func(context.Context, json.RawMessage) (fleet.Result, error) {
		calls++
		r := fleet.OK(map[string]any{fleet.ResultLeftOnPlatform: []string{"the account of identity a"}})
		if calls%2 == 0 {
			r = fleet.Fail("qa_writes: budget exhausted")
			r[fleet.ResultLeftOnPlatform] = []any{"the account of identity a", "the field role of /api/me"}
			return r, &fleet.BudgetError{Resource: fleet.ResWrites, Limit: 2, Used: 2, Want: 1}
		}
		return r, nil
	})
	if err := e.reg.Add(tool); err != nil {
		t.Fatal(err)
	}
	res, rec := e.run(context.Background(), &fleettest.Script{Steps: []any{
		fleettest.Calls("qa_writes", map[string]any{}),
		fleettest.Calls("qa_writes", map[string]any{}),
	}}, nil)
	want := "; left on the platform by its calls: the account of identity a; the field role of /api/me"
	if res.Outcome != trajectory.OutcomeBudgetExhausted || len(res.Left) != 2 || !strings.HasSuffix(rec.Footer.FinalSummary, want) {
		t.Errorf("outcome %s, left %q, footer summary %q: want budget_exhausted and the summary ending %q", res.Outcome, res.Left, rec.Footer.FinalSummary, want)
	}
	// The model's summary says it already: nothing added.
	said := "done. Left on the platform: the account of identity a"
	res, rec = e.run(context.Background(), &fleettest.Script{Steps: []any{
		fleettest.Calls("qa_writes", map[string]any{}),
		fleet.Step{Done: true, Summary: said},
	}}, nil)
	if res.Outcome != trajectory.OutcomeDone || len(res.Left) != 1 || rec.Footer.FinalSummary != said {
		t.Errorf("outcome %s, left %q, footer summary %q, want the model's summary as it was", res.Outcome, res.Left, rec.Footer.FinalSummary)
	}
}
