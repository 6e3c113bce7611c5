package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/qafleet/fleetd/fixer"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/pipeline"
	"github.com/qafleet/fleetd/triage"
	"github.com/spf13/cobra"
)

// fixCommands are the fix stage's commands: `fleetd fix` and `fleetd prs`
// (cmd_fix.go, the demo's fix step in cmd_fix_demo.go; its config is
// cmd_fix_config.go and the daemon's fix pass daemon/fix.go). The
// daemon composes its fix pass through newFixStage; the demo and the
// report read PR links through prLinks.
type fixCommands struct{ *app }

// openFixStage builds the fleet environment and its fix pipeline for a
// one-shot command, logging warnings to stderr. The caller closes env.
func (a fixCommands) openFixStage(ctx context.Context) (*fleetEnv, *pipeline.Fix, error) {
	logger := a.warnLogger()
	env, err := a.buildEnv(ctx, logger)
	if err != nil {
		return nil, nil, err
	}
	st, err := a.newFixStage(ctx, env, logger)
	if err != nil {
		env.Close()
		return nil, nil, err
	}
	return env, st, nil
}

// newFixStage turns forge:, fixer:, target.repo and the tools environment
// into the fix pipeline's config and composes it (pipeline.NewFix) with
// the forge backend (pipeline.NewForge), the poster (the fleet's, through
// its outbox) and the patch model (fixer.planner, runner.Models).
func (a fixCommands) newFixStage(ctx context.Context, env *fleetEnv, logger *slog.Logger) (*pipeline.Fix, error) {
	if a.cfg.Forge.Kind == "" {
		return nil, errors.New("no forge: section in the config: the fix stage needs one (see configs/fleetd.example.yaml)")
	}
	target, err := a.cfg.target()
	if err != nil {
		return nil, err
	}
	if target.Repo == nil {
		return nil, errors.New("no target.repo in the config: the fix stage needs the repository to repair")
	}
	repo := *target.Repo
	fc := a.cfg.Forge
	forge, err := pipeline.NewForge(ctx, pipeline.ForgeConfig{Kind: fc.Kind, BaseURL: fc.BaseURL, Owner: fc.Owner, Repo: fc.Repo, RepoURL: repo.URL, Token: a.cfg.forgeToken, Logger: logger})
	if err != nil {
		return nil, err
	}
	var model fleet.Model
	modelName := ""
	if kind := a.cfg.Fixer.Planner; kind != "" {
		if model, modelName, err = a.models().Model(ctx, kind, logger); err != nil {
			return nil, fmt.Errorf("fixer.planner: %w", err)
		}
	}
	var poster fixer.Poster
	if env.Log != nil && env.Poster != nil {
		poster = pipeline.FixRecords{P: env.Poster}
	}
	x := a.cfg.Fixer
	return pipeline.NewFix(ctx, pipeline.FixConfig{
		Repo: repo, StateDir: a.fixerDir(), SandboxDir: a.sandboxDir(), Forge: forge, Poster: poster,
		Model: model, ModelName: modelName, Tools: env.Env, Log: env.Log, Dial: env.Control,
		Budget: a.cfg.budget(), MaxTokens: x.MaxTokens, Deadline: x.Deadline,
		Attempts: x.Attempts, MaxOpenPRs: x.MaxOpenPRs, MaxPRsPerHour: x.MaxPRsPerHour, Cooldown: x.Cooldown,
		TestTimeout: x.TestTimeout, RegressionTimeout: x.RegressionTimeout, Logger: logger,
		BisectCommits: x.BisectCommits, BisectTimeout: x.BisectTimeout,
	})
}

// workItems returns triage's work items with the report: a fresh triage
// pass when the store is free, else the saved report (the daemon holds it).
func (a fixCommands) workItems(ctx context.Context) ([]triage.WorkItem, fleet.Report, error) {
	fresh := func(ctx context.Context) (fleet.Report, error) {
		res, err := findingsCommands{a.app}.runTriage(ctx, a.resolve(&connFlags{cmd: &cobra.Command{}}), nil)
		return res.Report, err
	}
	return pipeline.WorkItems(ctx, fresh, a.reportsDir())
}

