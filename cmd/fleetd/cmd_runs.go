package main

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"text/tabwriter"
	"time"

	fleetdaemon "github.com/qafleet/fleetd/daemon"
	"github.com/qafleet/fleetd/trajectory"
	"github.com/spf13/cobra"
)

func (a specialistCommands) runsCmd() *cobra.Command {
	var asJSON bool
	var limit int
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "List recorded runs: specialist, outcome, turns, findings, duration",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			files, _ := filepath.Glob(filepath.Join(a.dataDir(), trajectory.RunsDir, "*.jsonl"))
			var sums []trajectory.RunSummary
			var bad []string
			for _, f := range files {
				s, err := trajectory.Summary(f)
				if err != nil {
					bad = append(bad, fmt.Sprintf("%s: %v", filepath.Base(f), err))
					continue
				}
				sums = append(sums, s)
			}
			sort.Slice(sums, func(i, j int) bool { return sums[i].StartedAt.After(sums[j].StartedAt) })
			if limit > 0 && len(sums) > limit {
				sums = sums[:limit]
			}
			if asJSON {
				for _, s := range sums {
					if err := a.printJSON(map[string]any{"run_id": s.RunID, "specialist": s.Specialist, "outcome": s.Outcome,
						"turns": s.Turns, "findings": s.Findings, "duration_ms": s.Duration.Milliseconds(), "started_at": s.StartedAt}); err != nil {
						return err
					}
				}
			} else {
				tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "RUN\tSPECIALIST\tOUTCOME\tTURNS\tFINDINGS\tDURATION\tSTARTED")
				for _, s := range sums {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%s\n", s.RunID, s.Specialist, s.Outcome, s.Turns, s.Findings,
						s.Duration.Round(time.Millisecond), s.StartedAt.Local().Format("2006-01-02 15:04:05"))
				}
				tw.Flush()
			}
			for _, b := range bad {
				fmt.Fprintln(a.stderr, "unreadable run record:", b)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON object per run")
	cmd.Flags().IntVar(&limit, "limit", 0, "show only the N most recent runs")
	cmd.AddCommand(a.runsShowCmd(), a.runsReplayCmd())
	return cmd
}

func (a specialistCommands) runsShowCmd() *cobra.Command {
	var raw bool
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Render one run as a readable timeline (--raw prints the JSONL record)",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			path := trajectory.Path(a.dataDir(), args[0])
			run, err := trajectory.ReadAll(path)
			if errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("no run %q in %s", args[0], filepath.Dir(path))
			}
			if err != nil {
				return err
			}
			if raw {
				for _, r := range run.Records {
					b, err := trajectory.MarshalRecord(r)
					if err != nil {
						return err
					}
					if _, err := fmt.Fprintf(a.stdout, "%s\n", b); err != nil {
						return err
					}
				}
				return nil
			}
			return fleetdaemon.Timeline(a.stdout, run)
		},
	}
	cmd.Flags().BoolVar(&raw, "raw", false, "print the run record's JSON lines")
	return cmd
}
