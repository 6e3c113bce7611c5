package specialists

import (
	"context"
	"testing"

	"github.com/qafleet/fleetd/fleet"
)

// BenchmarkSecurityReplay is the last turn of a full security run against
// the evaluation platform (about 260 recorded calls): a playbook replays
// its whole history on every turn, so this is the planner's worst per-turn
// cost in such a run.
func BenchmarkSecurityReplay(b *testing.B) {
	w := newEvalWorld(b)
	var findings []map[string]any
	reg := w.tools("r-bench", &findings)
	m := mustNewB(b, "security")
	ctl := fleetDial(fleet.Exercise)
	st := fleet.State{RunID: "r-bench", Target: w.target, Tools: reg.List()}
	ctx := context.Background()
	for range 400 {
		step, err := m.Next(ctx, &st)
		if err != nil {
			b.Fatal(err)
		}
		if step.Done {
			break
		}
		out, err := reg.Dispatch(ctx, ctl, step.Call.Tool, step.Call.Args)
		if err != nil {
			b.Fatal(err)
		}
		st.History = append(st.History, fleet.Exchange{Call: *step.Call, Verdict: out.Verdict, Result: out.Result})
	}
	b.ReportMetric(float64(len(st.History)), "calls")
	b.ReportAllocs()
	for b.Loop() {
		if step, err := m.Next(ctx, &st); err != nil || !step.Done {
			b.Fatalf("not done: %v %v", step, err)
		}
	}
}

func mustNewB(b *testing.B, name string) fleet.Model {
	m, err := New(name, Options{})
	if err != nil {
		b.Fatal(err)
	}
	return m
}

type fleetDial fleet.Dial

func (d fleetDial) Dial() (fleet.Dial, error) { return fleet.Dial(d), nil }
