package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/pipeline"
	"github.com/qafleet/fleetd/poster"
	"github.com/qafleet/fleetd/triage"
	"github.com/spf13/cobra"
)

// TriageConfig is the `triage:` section: the engine's settings plus when the
// daemon runs it (besides after every new feedback entry).
type TriageConfig struct {
	triage.Config `yaml:",inline"`
	Every         time.Duration `yaml:"every"` // default 5m
}

// triageConfig is the engine config with the trusted senders from chain:
// plus identity, the fleet's own (it signs corrections), when known.
func (a findingsCommands) triageConfig(identity *chain.Key) (triage.Config, error) {
	tc := a.cfg.Triage.Config
	for _, s := range a.cfg.Chain.TrustedSenders {
		addr, err := fleet.ParseAddress(s)
		if err != nil {
			return tc, err
		}
		tc.Trusted = append(tc.Trusted, addr)
	}
	if identity != nil {
		tc.Trusted = append(tc.Trusted, identity.Address())
	}
	return tc, tc.Validate()
}

// triageRun is a triage pass and what happened to its meta summary, if it
// posted one.
type triageRun struct {
	triage.RunResult
	Meta poster.Status
}

// runTriage reads the log, updates the report files, and posts a meta
// summary when the top three changed, through the poster as the fleet
// identity (sponsored when a sponsor key is configured).
//
// fleetPoster, when not nil, is the caller's poster for the fleet identity
// on the configured log (the daemon's, built once at start): the summary
// goes through it instead of a poster built for this pass.
func (a findingsCommands) runTriage(ctx context.Context, c conn, fleetPoster *poster.Poster) (triageRun, error) {
	identity := a.fleetIdentity()
	cfg, err := a.triageConfig(identity)
	if err != nil {
		return triageRun{}, fmt.Errorf("triage config: %w", err)
	}
	cl, log, err := a.feedbackLog(ctx, c)
	if err != nil {
		return triageRun{}, err
	}
	defer cl.Close()
	t, err := triage.Open(a.dataDir(), cfg)
	if err != nil {
		return triageRun{}, err
	}
	defer t.Close()
	meta := &pipeline.MetaPoster{P: fleetPoster}
	if meta.P == nil && identity != nil {
		var sponsor *chain.Key
		if f := a.cfg.Chain.SponsorKeyFile; f != "" {
			sponsor, _ = chain.LoadKey(a.cfg.resolve(f))
		}
		if meta.P, err = a.recordPoster(identity, sponsor, log.Address(), log); err != nil {
			return triageRun{}, err
		}
	}
	res, err := t.Run(ctx, triage.ChainOf{Log: log, Blocks: cl}, meta, time.Now())
	return triageRun{RunResult: res, Meta: meta.Status}, err
}

func (a findingsCommands) triageCmd() *cobra.Command {
	var f *connFlags
	cmd := &cobra.Command{
		Use:   "triage",
		Short: "Read the feedback log now, cluster and rank it, and write reports/latest.{md,json}",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c := a.resolve(f)
			res, err := a.runTriage(cmd.Context(), c, nil)
			if errors.Is(err, chain.ErrUnreachable) {
				res.Report, err = a.rankStored(err, c)
			}
			if err != nil {
				return err
			}
			r := res.Report
			fmt.Fprintf(a.stdout, "triaged entries 0..%d (block %d): %d clusters; report in %s\n", r.Head, r.Block, len(r.Clusters), a.reportsDir())
			switch {
			case res.Posted && res.Meta == poster.Queued:
				fmt.Fprintln(a.stdout, "the top 3 changed: the meta summary is queued in the outbox (the log did not answer); it is posted at the next flush")
			case res.Posted && res.Meta == poster.Deduped:
				fmt.Fprintln(a.stdout, "the top 3 changed: the same meta summary is already on the log")
			case res.Posted:
				fmt.Fprintln(a.stdout, "the top 3 changed: posted a meta summary to the log")
			}
			return nil
		},
	}
	f = addConnFlags(cmd, "rpc", "chain-id", "feedback-log")
	return cmd
}

