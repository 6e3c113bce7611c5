package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/qafleet/fleetd/qatools"
	"github.com/qafleet/fleetd/sandbox"
	"github.com/spf13/cobra"
)

func (a serviceCommands) reconcileCmd() *cobra.Command {
	var (
		fromChain bool
		blocks    uint64
		olderThan time.Duration
		asJSON    bool
	)
	cmd := &cobra.Command{
		Use:   "reconcile [--from-chain [--blocks N] [--older-than D]]",
		Short: "Release the names and sweep the funds of crashed runs, and post the outbox: from this data dir, or from the chain alone",
		Long: `Finishes the cleanup of runs whose process died. Always: every sandbox in
this data dir without a closed marker and not held by a live process (what
fleetd run and fleetd probe also do at start), and the findings waiting in
the outbox are posted (exactly once). With --from-chain, also the
runs no disk here knows about (a pod that died with its data dir): every
throwaway key the sponsor funded in the last --blocks blocks is found from
the marker its funding transaction carries, derived again from the sponsor's
secret, its names released and its balance swept back. Runs that started
less than --older-than ago are left alone (they may be running elsewhere);
it must exceed the longest run deadline. Idempotent; writes only releases
and sweeps (and funds a key that holds a name without the gas to release
it), at any dial. Run records left without a footer by a process that died
get a harness_error footer. A name whose release keeps failing is reported
as still held, its key left funded for the next pass, and the exit status
is 1 exactly when something is still held or could not be checked.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			logger := a.warnLogger()
			env, err := a.buildEnv(ctx, logger)
			if err != nil {
				return err
			}
			defer env.Close()
			rec := a.recoverCrashed(ctx, env, "fleetd reconcile")
			lerr := rec.Err
			var held []string // what is still held, for the exit message
			if env.Poster != nil {
				posted, left, ferr := env.Poster.Flush(ctx)
				if ferr != nil {
					lerr = errors.Join(lerr, ferr)
				}
				if posted > 0 || left > 0 {
					if err := a.emit(asJSON, map[string]any{"outbox_posted": posted, "outbox_left": left},
						"outbox: %d findings posted, %d left", posted, left); err != nil {
						return err
					}
				}
				if left > 0 {
					held = append(held, fmt.Sprintf("%d outbox entries", left))
				}
			}
			for _, c := range rec.Runs {
				v := map[string]any{"run": c.RunID, "from": "data dir", "names": len(c.Released), "keys": c.Swept, "closed": c.Closed}
				line := fmt.Sprintf("%s  data dir: %d names released, %d keys swept", c.RunID, len(c.Released), c.Swept)
				if !c.Closed {
					v["held"], v["error"] = c.Held, fmt.Sprint(c.Err)
					line = fmt.Sprintf("%s  data dir: %d names released, %d keys swept; still held: %s (keys kept funded for the release): %v",
						c.RunID, len(c.Released), c.Swept, strings.Join(c.Held, ", "), c.Err)
					held = append(held, fmt.Sprintf("run %s (%d names)", c.RunID, len(c.Held)))
				}
				if err := a.emit(asJSON, v, "%s", line); err != nil {
					return err
				}
			}
			for _, id := range rec.Footers {
				if err := a.emit(asJSON, map[string]any{"run": id, "from": "data dir", "footer": "harness_error"},
					"%s  run record closed with a recovery footer", id); err != nil {
					return err
				}
			}
			if !fromChain {
				if len(rec.Runs) == 0 && len(rec.Footers) == 0 && !asJSON {
					fmt.Fprintln(a.stdout, "no crashed runs in", a.dataDir())
				}
				return reconcileErr(held, lerr)
			}
			head, err := env.Client.BlockNumber(ctx)
			if err != nil {
				return err
			}
			from := uint64(0)
			if head > blocks {
				from = head - blocks
			}
			base := a.sandboxDir()
			found, cerr := qatools.ReconcileChain(ctx, env.Env, from, head, olderThan, time.Now().UTC(),
				func(run string) bool { return sandbox.Live(base, run) })
			stranded := 0
			for _, s := range found {
				if s.Stranded() {
					stranded++
				}
				line := fmt.Sprintf("%s  chain: %d keys, %d names released, %s wei swept", s.Run, s.Keys, len(s.Released), s.Swept)
				if len(s.Held) > 0 {
					line += fmt.Sprintf("; still held: %s (keys kept funded for the release)", strings.Join(s.Held, ", "))
					held = append(held, fmt.Sprintf("run %s (%d names)", s.Run, len(s.Held)))
				}
				if s.Skipped != "" {
					line = fmt.Sprintf("%s  chain: skipped (%s)", s.Run, s.Skipped)
				}
				if err := a.emit(asJSON, map[string]any{"run": s.Run, "from": "chain", "keys": s.Keys, "released": s.Released,
					"held": s.Held, "swept_wei": s.Swept.String(), "skipped": s.Skipped}, "%s", line); err != nil {
					return err
				}
			}
			if !asJSON {
				fmt.Fprintf(a.stdout, "blocks %d..%d: %d runs funded by the sponsor, %d held names or funds\n", from, head, len(found), stranded)
			}
			return reconcileErr(held, errors.Join(lerr, cerr))
		},
	}
	cmd.Flags().BoolVar(&fromChain, "from-chain", false, "also find crashed runs from the sponsor's funding transactions on chain")
	cmd.Flags().Uint64Var(&blocks, "blocks", 10_000, "with --from-chain: how many recent blocks to read (one request each)")
	cmd.Flags().DurationVar(&olderThan, "older-than", time.Hour, "with --from-chain: leave runs younger than this alone")
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON object per run")
	return cmd
}

// reconcileErr is reconcile's failure, naming what is still held, so its
// exit status and its output agree: 1 exactly when something is left.
func reconcileErr(held []string, err error) error {
	switch {
	case len(held) > 0 && err != nil:
		return fmt.Errorf("reconcile: still held: %s; run fleetd reconcile again once the node answers: %w", strings.Join(held, "; "), err)
	case len(held) > 0:
		return fmt.Errorf("reconcile: still held: %s; run fleetd reconcile again once the node answers", strings.Join(held, "; "))
	case err != nil:
		return fmt.Errorf("reconcile: %w", err)
	}
	return nil
}

// emit prints v as a JSON line, or the formatted text line.
func (a serviceCommands) emit(asJSON bool, v any, format string, args ...any) error {
	if asJSON {
		return a.printJSON(v)
	}
	_, err := fmt.Fprintf(a.stdout, format+"\n", args...)
	return err
}
