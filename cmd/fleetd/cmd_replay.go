package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/runner"
	"github.com/qafleet/fleetd/trajectory"
	"github.com/spf13/cobra"
)

func (a specialistCommands) runsReplayCmd() *cobra.Command {
	var asJSON bool
	var dialFlag string
	cmd := &cobra.Command{
		Use:   "replay ID [--dial RUNG] [--json]",
		Short: "Re-execute a recorded run's tool calls in a fresh sandbox and compare each turn",
		Long: `Replays run ID: its tool calls, in order, in a fresh sandbox under today's
dial (or --dial, which may only lower it) and today's budgets, through the
same dispatch path the agent loop uses. Throwaway names are minted fresh and
the recorded run's names are replaced by the new ones in later calls'
arguments. Each call is compared with the recorded one:
  same          the same verdict and the same salient result fields
                (outcome, status, hint, exit code, signal, revert, crash state)
  changed       it ran differently (the detail says how)
  refused now   it ran then and today's dial refuses it
  not replayed  the replay ended first (today's budget, a signal)
A replay never posts a finding: qa_report checks and fingerprints it and
answers status not_posted. The replay is itself a recorded run (fleetd runs
show) whose header config names the run it replays (replay_of).
Exit status: 0 the replay ran; 1 infrastructure (the node, the record could
not be written); 2 usage (no such run, a record from another version, one
cut short by a crash, a bad --dial); 3 paused.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			// Everything about the input is checked before anything else
			// happens: a bad record leaves the data dir and the log as they were.
			orig, err := loadReplayable(a.dataDir(), args[0])
			if err != nil {
				return err
			}
			var capDial *fleet.Dial
			if dialFlag != "" {
				d, err := fleet.ParseDial(dialFlag)
				if err != nil {
					return &exitError{code: exitConfig, err: fmt.Errorf("--dial: %w", err)}
				}
				capDial = &d
			}
			stored, _ := a.control().Dial()
			if capDial != nil && *capDial > stored {
				return &exitError{code: exitConfig, err: fmt.Errorf("--dial %s is above the stored dial %s: a replay never raises the dial (fleetd dial set)", *capDial, stored)}
			}
			logger := a.warnLogger()
			env, err := a.buildEnv(ctx, logger)
			if err != nil {
				if errors.Is(err, chain.ErrUnreachable) {
					return &exitError{code: exitInfra, err: err}
				}
				return &exitError{code: exitConfig, err: err}
			}
			defer env.Close()
			if paused, _ := env.Control.Paused(); paused {
				return &exitError{code: exitPaused, err: ErrPaused}
			}
			if r := a.recoverCrashed(ctx, env, "fleetd runs replay"); r.Err != nil {
				logger.Warn("recover crashed runs", "err", r.Err)
			}
			rep, err := a.replay(ctx, env, orig, capDial)
			if rep != nil {
				var perr error
				if asJSON {
					perr = a.printJSON(rep)
				} else {
					perr = renderReplay(a.stdout, rep)
				}
				if err == nil {
					err = perr
				}
			}
			switch {
			case errors.Is(err, ErrPaused):
				return &exitError{code: exitPaused, err: err}
			case err != nil:
				return &exitError{code: exitInfra, err: err}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the comparison as one JSON object")
	cmd.Flags().StringVar(&dialFlag, "dial", "", "replay at this rung (observe, exercise, propose); at most the stored dial")
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &exitError{code: exitConfig, err: err} })
	return cmd
}

// loadReplayable is runner.LoadReplayable with exit statuses: a run that
// cannot be replayed is exitConfig (the input is wrong; trying again will
// not help), a file that cannot be read exitInfra.
func loadReplayable(dataDir, id string) (*trajectory.Run, error) {
	run, err := runner.LoadReplayable(dataDir, id)
	var nr *runner.NotReplayable
	switch {
	case errors.As(err, &nr):
		return nil, &exitError{code: exitConfig, err: err}
	case err != nil:
		return nil, &exitError{code: exitInfra, err: err}
	}
	return run, nil
}

// replay runs orig's tool calls again through the replay engine
// (runner.Replay) on a's config, as the specialist that recorded it is
// configured today.
func (a specialistCommands) replay(ctx context.Context, env *fleetEnv, orig *trajectory.Run, capDial *fleet.Dial) (*runner.ReplayComparison, error) {
	o := runner.ReplayOptions{CapDial: capDial, Logger: a.warnLogger()}
	if p, err := a.persona(orig.Header.Specialist); err == nil {
		o.Persona = &p
	}
	return runner.Replay(ctx, a.runConfig(), env, orig, o)
}

// renderReplay writes the comparison for a person.
func renderReplay(w io.Writer, rep *runner.ReplayComparison) error {
	fmt.Fprintf(w, "replay %s of run %s  specialist %s  dial %s (recorded at %s)\n\n", rep.RunID, rep.ReplayOf, rep.Specialist, rep.Dial, dash(rep.RecordedAt))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TURN\tWAS\tTOOL\tTHEN\tNOW\tCOMPARISON\tDETAIL")
	for _, row := range rep.Turns {
		turn := "-"
		if row.Turn >= 0 {
			turn = fmt.Sprintf("#%d", row.Turn)
		}
		fmt.Fprintf(tw, "%s\t#%d\t%s\t%s\t%s\t%s\t%s\n", turn, row.RecordedTurn, row.Tool, row.Then, dash(row.Now),
			strings.ReplaceAll(row.Comparison, "_", " "), sanitize(row.Detail))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	c := rep.Counts
	_, err := fmt.Fprintf(w, "\n%d same, %d changed, %d refused now, %d not replayed; replay %s: %s\n",
		c[runner.ReplaySame], c[runner.ReplayChanged], c[runner.ReplayRefusedNow], c[runner.ReplayNotReplayed], rep.Outcome, sanitize(rep.Summary))
	return err
}