func (a fixCommands) fixCmd() *cobra.Command {
	var dryRun, poll, asJSON bool
	cmd := &cobra.Command{
		Use:   "fix FP | fix --poll",
		Short: "Run the fix stage on one work item now: reproduce, regression test, patch, verify, PR",
		Long: `Runs the fix stage on the cluster FP (its id in fleetd report; a unique
prefix will do): the repro is replayed in a fresh sandbox (no repro: one
kind=needs-repro record and stop), a regression test is committed and must
fail on the base branch, the model (fixer.planner) proposes patches that are
verified, and branch fleetd/fix-FP is pushed and its PR opened or updated:
ready when verified, a draft with the failing regression test otherwise.
Pushing needs dial propose (--dry-run does everything else at any dial).
fleetd never merges. --poll instead refreshes open PRs from the forge,
re-checks merged ones and posts kind=resolution when they hold.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if poll {
				return cobra.NoArgs(cmd, args)
			}
			return cobra.ExactArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			env, st, err := a.openFixStage(ctx)
			if err != nil {
				return err
			}
			defer env.Close()
			if poll {
				res, err := st.Poll(ctx)
				for _, r := range res {
					fmt.Fprintf(a.stdout, "PR %d (%s): %s -> %s %s\n", r.Number, r.Fingerprint, r.From, r.To, r.Recheck)
				}
				return err
			}
			if d, _ := env.Control.Dial(); d < fleet.Propose && !dryRun {
				return &exitError{code: exitRefused, err: fmt.Errorf("%w (it is %s): fleetd dial set propose --reason ..., or fleetd fix --dry-run", fixer.ErrDial, d)}
			}
			items, rep, err := a.workItems(ctx)
			if err != nil {
				return err
			}
			wi, err := triage.PickItem(items, rep, args[0])
			if err != nil {
				return err
			}
			it := st.Item(ctx, wi)
			if !asJSON {
				fmt.Fprintf(a.stdout, "fix %s: %s %s %q (repro %s)\n", it.ID, it.Severity, it.Surface, clip(sanitize(it.Title), 100), it.Repro.Tool)
			}
			j, err := st.Run(ctx, it, dryRun)
			if j != nil {
				if asJSON {
					if perr := a.printJSON(j); perr != nil {
						return perr
					}
				} else {
					a.printJob(j)
				}
			}
			if errors.Is(err, fixer.ErrDial) {
				return &exitError{code: exitRefused, err: err}
			}
			return err
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "reproduce, write and check the regression test, patch and verify, but push nothing and open no PR")
	cmd.Flags().BoolVar(&poll, "poll", false, "poll the open PRs instead: re-check merged ones and post kind=resolution")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the job record as JSON")
	return cmd
}

// printJob narrates a finished job.
func (a fixCommands) printJob(j *fixer.Job) {
	out := a.stdout
	if r := j.Repro; r != nil {
		outcome := r.Outcome
		if outcome == "" {
			outcome = "no outcome"
		}
		fmt.Fprintf(out, "  reproduce   %s in run %s (%s)\n", outcome, r.RunID, j.Timings["reproduce"].Round(time.Millisecond))
		if r.Error != "" {
			fmt.Fprintf(out, "  replay error %s\n", clip(sanitize(r.Error), 300))
		}
		for _, l := range r.LeftOnPlatform {
			fmt.Fprintf(out, "  left on the platform: %s\n", clip(sanitize(l), 300))
		}
	}
	if rt := j.Regression; rt != nil && j.Before != nil {
		fmt.Fprintf(out, "  regression  %s: exit %d on base %.12s (%s)\n", rt.Path, j.Before.ExitCode, j.Base, j.Timings["regression"].Round(time.Millisecond))
	}
	for _, at := range j.Attempts {
		fmt.Fprintf(out, "  patch %d     %s %s\n", at.N, at.Result, clip(sanitize(firstLineOf(at.Detail)), 120))
	}
	if len(j.Attempts) > 0 {
		fmt.Fprintf(out, "  model %s, verification %s\n", j.Timings["patch"].Round(time.Millisecond), j.Timings["verify"].Round(time.Millisecond))
	}
	if j.PR != nil {
		fmt.Fprintf(out, "  PR          #%d %s %s (%s)\n", j.PR.Number, j.PR.State, j.PR.URL, j.Timings["forge"].Round(time.Millisecond))
	}
	fmt.Fprintf(out, "outcome: %s", j.Outcome)
	if j.Verified {
		fmt.Fprint(out, " (verified)")
	}
	if j.Error != "" {
		fmt.Fprintf(out, ": %s", clip(sanitize(j.Error), 300))
	}
	fmt.Fprintln(out)
}

func firstLineOf(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

func (a fixCommands) prsCmd() *cobra.Command {
	var asJSON, refresh bool
	cmd := &cobra.Command{
		Use:   "prs [--json] [--refresh]",
		Short: "List the pull requests the fix stage opened: fingerprint, state, verification, URL, age",
		Long: `Lists what <data-dir>/fixer/prs.json records about the fix stage's pull
requests. --refresh first polls the forge (as fleetd fix --poll does: merged
PRs are re-checked and kind=resolution posted).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if refresh {
				env, st, err := a.openFixStage(ctx)
				if err != nil {
					return err
				}
				defer env.Close()
				if _, err := st.Poll(ctx); err != nil {
					fmt.Fprintln(a.stderr, "fleetd prs: refresh:", err)
				}
			}
			recs, err := fixer.LoadRecords(a.fixerDir())
			if err != nil {
				return err
			}
			var withPR []fixer.Record
			for _, r := range recs {
				if r.Number > 0 {
					withPR = append(withPR, r)
				}
			}
			slices.SortFunc(withPR, func(x, y fixer.Record) int { return y.OpenedAt.Compare(x.OpenedAt) })
			if asJSON {
				for _, r := range withPR {
					if err := a.printJSON(fixer.RowOf(r, time.Now())); err != nil {
						return err
					}
				}
				return nil
			}
			if len(withPR) == 0 {
				_, err := fmt.Fprintf(a.stdout, "no pull requests yet (%s)\n", filepath.Join(a.fixerDir(), "prs.json"))
				return err
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "FINGERPRINT\tSTATE\tVERIFICATION\tAGE\tURL\tTITLE")
			for _, r := range withPR {
				l := fixer.RowOf(r, time.Now())
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", l.Fingerprint, l.State, l.Verification, l.Age, l.URL, clip(sanitize(r.Title), 60))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON object per PR")
	cmd.Flags().BoolVar(&refresh, "refresh", false, "poll the forge first")
	return cmd
}

// prLinks maps cluster ids to their PRs for the report (nil when there
// are none or the state cannot be read).
func (a fixCommands) prLinks() map[string]fleet.PRLink { return pipeline.PRLinks(a.fixerDir()) }