func (a findingsCommands) reportCmd() *cobra.Command {
	var (
		format string
		top    int
		out    string
		f      *connFlags
	)
	cmd := &cobra.Command{
		Use:   "report [--format md|json|table|html|sarif] [--top N] [--out FILE]",
		Short: "Print the ranked health report (triaging first when the log has moved on)",
		Long: `Prints the ranked health report. If the chain is reachable and the log has
entries the saved report has not seen, triage runs first. If the chain
cannot be reached, the last saved report is printed with its age.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			res, err := a.runTriage(ctx, a.resolve(f), nil)
			r := res.Report
			if err != nil {
				saved, lerr := triage.LoadReport(a.reportsDir())
				if errors.Is(lerr, fs.ErrNotExist) {
					return fmt.Errorf("no saved report and the log cannot be read: %w", err)
				}
				if lerr != nil {
					return lerr
				}
				r = saved
				age := time.Since(r.GeneratedAt).Round(time.Second)
				if errors.Is(err, triage.ErrLocked) {
					fmt.Fprintf(a.stderr, "fleetd: triage is running in another process (the daemon); showing the report saved %s ago\n", age)
				} else {
					fmt.Fprintf(a.stderr, "fleetd: the log cannot be read (%v); showing the report saved %s ago\n", err, age)
				}
			}
			triage.AttachPRs(&r, fixCommands{a.app}.prLinks()) // each cluster's fix-stage PR (cmd_fix.go)
			return a.writeReport(r, format, top, out)
		},
	}
	f = addConnFlags(cmd, "rpc", "chain-id", "feedback-log")
	cmd.Flags().StringVar(&format, "format", "table", "md, json, table, html (one self-contained file: inline CSS and SVG, no script) or sarif (SARIF 2.1.0 for code scanning: every cluster, --top ignored)")
	cmd.Flags().StringVar(&out, "out", "", "write the report to FILE (atomically) instead of stdout")
	cmd.Flags().IntVar(&top, "top", 0, "show the N highest-ranked clusters (0: the configured default)")
	return cmd
}

func (a findingsCommands) findingsMarkCmd() *cobra.Command {
	var (
		f      *connFlags
		reason string
		until  string
	)
	cmd := &cobra.Command{
		Use:   "mark REF false-positive|resolved|duplicate-of=J|unmerge|accepted-risk [--reason R] [--until T]",
		Short: "Append an operator's correction about entry REF (sponsored, as the fleet identity)",
		Long: `Appends a qa/v1 correction record (never an edit): kind=false-positive or
kind=resolution with ref=REF, kind=duplicate-of with ref=REF of=J,
kind=unmerge or kind=accepted-risk. Triage applies it, from trusted senders
only (the fleet identity is always trusted), on every rebuild:

  false-positive  the cluster holding REF is dismissed; it comes back as
                  "regressed" (with the reason) only when a new crash state
                  with its repro, a materially different repro, or a repro
                  where it had none, arrives
  resolved        fixed; regressed when reported again
  duplicate-of=J  the cluster of REF joins the cluster of entry J
  unmerge         REF (an entry) is split out of its cluster into one of its
                  own, and later reports like it follow it; REF may instead
                  be a cluster id listed among a folded row's places, which
                  then stays a row of its own
  accepted-risk   the risk is accepted (--reason required) until --until
                  (an RFC 3339 time, a date, or a duration like 720h; none:
                  for good); after it the cluster is open again

The request is checked against the log first: an entry that is not a
finding, a member already split or one with nothing to split out is refused
(exit 2) and nothing is posted. It prints the correction's entry index and
transaction. When the node cannot be reached the correction is queued in
the outbox instead, unchecked (status "queued"; exit 0), and posted, in
order, by the next flush.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := markRequest{Ref: args[0], What: args[1], Reason: reason, Until: until}
			res, outbox, err := a.markEntry(cmd.Context(), a.resolve(f), req, operator())
			if errors.Is(err, errBadMark) {
				return &exitError{code: exitConfig, err: err}
			}
			if err != nil {
				return err
			}
			if res.Entry == nil {
				a.noteUnposted("the correction", res.Status, outbox)
				return a.printJSON(map[string]any{"status": res.Status, "outbox": outbox, "text": res.Text})
			}
			return a.printJSON(map[string]any{"index": res.Entry.Index, "tx": res.Entry.Tx, "text": res.Text})
		},
	}
	f = addConnFlags(cmd, "rpc", "chain-id", "feedback-log", "key-file", "sponsor-key-file")
	cmd.Flags().StringVar(&reason, "reason", "", "why (the record's text; required for accepted-risk)")
	cmd.Flags().StringVar(&until, "until", "", "accepted-risk: when it ends (RFC 3339, 2006-01-02, or a duration from now such as 720h)")
	return cmd
}
