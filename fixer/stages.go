package fixer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/qafleet/fleetd/fleet"
)

// ReproduceStage replays the repro; no repro, no fix.
type ReproduceStage struct{ f *Fixer }

// Name implements Stage.
func (ReproduceStage) Name() string { return "reproduce" }

// Run replays j.Item.Repro. When it does not reproduce, it posts one
// kind=needs-repro ref=<fp> record (unless one was posted for the
// cluster's current newest entry already) and stops the job.
func (s ReproduceStage) Run(ctx context.Context, j *Job) error {
	f := s.f
	defer j.time("reproduce", time.Now())
	rep, err := f.cfg.Reproducer.Reproduce(ctx, j.Item.Repro)
	if err != nil {
		// An errored replay that ran keeps what it returned in the job,
		// and the job's error says what it left on the platform.
		if rep.RunID != "" {
			j.Repro = &rep
		}
		if len(rep.LeftOnPlatform) > 0 {
			return fmt.Errorf("replay %s in run %s: %w (left on the platform: %s)", j.Item.Repro.Tool, rep.RunID, err, strings.Join(rep.LeftOnPlatform, "; "))
		}
		return fmt.Errorf("replay %s: %w", j.Item.Repro.Tool, err)
	}
	j.Repro = &rep
	if rep.Reproduced {
		if !rep.HasInput && rep.Test == nil {
			j.Outcome = OutcomeNoInput
			return errStop
		}
		return nil
	}
	j.Outcome = OutcomeNeedsRepro
	if j.DryRun || f.cfg.Poster == nil {
		return errStop
	}
	recs, err := LoadRecords(f.cfg.StateDir)
	if err != nil {
		return err
	}
	if r, ok := findRecord(recs, j.Item.ID); ok && r.NeedsRepro != nil && *r.NeedsRepro >= j.Item.Latest {
		return errStop // asked once for this state of the cluster already
	}
	finding := fleet.Finding{
		Source: f.cfg.Source, Severity: fleet.SeverityInfo, Surface: j.Item.Surface, Kind: fleet.KindNeedsRepro, Ref: j.Item.ID,
		Summary: fmt.Sprintf("fleetd's fix stage replayed the repro of this cluster in a fresh sandbox (run %s) and it did not reproduce (outcome %s): a new repro is needed before a fix.", rep.RunID, orWord(rep.Outcome, "none")),
	}
	idx, err := f.cfg.Poster.Post(ctx, finding)
	if err != nil {
		return fmt.Errorf("post needs-repro: %w", err)
	}
	latest := j.Item.Latest
	_, err = updateRecord(f.cfg.StateDir, j.Item.ID, func(r *Record) {
		fillRecord(r, j.Item)
		r.NeedsRepro, r.NeedsReproEntry = &latest, idx
	})
	if err != nil {
		return err
	}
	return errStop
}

func orWord(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// RegressionStage checks out the base branch in a worktree, commits the
// regression test and confirms it fails there.
type RegressionStage struct{ f *Fixer }

// Name implements Stage.
func (RegressionStage) Name() string { return "regression" }

// Run fetches the base branch, adds a worktree at it inside the job's
// directory, writes and commits the regression test, runs it (it must
// fail), and takes the grounded set from its output.
func (s RegressionStage) Run(ctx context.Context, j *Job) error {
	f := s.f
	defer j.time("regression", time.Now())
	gitDir := f.gitDir()
	if err := EnsureBare(ctx, gitDir); err != nil {
		return err
	}
	base, err := f.cfg.Forge.Fetch(ctx, gitDir, f.cfg.Repo.BaseBranch())
	if err != nil {
		return fmt.Errorf("fetch %s: %w", f.cfg.Repo.BaseBranch(), err)
	}
	j.Base = base
	wt := filepath.Join(j.Dir, "work")
	os.RemoveAll(wt)
	Git(ctx, gitDir, nil, "worktree", "prune")
	if _, err := Git(ctx, gitDir, nil, "worktree", "add", "--quiet", "--detach", wt, base); err != nil {
		return err
	}
	j.worktree = wt
	var rt RegressionTest
	if j.Repro.Test != nil {
		rt, err = ReproducerRegression(*j.Repro.Test, f.cfg.RegressionTimeout)
	} else {
		rt, err = NewRegression(f.cfg.Repo, wt, j.Item.ID, j.Repro.Input, f.cfg.RegressionTimeout)
	}
	if err != nil {
		return err
	}
	j.Regression = &rt
	if err := writeInTree(wt, rt.Path, rt.Content); err != nil {
		return err
	}
	if _, err := Git(ctx, wt, nil, "add", "--", rt.Path); err != nil {
		return err
	}
	msg := "Add a regression test for " + Inline(j.Item.Title, 60) + "\n\nfleetd reproduced this finding (fingerprint " + j.Item.ID + ") and adds its input as\na regression test. It fails on " + shortSHA(base) + ".\n"
	if _, err := Git(ctx, wt, nil, "commit", "--quiet", "--no-verify", "-m", msg); err != nil {
		return err
	}
	if j.RegressionCommit, err = Git(ctx, wt, nil, "rev-parse", "HEAD"); err != nil {
		return err
	}
	j.Commit = j.RegressionCommit
	res, err := f.run(ctx, wt, rt.Argv, f.cfg.RegressionTimeout+30*time.Second)
	if err != nil {
		return fmt.Errorf("run the regression test: %w", err)
	}
	j.Before = logOf(rt.Argv, res)
	failed, passed := rt.verdict(res)
	switch {
	case passed:
		j.Outcome = OutcomePassesOnBase
		return errStop
	case !failed:
		return fmt.Errorf("the regression test did not run (exit %d): %s", res.ExitCode, tailText(string(res.Output), 800))
	}
	j.Grounded = Grounded(Frames(string(res.Output), wt), rt.Path)
	return nil
}

// writeInTree writes a repository-relative file under root, refusing
// anything that would leave it through a symlinked directory.
func writeInTree(root, rel string, b []byte) error {
	r, err := os.OpenRoot(root)
	if err != nil {
		return fmt.Errorf("write %s: %w", rel, err)
	}
	defer r.Close()
	dir := filepath.Dir(filepath.FromSlash(rel))
	if dir != "." {
		if err := r.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("write %s: %w", rel, err)
		}
	}
	if err := r.WriteFile(filepath.FromSlash(rel), b, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", rel, err)
	}
	return nil
}

