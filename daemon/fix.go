package daemon

import (
	"context"
	"fmt"
	"time"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/trajectory"
	"github.com/qafleet/fleetd/triage"
	"github.com/qafleet/fleetd/triggers"
)

// FixName is the runner's name for a fix pass (no persona may take it).
const FixName = "fix"

// fixSpecs is the fix pass's schedule: every fixer.every, when a forge is
// configured.
func fixSpecs(c Config) []triggers.Spec {
	if !c.Fix {
		return nil
	}
	every := c.FixEvery
	if every <= 0 {
		every = 10 * time.Minute
	}
	return []triggers.Spec{{Specialist: FixName, Every: every}}
}

// fixPass is the daemon's fix stage, only at dial propose: the fix
// pipeline's pass (pipeline.Fix.Pass) over the report the daemon's triage
// keeps current, narrated on the daemon's output.
func (d *Daemon) fixPass(ctx context.Context, snap *Snapshot) (out fleet.RunResult, err error) {
	start := time.Now()
	out = fleet.RunResult{RunID: FixName, Outcome: trajectory.OutcomeDone}
	defer func() { out.Totals.DurationMS = time.Since(start).Milliseconds() }()
	if dial, _ := d.env.Control.Dial(); dial < fleet.Propose {
		out.Summary = "dial is " + dial.String() + ": the fix stage runs at propose"
		return out, nil
	}
	st, err := snap.Work.FixStage(ctx, d.env, d.opts.Logger)
	if err != nil {
		out.Outcome, out.Summary = trajectory.OutcomeHarnessError, err.Error()
		return out, err
	}
	rep, err := triage.LoadReport(snap.Config.ReportsDir)
	if err != nil {
		out.Summary = "no triage report yet"
		return out, nil
	}
	say := func(format string, args ...any) {
		d.say(FixName, "%s", Clip(Sanitize(fmt.Sprintf(format, args...)), 200))
	}
	res, err := st.Pass(ctx, rep, time.Now(), say)
	out.Summary = res.Summary
	if err != nil {
		out.Outcome = trajectory.OutcomeHarnessError
		if out.Summary == "" {
			out.Summary = err.Error()
		}
		return out, err
	}
	return out, nil
}
