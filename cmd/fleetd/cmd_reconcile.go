package main

import (
	"errors"
	"fmt"
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
and sweeps, at any dial.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			logger := a.warnLogger()
			env, err := a.buildEnv(ctx, logger)
			if err != nil {
				return err
			}
			defer env.Close()
			done, lerr := qatools.Reconcile(ctx, env.Env, a.sandboxDir())
			if env.poster != nil {
				posted, left, ferr := env.poster.Flush(ctx)
				if ferr != nil {
					lerr = errors.Join(lerr, ferr)
				}
				if posted > 0 || left > 0 {
					if err := a.emit(asJSON, map[string]any{"outbox_posted": posted, "outbox_left": left},
						"outbox: %d findings posted, %d left", posted, left); err != nil {
						return err
					}
				}
			}
			for _, c := range done {
				if err := a.emit(asJSON, map[string]any{"run": c.RunID, "from": "data dir", "names": len(c.Names), "keys": len(c.KeyFiles)},
					"%s  data dir: %d names released, %d keys swept", c.RunID, len(c.Names), len(c.KeyFiles)); err != nil {
					return err
				}
			}
			if !fromChain {
				if len(done) == 0 && !asJSON {
					fmt.Fprintln(a.stdout, "no crashed runs in", a.dataDir())
				}
				return lerr
			}
			head, err := env.client.BlockNumber(ctx)
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
				if s.Skipped != "" {
					line = fmt.Sprintf("%s  chain: skipped (%s)", s.Run, s.Skipped)
				}
				if err := a.emit(asJSON, map[string]any{"run": s.Run, "from": "chain", "keys": s.Keys, "released": s.Released,
					"swept_wei": s.Swept.String(), "skipped": s.Skipped}, "%s", line); err != nil {
					return err
				}
			}
			if !asJSON {
				fmt.Fprintf(a.stdout, "blocks %d..%d: %d runs funded by the sponsor, %d held names or funds\n", from, head, len(found), stranded)
			}
			if lerr != nil || cerr != nil {
				return fmt.Errorf("reconcile: %w", errors.Join(lerr, cerr))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&fromChain, "from-chain", false, "also find crashed runs from the sponsor's funding transactions on chain")
	cmd.Flags().Uint64Var(&blocks, "blocks", 10_000, "with --from-chain: how many recent blocks to read (one request each)")
	cmd.Flags().DurationVar(&olderThan, "older-than", time.Hour, "with --from-chain: leave runs younger than this alone")
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON object per run")
	return cmd
}

// emit prints v as a JSON line, or the formatted text line.
func (a serviceCommands) emit(asJSON bool, v any, format string, args ...any) error {
	if asJSON {
		return a.printJSON(v)
	}
	_, err := fmt.Fprintf(a.stdout, format+"\n", args...)
	return err
}
