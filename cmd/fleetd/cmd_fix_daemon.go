package main

import (
	"context"
	"fmt"
	"time"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/trajectory"
	"github.com/qafleet/fleetd/triage"
	"github.com/qafleet/fleetd/triggers"
)

// fixName is the runner's name for a fix pass (no persona may take it).
const fixName = "fix"

// fixSpecs is the fix pass's schedule: every fixer.every, when a forge is
// configured.
func (d *daemon) fixSpecs() []triggers.Spec {
	if d.a.cfg.Forge.Kind == "" {
		return nil
	}
	every := d.a.cfg.Fixer.Every
	if every <= 0 {
		every = 10 * time.Minute
	}
	return []triggers.Spec{{Specialist: fixName, Every: every}}
}

// fixPass is the daemon's fix stage, only at dial propose: poll the open
// PRs (re-check merged ones, post resolutions), then run one job on the
// work item pipeline.Fix.Next picks, within the caps. Work items come from
// the report the daemon's triage keeps current.
func (d *daemon) fixPass(ctx context.Context) (out fleet.RunResult, err error) {
	start := time.Now()
	out = fleet.RunResult{RunID: fixName, Outcome: trajectory.OutcomeDone}
	defer func() { out.Totals.DurationMS = time.Since(start).Milliseconds() }()
	if dial, _ := d.env.control.Dial(); dial < fleet.Propose {
		out.Summary = "dial is " + dial.String() + ": the fix stage runs at propose"
		return out, nil
	}
	st, err := d.a.newFixStage(ctx, d.env, d.opts.logger)
	if err != nil {
		out.Outcome, out.Summary = trajectory.OutcomeHarnessError, err.Error()
		return out, err
	}
	polled, perr := st.Poll(ctx)
	for _, p := range polled {
		if p.From != p.To || p.Recheck != "" {
			d.say(fixName, "PR %d (%s): %s -> %s %s", p.Number, p.Fingerprint, p.From, p.To, p.Recheck)
		}
	}
	if perr != nil {
		d.log.Warn("fix: poll", "err", perr)
	}
	rep, err := triage.LoadReport(d.a.reportsDir())
	if err != nil {
		out.Summary = "no triage report yet"
		return out, nil
	}
	wi, ok, err := st.Next(triage.WorkItems(rep), time.Now())
	if err != nil {
		out.Outcome, out.Summary = trajectory.OutcomeHarnessError, err.Error()
		return out, err
	}
	if !ok {
		out.Summary = "no work item to take"
		return out, nil
	}
	it := st.Item(ctx, wi)
	d.say(fixName, "taking %s: %s %s %q", it.ID, it.Severity, it.Surface, clip(sanitize(it.Title), 80))
	j, err := st.Run(ctx, it, false)
	if j != nil {
		line := j.Outcome
		if j.PR != nil {
			line += fmt.Sprintf(": PR #%d %s %s", j.PR.Number, j.PR.State, j.PR.URL)
		}
		d.say(fixName, "%s %s", it.ID, line)
		out.Summary = it.ID + " " + line
	}
	if err != nil {
		out.Outcome = trajectory.OutcomeHarnessError
		return out, err
	}
	return out, nil
}
