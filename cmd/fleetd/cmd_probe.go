package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/trajectory"
	"github.com/spf13/cobra"
)

// specialistCommands run specialists and show what they did: `fleetd probe`
// (cmd_probe.go, probe.go: the planners, runner.Models for the model APIs),
// `fleetd tools` and `fleetd tool` (cmd_tools.go), `fleetd specialists`
// (personas.go), `fleetd runs` (cmd_runs.go) and `fleetd mcp` (cmd_mcp.go).
// The daemon loads personas and runs specialists through loadPersonas and
// runSpecialist.
type specialistCommands struct{ *app }

func (a specialistCommands) probeCmd() *cobra.Command {
	var planner string
	cmd := &cobra.Command{
		Use:   "probe SPECIALIST [--planner P]",
		Short: "Run one specialist now, narrating each turn on stderr; exit 0 when the run is done",
		Long: `Runs SPECIALIST once in a fresh sandbox under the stored dial: one line per
turn on stderr (tool, verdict, latency), then the run's id, outcome and
findings on stdout. Names the run minted are released and its throwaway keys
swept before it exits. For cron jobs and Kubernetes CronJobs, the exit status
says whether to retry:
  0  the run ran (done, budget exhausted or deadline reached)
  1  infrastructure: the node or the platform failed the run, or its cleanup
     failed twice and left names held (stderr names them); retry later
  2  configuration: the config, the specialist or the target is wrong; do not retry
  3  paused (the kill switch) or cancelled by it; retry after fleetd resume
  4  cancelled by SIGINT or SIGTERM: the run stopped at its next tool boundary,
     cleaned up and wrote its footer; nothing is wrong, run it again when wanted
Before it exits it posts what the outbox holds (up to 4 tries with backoff);
entries the node still did not take are named on stderr, and a run that
ran but left entries queued exits 1. A cleanup that failed (a reset answer)
is tried again for up to 10 s before it exits. At start it finishes what crashed runs
left in the data dir: names released, keys swept, footers written.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			p, err := a.persona(args[0])
			if err != nil {
				return &exitError{code: exitConfig, err: err}
			}
			logger := a.warnLogger()
			env, err := a.buildEnv(ctx, logger)
			if err != nil {
				if errors.Is(err, chain.ErrUnreachable) {
					return &exitError{code: exitInfra, err: err}
				}
				return &exitError{code: exitConfig, err: err}
			}
			if paused, _ := env.Control.Paused(); paused {
				return &exitError{code: exitPaused, err: ErrPaused}
			}
			defer env.Close()
			r := a.recoverCrashed(ctx, env, "fleetd probe")
			if r.Err != nil {
				logger.Warn("recover crashed runs", "err", r.Err)
			}
			a.sayRecovery(r)
			if ctx.Err() != nil {
				return &exitError{code: exitCancelled, err: errors.New("cancelled by a signal before the run started")}
			}
			dial, _ := env.Control.Dial()
			fmt.Fprintf(a.stderr, "probe %s (dial %s)\n", p.Name, dial)
			res, err := a.runSpecialist(ctx, env, p, runOptions{Planner: planner, Logger: logger, Narrate: func(e fleet.TurnEvent) {
				fmt.Fprintln(a.stderr, "  "+e.SummaryLine())
			}})
			// A run whose cleanup failed once (res.Err; its footer says
			// so) is tried again before the probe exits: a cleanup
			// finished on its second try is no failure of the run's.
			held := res.RunID != "" && a.leftOpen(res.RunID) && !a.finishLeft(ctx, env, res.RunID, "fleetd probe at its stop")
			// What the node did not acknowledge is posted before the probe
			// exits: a CronJob's data dir may not outlive the pod.
			_, left, _ := a.postQueued(ctx, env)
			return a.probeExit(ctx, env, res, err, left, held)
		},
	}
	cmd.Flags().StringVar(&planner, "planner", "", "override the persona's planner: playbook, gemini or openai")
	return cmd
}

// probeExit prints how the run ended and picks the exit status: cancelled
// (a signal) before infrastructure, so a stopped probe is not retried as a
// broken one; a run that ran but left findings queued, or names held (its
// cleanup failed twice: held), is infrastructure, since they are not on
// the log yet or not released. err is the run's (its record's) error.
func (a specialistCommands) probeExit(ctx context.Context, env *fleetEnv, res fleet.RunResult, err error, queued int, held bool) error {
	cancelled := ctx.Err() != nil
	if err != nil && res.RunID == "" {
		switch {
		case errors.Is(err, ErrPaused):
			return &exitError{code: exitPaused, err: err}
		case cancelled || errors.Is(err, context.Canceled):
			return &exitError{code: exitCancelled, err: fmt.Errorf("cancelled by a signal before the run started: %w", err)}
		case errors.Is(err, chain.ErrUnreachable):
			return &exitError{code: exitInfra, err: err}
		}
		return &exitError{code: exitConfig, err: err}
	}
	fmt.Fprintf(a.stdout, "run %s: %s: %s\n", res.RunID, res.Outcome, res.Summary)
	for _, d := range res.Degraded {
		fmt.Fprintf(a.stdout, "run %s: DEGRADED: %s\n", res.RunID, d)
	}
	for _, f := range res.Findings {
		fmt.Fprintf(a.stdout, "  finding %v fp=%v entry=%v\n", f["status"], f["fp"], f["entry_id"])
	}
	fmt.Fprintf(a.stdout, "turns %d, tool calls %d, refusals %d, findings %d, %dms\n",
		res.Totals.Turns, res.Totals.ToolCalls, res.Totals.Refusals, res.Totals.Findings, res.Totals.DurationMS)
	switch res.Outcome {
	case trajectory.OutcomeDone, trajectory.OutcomeBudgetExhausted, trajectory.OutcomeDeadlineExceeded:
		if queued > 0 {
			return &exitError{code: exitInfra, err: fmt.Errorf("run %s ended %s, but %s could not be posted: the node did not answer", res.RunID, res.Outcome, plural(queued, "outbox entry", "outbox entries"))}
		}
		if held {
			return &exitError{code: exitInfra, err: fmt.Errorf("run %s ended %s, but its cleanup failed: %w", res.RunID, res.Outcome, errHeld)}
		}
		if err != nil {
			return &exitError{code: exitInfra, err: fmt.Errorf("run %s ended %s: %w", res.RunID, res.Outcome, err)}
		}
		return nil
	case trajectory.OutcomeCancelled:
		if paused, _ := env.Control.Paused(); paused {
			return &exitError{code: exitPaused, err: fmt.Errorf("run %s cancelled: %w", res.RunID, ErrPaused)}
		}
		if cancelled {
			msg := fmt.Sprintf("run %s cancelled by a signal: it stopped at its next tool boundary and wrote its footer", res.RunID)
			switch {
			case held:
				return &exitError{code: exitCancelled, err: fmt.Errorf("%s; its cleanup failed: %w", msg, errHeld)}
			case err != nil:
				return &exitError{code: exitCancelled, err: fmt.Errorf("%s; %w", msg, err)}
			}
			return &exitError{code: exitCancelled, err: errors.New(msg + "; its names are released and its keys swept")}
		}
	}
	if err == nil {
		err = fmt.Errorf("run %s ended %s", res.RunID, res.Outcome)
	}
	return &exitError{code: exitInfra, err: err}
}

// errHeld says what a run whose cleanup failed twice left, and what
// finishes it.
var errHeld = errors.New("its names are still held and its keys funded (fleetd reconcile, or the next probe, finishes them)")

// Exit statuses a Job controller can act on (fleetd probe documents them).
const (
	exitInfra     = 1 // retry later
	exitConfig    = 2 // do not retry
	exitPaused    = 3 // retry after fleetd resume
	exitCancelled = 4 // stopped by SIGINT or SIGTERM: cleaned up (or it says what it left held); run again when wanted
)
