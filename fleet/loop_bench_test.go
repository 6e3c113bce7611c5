package fleet_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/fleet/fleettest"
	"github.com/qafleet/fleetd/trajectory"
)

// loopModel calls qa_nop n times, then is done. It does no work of its own,
// so the loop's cost is what remains.
type loopModel struct{ n int }

var nopArgs = json.RawMessage(`{"source":"let x = 1;"}`)

func (m *loopModel) Next(_ context.Context, s *fleet.State) (fleet.Step, error) {
	if s.Turn >= m.n {
		return fleet.Step{Done: true, Summary: "done"}, nil
	}
	return fleet.Step{Call: &fleet.Call{Tool: "qa_nop", Args: nopArgs}, Usage: fleet.Usage{TokensIn: 100, TokensOut: 20}}, nil
}

// BenchmarkLoopTurn measures one turn of the agent loop excluding the tool
// (the tool returns a small fixed result at once): the boundary checks, the
// dial read from disk, dispatch with schema validation, budget accounting
// and the turn's run record, written to a real file. Reported per turn.
func BenchmarkLoopTurn(b *testing.B) {
	const turns = 200
	reg := fleet.NewRegistry()
	type args struct {
		Source string `json:"source" maxlen:"1048576"`
	}
	result := map[string]any{"outcome": "compiled", "exit_code": 0, "bytes": 42, "sha256": "5c1e0a9d5c1e0a9d5c1e0a9d5c1e0a9d5c1e0a9d5c1e0a9d5c1e0a9d5c1e0a9d"}
	reg.Add(fleet.NewTool("qa_nop", "no-op", fleet.Observe, func(context.Context, args) (fleet.Result, error) {
		return fleet.OK(result), nil
	}))
	dir := b.TempDir()
	ctl := fleet.NewControl(dir) // the real dial source: a file read per call
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		n++
		id := fmt.Sprintf("r-%d", n)
		w, err := trajectory.Create(dir, id, trajectory.Header{RunID: id, Specialist: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		res, err := fleet.Run(context.Background(), fleet.LoopConfig{
			RunID: id, Specialist: "bench", Model: &loopModel{n: turns}, Tools: reg, Dial: ctl,
			Paused: ctl.Paused, Meter: &fleettest.Meter{}, Record: w,
		})
		if err != nil || res.Outcome != trajectory.OutcomeDone || res.Totals.Turns != turns+1 {
			b.Fatalf("%v %+v", err, res)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(n*turns), "µs/turn")
}
