package pipeline

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/qafleet/fleetd/clip"
	"github.com/qafleet/fleetd/fixer"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/triage"
)

// PassResult is what one fix pass did: Took is the work item it ran a job
// on ("" when none), Summary a line for the run list.
type PassResult struct {
	Took    string
	Summary string
}

// Pass is the daemon's fix pass at dial propose: poll the open PRs
// (re-check merged ones, post resolutions), then run one job on the work
// item Next picks from the report, within the caps. say narrates what
// changed and what is taken; a nil say is silent. A poll error is
// narrated and does not stop the pass; the error is a job's or the
// records'.
func (p *Fix) Pass(ctx context.Context, report fleet.Report, now time.Time, say func(format string, args ...any)) (PassResult, error) {
	if say == nil {
		say = func(string, ...any) {}
	}
	polled, perr := p.Poll(ctx)
	for _, r := range polled {
		if r.From != r.To || r.Recheck != "" {
			say("PR %d (%s): %s -> %s %s", r.Number, r.Fingerprint, r.From, r.To, r.Recheck)
		}
	}
	if perr != nil {
		say("polling the open PRs: %v", perr)
	}
	wi, ok, err := p.Next(triage.WorkItems(report), now)
	if err != nil {
		return PassResult{}, err
	}
	if !ok {
		return PassResult{Summary: "no work item to take"}, nil
	}
	it := p.Item(ctx, wi)
	say("taking %s: %s %s %q", it.ID, it.Severity, it.Surface, it.Title)
	j, err := p.Run(ctx, it, false)
	res := PassResult{Took: it.ID}
	if j != nil {
		line := jobLine(j)
		say("%s %s", it.ID, line)
		res.Summary = it.ID + " " + line
	}
	return res, err
}

// jobLine is a job's line in the run list: its outcome, its PR, its error
// and what its replay left on the platform (the error says it when the
// replay erred).
func jobLine(j *fixer.Job) string {
	line := j.Outcome
	if j.PR != nil {
		line += fmt.Sprintf(": PR #%d %s %s", j.PR.Number, j.PR.State, j.PR.URL)
	}
	if j.Error != "" {
		line += ": " + clip.Text(j.Error, 600)
	} else if j.Repro != nil && len(j.Repro.LeftOnPlatform) > 0 {
		line += "; the replay left on the platform: " + clip.Text(strings.Join(j.Repro.LeftOnPlatform, "; "), 400)
	}
	return line
}
