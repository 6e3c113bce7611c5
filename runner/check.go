package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/qatools"
	"github.com/qafleet/fleetd/trajectory"
	"github.com/qafleet/fleetd/triage"
)

// The checks a config cannot run (`fleetd check` exits 2 on them).
var (
	ErrCheckNoLog    = errors.New("check compares with the feedback log: set chain.feedback_log in the config")
	ErrCheckNoPoster = errors.New("check --post posts as the fleet identity: set chain.fleet_key_file in the config")
)

// CheckOptions are one `fleetd check`.
type CheckOptions struct {
	Specialists []fleet.Persona // each run once, in this order
	// Triage is the engine's config, the trusted senders included.
	Triage triage.Config
	// Identity is the fleet identity, the sender the check's findings are
	// compared as; nil: the first trusted sender.
	Identity *chain.Key
	Floor    fleet.Severity // a new or regressed finding at least this severe fails; "": never
	Post     bool           // forward the findings to the log through env.Poster
	Logger   *slog.Logger
	Progress io.Writer // each specialist as it starts and each turn
}

// CheckRun is a check's result and the comparison it came from (the
// check's clusters, for SARIF).
type CheckRun struct {
	triage.CheckResult
	Comparison triage.Comparison
}

// Check runs each specialist once (Run, under the stored dial) with the
// findings collected rather than posted (qatools.Collector; forwarded to
// the log too with o.Post), triages the log as it stood before (a fresh
// engine, so a daemon holding the triage store is no obstacle) and puts
// every finding into the cluster triage would put it in (triage.Compare).
// Errors: ErrCheckNoLog, ErrCheckNoPoster for a config that cannot run
// the check; ErrPaused when the kill switch is on; any other is the
// node's, a run's (one that did not start, or ended other than done, out
// of budget or past its deadline) or triage's. The result holds the runs
// made before an error.
func Check(ctx context.Context, c Config, env *Env, o CheckOptions) (CheckRun, error) {
	var out CheckRun
	if env.Log == nil {
		return out, ErrCheckNoLog
	}
	if paused, _ := env.Control.Paused(); paused {
		return out, ErrPaused
	}
	// The log as it stands before this check posts anything: what the
	// findings are compared with.
	e, before, err := triage.ReadLog(ctx, env.Log, o.Triage, time.Now())
	if err != nil {
		return out, err
	}
	var sender fleet.Address
	switch {
	case o.Identity != nil:
		sender = o.Identity.Address()
	case len(o.Triage.Trusted) > 0:
		sender = o.Triage.Trusted[0]
	}
	col := &qatools.Collector{}
	if o.Post {
		if env.Poster == nil {
			return out, ErrCheckNoPoster
		}
		col.Forward = env.Poster
	}
	env.Reporter = col
	dial, _ := env.Control.Dial()
	out.Dial, out.Posted = dial.String(), o.Post
	out.FailOn = string(o.Floor)
	if o.Floor == "" {
		out.FailOn = "never"
	}
	var sources []string
	for _, p := range o.Specialists {
		out.Specialists = append(out.Specialists, p.Name)
		sources = append(sources, p.ReportingSource())
	}
	for _, p := range o.Specialists {
		fmt.Fprintf(o.Progress, "check: %s (dial %s)\n", p.Name, dial)
		res, err := Run(ctx, c, env, p, Options{Logger: o.Logger, Narrate: func(e fleet.TurnEvent) {
			fmt.Fprintln(o.Progress, "  "+e.SummaryLine())
		}})
		if res.RunID != "" {
			out.Runs = append(out.Runs, res.RunID)
		}
		switch {
		case errors.Is(err, ErrPaused):
			return out, err
		case err != nil && res.RunID == "":
			return out, fmt.Errorf("check: %s: %w", p.Name, err)
		case res.Outcome != trajectory.OutcomeDone && res.Outcome != trajectory.OutcomeBudgetExhausted && res.Outcome != trajectory.OutcomeDeadlineExceeded:
			return out, fmt.Errorf("check: %s: run %s ended %s", p.Name, res.RunID, res.Outcome)
		}
	}
	if o.Post {
		// What the poster queued (the log did not answer) goes now rather
		// than at the next command that flushes.
		if _, _, err := env.Poster.Flush(ctx); err != nil {
			o.Logger.Warn("flush the outbox", "err", err)
		}
	}
	cmp, err := triage.Compare(e, before, sender, col.Found(), sources, o.Floor, time.Now())
	if err != nil {
		return out, err
	}
	out.Comparison = cmp
	out.Rows, out.Head, out.Clusters, out.Failing = cmp.Rows, cmp.Head, cmp.Clusters, cmp.Failing
	if out.Rows == nil {
		out.Rows = []triage.CheckRow{}
	}
	return out, nil
}
