package trajectory_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/qafleet/fleetd/trajectory"
)

func Example() {
	dataDir, _ := os.MkdirTemp("", "fleetd")
	defer os.RemoveAll(dataDir)
	start := time.Date(2026, 11, 22, 4, 12, 0, 0, time.UTC)

	w, err := trajectory.Create(dataDir, "r-20261122-0412", trajectory.Header{
		Specialist: "qa-smoke",
		Goal:       "compile a known-good source",
		Dial:       "observe",
		Tools:      []trajectory.ToolInfo{{Name: "qa_compile", Rung: "observe"}},
		StartedAt:  start,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	// The runtime registers the keys it hands out, so they never reach the record.
	w.AddSecret("0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318")

	args := json.RawMessage(`{"source":"fn main() {}"}`)
	err = w.WriteTurn(trajectory.Turn{
		Index:          0,
		Observation:    "signer 4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318 funded",
		ProposedAction: &trajectory.Action{Tool: "qa_compile", Args: args},
		Validation:     trajectory.Validation{Result: trajectory.ValidationOK},
		ExecutedAction: &trajectory.Action{Tool: "qa_compile", Args: args},
		Result:         map[string]any{"ok": true, "outcome": "compiled", "latency_ms": 41},
		LatencyMS:      45,
		StartedAt:      start.Add(time.Second),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := w.Close(trajectory.Footer{Outcome: trajectory.OutcomeDone, FinalSummary: "compiled", EndedAt: start.Add(2 * time.Second)}); err != nil {
		fmt.Println(err)
		return
	}

	r, err := trajectory.Open(w.Path())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close()
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			fmt.Println(err)
			return
		}
		switch rec := rec.(type) {
		case trajectory.Header:
			fmt.Println("header", rec.RunID, rec.Specialist)
		case trajectory.Turn:
			fmt.Printf("turn %d %s %s -> %s\n", rec.Index, rec.ExecutedAction.Tool, rec.Observation, rec.Result)
		case trajectory.Footer:
			fmt.Println("footer", rec.Outcome, rec.Totals.Turns, "turn(s) in", rec.Totals.DurationMS, "ms")
		}
	}
	// Output:
	// header r-20261122-0412 qa-smoke
	// turn 0 qa_compile "signer [REDACTED:registered] funded" -> {"latency_ms":41,"ok":true,"outcome":"compiled"}
	// footer done 1 turn(s) in 2000 ms
}
