package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/qafleet/fleetd/fixer"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/trajectory"
	"github.com/qafleet/fleetd/triage"
	"github.com/qafleet/fleetd/triggers"
)

// fixName is the runner's name for a fix pass (no persona may take it).
const fixName = "fix"

// fixRetryAfter is how long the daemon leaves a work item alone after a
// job on it ended without a PR (it failed, passes on base, was capped).
const fixRetryAfter = 6 * time.Hour

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
// highest-ranked work item that has no PR in flight, within the caps.
// Work items come from the report the daemon's triage keeps current.
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
	polled, perr := st.f.Poll(ctx, filepath.Join(d.a.fixerDir(), "poll"))
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
	recs, err := st.f.Records()
	if err != nil {
		out.Outcome, out.Summary = trajectory.OutcomeHarnessError, err.Error()
		return out, err
	}
	cooldown := d.a.cfg.Fixer.Cooldown
	if cooldown <= 0 {
		cooldown = fixer.DefaultCooldown
	}
	wi, ok := nextWorkItem(triage.WorkItems(rep), recs, st.repo, cooldown, time.Now())
	if !ok {
		out.Summary = "no work item to take"
		return out, nil
	}
	it := d.a.itemOf(ctx, d.env, wi)
	d.say(fixName, "taking %s: %s %s %q", it.ID, it.Severity, it.Surface, clip(sanitize(it.Title), 80))
	j, err := d.a.runFixJob(ctx, d.env, st, it, false)
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

// nextWorkItem picks the highest-ranked work item the repository owns
// that has no PR in flight (open, merged awaiting its re-check, closed
// within cooldown), was not answered with needs-repro since its newest
// entry, and was not tried in the last fixRetryAfter.
func nextWorkItem(items []triage.WorkItem, recs []fixer.Record, repo fleet.Repo, cooldown time.Duration, now time.Time) (triage.WorkItem, bool) {
	byFP := map[string]fixer.Record{}
	for _, r := range recs {
		byFP[r.Fingerprint] = r
	}
	for _, wi := range items {
		if !repo.Owns(wi.Surface) {
			continue
		}
		r, seen := byFP[wi.ID]
		if !seen {
			return wi, true
		}
		latest := uint64(0)
		for _, e := range wi.Entries {
			latest = max(latest, e)
		}
		switch {
		case r.Active(): // its PR is open: `fleetd fix` updates it on demand
		case r.State == fixer.StateMerged && r.Recheck != fixer.RecheckResolved:
		case r.State == fixer.StateClosed && now.Sub(r.ClosedAt) < cooldown:
		case r.NeedsRepro != nil && *r.NeedsRepro >= latest:
		case !r.LastRunAt.IsZero() && now.Sub(r.LastRunAt) < fixRetryAfter:
		default:
			return wi, true
		}
	}
	return triage.WorkItem{}, false
}
