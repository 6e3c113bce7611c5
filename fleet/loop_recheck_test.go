package fleet_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/fleet/fleettest"
	"github.com/qafleet/fleetd/trajectory"
)

// TestLoopRechecksAfterModel: whatever stopped the run while the model was
// thinking (the kill switch, the deadline, cancellation) stops its call from
// running; the call is recorded as proposed and refused, never executed.
func TestLoopRechecksAfterModel(t *testing.T) {
	type flip struct {
		paused, expired bool
		cancel          bool
	}
	tests := []struct {
		name    string
		flip    flip
		outcome trajectory.Outcome
		reason  string
	}{
		{"kill switch", flip{paused: true}, trajectory.OutcomeCancelled, "cancelled: the kill switch is on (fleetd pause)"},
		{"deadline", flip{expired: true}, trajectory.OutcomeDeadlineExceeded, "budget exhausted: run deadline of 0s passed"},
		{"cancelled", flip{cancel: true}, trajectory.OutcomeCancelled, "cancelled: context canceled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			paused := false
			meter := &fleettest.Meter{}
			model := &fleettest.Script{Steps: []any{
				fleettest.Calls("qa_ok", map[string]any{}),
				func(*fleet.State) (fleet.Step, error) {
					// The world changes while the model decides.
					paused, meter.Expired = tt.flip.paused, tt.flip.expired
					if tt.flip.cancel {
						cancel()
					}
					return fleettest.Calls("qa_ok", map[string]any{}), nil
				},
			}}
			var events []fleet.TurnEvent
			res, rec := e.run(ctx, model, func(c *fleet.LoopConfig) {
				c.Paused = func() (bool, error) { return paused, nil }
				c.Meter = meter
				c.Narrate = func(ev fleet.TurnEvent) { events = append(events, ev) }
			})
			if res.Outcome != tt.outcome || res.Summary != tt.reason {
				t.Errorf("run ended %s (%q), want %s (%q)", res.Outcome, res.Summary, tt.outcome, tt.reason)
			}
			if got := *e.calls["qa_ok"]; got != 1 {
				t.Errorf("qa_ok ran %d times, want 1: the second call must not run", got)
			}
			ts := turns(rec)
			if len(ts) != 2 {
				t.Fatalf("%d turns recorded, want 2", len(ts))
			}
			last := ts[1]
			want := trajectory.Validation{Result: trajectory.ValidationRefused, Reason: tt.reason}
			if diff := cmp.Diff(want, last.Validation); diff != "" {
				t.Errorf("last turn validation (-want +got):\n%s", diff)
			}
			if last.ProposedAction == nil || last.ProposedAction.Tool != "qa_ok" || last.ExecutedAction != nil {
				t.Errorf("last turn: proposed %+v executed %+v, want qa_ok proposed and nothing executed", last.ProposedAction, last.ExecutedAction)
			}
			if n := len(events); n != 2 || events[1].Verdict != fleet.VerdictRefused || events[1].Error != tt.reason || events[1].Result.Err() != tt.reason {
				t.Errorf("narrated %+v, want the refusal last", events)
			}
			if rec.Footer.Totals.Refusals != 0 || rec.Footer.Totals.ToolCalls != 1 {
				t.Errorf("totals %+v: a call stopped by the run's end is neither a dial refusal nor a tool call", rec.Footer.Totals)
			}
		})
	}
}
