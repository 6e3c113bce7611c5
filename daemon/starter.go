package daemon

import (
	"context"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/triggers"
)

// Starter adapts the runner to the triggers' Starter. While the chain node
// is down nothing starts: a run would fail on fleetd's own network and a
// finding about that would be noise.
type Starter struct {
	Runner *fleet.Runner
	Node   *Node // nil: never gated
}

// Start asks the runner to start specialist. The runner's refusals wrap its
// sentinels, which are the triggers' ErrRunning and ErrAtCap; it checks
// pause and budget first, so a busy refusal is never one a paused or spent
// fleet would drop at its retry. The outcome counts only the findings the
// run posted or queued as new, not the ones the reporter deduplicated.
func (s Starter) Start(ctx context.Context, specialist, reason string) (<-chan triggers.Outcome, error) {
	var done <-chan fleet.RunDone
	start := func() (err error) {
		done, err = s.Runner.Start(specialist, reason)
		return err
	}
	var err error
	if s.Node != nil {
		err = s.Node.WhileUp(start) // a run the node's going down did not see is started before it is seen
	} else {
		err = start()
	}
	if err != nil {
		return nil, err
	}
	out := make(chan triggers.Outcome, 1)
	go func() {
		rd := <-done
		n, _ := FindingCounts(rd.Result)
		out <- triggers.Outcome{NewFindings: n, Err: rd.Err}
		close(out)
	}()
	return out, nil
}

// Yield asks specialist's run to give its slot up at its next session
// boundary (triggers.Yielder: a continuous run when another specialist's
// start waits for a slot).
func (s Starter) Yield(specialist string) bool { return s.Runner.Yield(specialist) }

var _ triggers.Yielder = Starter{}

// FindingCounts splits a run's findings into new ones and the ones the
// reporter deduplicated (already on the log within its window): a repeat
// run files the same findings again, and only the new ones are news.
func FindingCounts(r fleet.RunResult) (fresh, deduped int) {
	for _, f := range r.Findings {
		if f["status"] == "deduped" {
			deduped++
		}
	}
	return max(r.Totals.Findings-deduped, 0), deduped
}

// SpecsOf is the personas' schedules as the triggers take them.
func SpecsOf(ps []fleet.Persona) []triggers.Spec {
	out := make([]triggers.Spec, 0, len(ps))
	for _, p := range ps {
		t := p.Trigger
		out = append(out, triggers.Spec{Specialist: p.Name, Cron: t.Cron, Every: t.Every, Continuous: t.Continuous, Events: t.Events})
	}
	return out
}