func shortSHA(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// PublishStage pushes the branch and opens or updates the PR.
type PublishStage struct{ f *Fixer }

// Name implements Stage.
func (PublishStage) Name() string { return "publish" }

// Run pushes j.Commit to fleetd/fix-<fp> and opens the fingerprint's PR,
// or updates it when one is open (force-push, edit title, body, draft state
// and labels). It refuses below dial propose, never reopens within Cooldown
// of a PR closed unmerged, leaves a merged one to Poll, and opens a new PR
// only within MaxOpenPRs and MaxPRsPerHour.
func (s PublishStage) Run(ctx context.Context, j *Job) error {
	f := s.f
	defer j.time("forge", time.Now())
	if j.DryRun {
		j.Outcome = OutcomeDryRun
		return errStop
	}
	if f.cfg.Dial != nil {
		d, err := f.cfg.Dial.Dial()
		if err != nil {
			return fmt.Errorf("read the dial: %w", err)
		}
		if d < fleet.Propose {
			return fmt.Errorf("%w (it is %s)", ErrDial, d)
		}
	}
	branch := BranchFor(j.Item.ID)
	recs, err := LoadRecords(f.cfg.StateDir)
	if err != nil {
		return err
	}
	rec, _ := findRecord(recs, j.Item.ID)
	pr, err := f.existing(ctx, rec, branch)
	if err != nil {
		return err
	}
	now := f.cfg.Now()
	req := PRRequest{Branch: branch, Base: f.cfg.Repo.BaseBranch(), Title: prTitle(j), Body: prBody(j, f.cfg.ModelName), Draft: !j.Verified, Labels: labels(j.Item.Severity)}
	if pr != nil && pr.State == StateMerged && rec.Recheck != "" {
		// Merged and re-checked, and handed over again (regressed, or the
		// merge did not fix it): a new PR on the same branch.
		pr = nil
	}
	if pr != nil && pr.State == StateMerged {
		j.PR, j.Outcome = pr, OutcomeMerged
		_, err := updateRecord(f.cfg.StateDir, j.Item.ID, func(r *Record) { r.applyPR(pr) })
		if err != nil {
			return err
		}
		return errStop
	}
	if pr != nil && pr.Active() {
		if err := f.cfg.Forge.Push(ctx, f.gitDir(), j.Commit, branch); err != nil {
			return fmt.Errorf("push %s: %w", branch, err)
		}
		// Edit answers nil with its error (a reset or a timeout from the
		// forge): keep pr for the message (issue 25: it panicked here).
		edited, err := f.cfg.Forge.Edit(ctx, pr.Number, req)
		if err != nil {
			return fmt.Errorf("update PR %d: %w", pr.Number, err)
		}
		j.PR, j.Outcome = edited, OutcomeUpdated
		return f.saveOpened(j, edited, false)
	}
	closedAt := rec.ClosedAt
	if pr != nil && !pr.ClosedAt.IsZero() {
		closedAt = pr.ClosedAt
	}
	if pr != nil && pr.State == StateClosed && now.Sub(closedAt) < f.cfg.Cooldown {
		j.PR, j.Outcome = pr, OutcomeCooldown
		_, err := updateRecord(f.cfg.StateDir, j.Item.ID, func(r *Record) { r.applyPR(pr) })
		if err != nil {
			return err
		}
		return errStop
	}
	open, hour := 0, 0
	for _, r := range recs {
		if r.Fingerprint == j.Item.ID {
			continue
		}
		if r.Active() {
			open++
		}
		if !r.OpenedAt.IsZero() && now.Sub(r.OpenedAt) < time.Hour {
			hour++
		}
	}
	if open >= f.cfg.MaxOpenPRs {
		j.Outcome = OutcomeCapOpen
		return errStop
	}
	if hour >= f.cfg.MaxPRsPerHour {
		j.Outcome = OutcomeCapHour
		return errStop
	}
	if err := f.cfg.Forge.Push(ctx, f.gitDir(), j.Commit, branch); err != nil {
		return fmt.Errorf("push %s: %w", branch, err)
	}
	pr, err = f.cfg.Forge.Open(ctx, req)
	if errors.Is(err, ErrExists) {
		// Opened by an earlier job whose record was lost, or a retry of a
		// request the forge did carry out: update that one.
		var found *PR
		if found, err = f.cfg.Forge.Find(ctx, branch); err == nil && found != nil && found.Active() {
			pr, err = f.cfg.Forge.Edit(ctx, found.Number, req)
			if err == nil {
				j.PR, j.Outcome = pr, OutcomeUpdated
				return f.saveOpened(j, pr, false)
			}
		} else if err == nil {
			err = fmt.Errorf("the forge says a PR exists for %s but lists no open one", branch)
		}
	}
	if err != nil {
		return fmt.Errorf("open PR for %s: %w", branch, err)
	}
	j.PR, j.Outcome = pr, OutcomeOpened
	return f.saveOpened(j, pr, true)
}

// existing finds the fingerprint's PR: the recorded number, checked, or
// the forge's newest PR on the branch.
func (f *Fixer) existing(ctx context.Context, rec Record, branch string) (*PR, error) {
	if rec.Number > 0 {
		pr, err := f.cfg.Forge.Get(ctx, rec.Number)
		if err == nil && pr.Branch == branch {
			return pr, nil
		}
		if err != nil && ctx.Err() != nil {
			return nil, err
		}
	}
	pr, err := f.cfg.Forge.Find(ctx, branch)
	if err != nil {
		return nil, fmt.Errorf("find the PR of %s: %w", branch, err)
	}
	return pr, nil
}

// saveOpened records a PR the job opened or updated.
func (f *Fixer) saveOpened(j *Job, pr *PR, opened bool) error {
	now := f.cfg.Now().UTC()
	_, err := updateRecord(f.cfg.StateDir, j.Item.ID, func(r *Record) {
		fillRecord(r, j.Item)
		r.applyPR(pr)
		r.Branch = BranchFor(j.Item.ID)
		r.Verified, r.Verification = j.Verified, verificationLine(j)
		r.Attempts = len(j.Attempts)
		r.Regression = j.Regression
		if j.Bisect != nil {
			r.Cause = j.Bisect
		}
		r.UpdatedAt = now
		if opened {
			r.OpenedAt = now
			r.ClosedAt, r.MergedAt, r.Recheck, r.RecheckCommit, r.ResolutionEntry = time.Time{}, time.Time{}, "", "", nil
		}
	})
	return err
}

// applyPR copies what the forge says about a PR into the record.
func (r *Record) applyPR(pr *PR) {
	r.Number, r.URL, r.State = pr.Number, pr.URL, pr.State
	if pr.Branch != "" {
		r.Branch = pr.Branch
	}
	switch pr.State {
	case StateMerged:
		if r.MergedAt.IsZero() {
			r.MergedAt = orNow(pr.ClosedAt)
		}
		if r.ClosedAt.IsZero() {
			r.ClosedAt = orNow(pr.ClosedAt)
		}
	case StateClosed:
		if r.ClosedAt.IsZero() {
			r.ClosedAt = orNow(pr.ClosedAt)
		}
	}
}

func orNow(t time.Time) time.Time {
	if t.IsZero() {
		return time.Now().UTC()
	}
	return t.UTC()
}

// labels are the PR's labels: fleetd and the severity.
func labels(sev fleet.Severity) []string {
	out := []string{"fleetd"}
	if sev != "" {
		out = append(out, "severity:"+string(sev))
	}
	return out
}

// verificationLine is a record's one-line verification result.
func verificationLine(j *Job) string {
	switch {
	case j.Verified:
		return "verified: regression test fails on " + shortSHA(j.Base) + ", passes with the patch; " + strings.Join(j.Suite.Argv, " ") + " passes"
	case len(j.Attempts) > 0:
		last := j.Attempts[len(j.Attempts)-1]
		return "unverified: " + strconv.Itoa(len(j.Attempts)) + " patch attempts failed (last: " + last.Result + ")"
	case j.Regression != nil:
		return "unverified: regression test only (no model configured)"
	}
	return ""
}
