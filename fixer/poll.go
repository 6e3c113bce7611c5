package fixer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/qafleet/fleetd/fleet"
)

// Re-check results after a merge.
const (
	RecheckResolved = "resolved"
	RecheckStill    = "still-reproduces"
)

// PollResult says what Poll learned about one PR.
type PollResult struct {
	Fingerprint string `json:"fingerprint"`
	Number      int    `json:"number"`
	From, To    string // states
	Recheck     string `json:"recheck,omitempty"`
	Resolution  *uint64
	Err         error `json:"-"`
}

// Poll refreshes every open PR from the forge and records its state. A PR
// found merged gets its regression test run on the new base (in a
// worktree under dir): when it passes, one kind=resolution ref=<fp> record
// is posted (triage then shows the cluster resolved, and a later report of
// it as regressed); when it still fails, a comment goes to the PR and the
// cluster stays open. A PR closed unmerged is recorded (Publish leaves its
// fingerprint alone for Cooldown). Merged PRs whose re-check did not finish
// (an error, a crash) are re-checked on the next Poll. Errors of one PR do
// not stop the others; they are joined.
func (f *Fixer) Poll(ctx context.Context, dir string) ([]PollResult, error) {
	unlock, err := lockState(f.cfg.StateDir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	recs, err := LoadRecords(f.cfg.StateDir)
	if err != nil {
		return nil, err
	}
	var out []PollResult
	var errs []error
	for _, rec := range recs {
		if rec.Number == 0 || !(rec.Active() || rec.State == StateMerged && rec.Recheck == "") {
			continue
		}
		res := PollResult{Fingerprint: rec.Fingerprint, Number: rec.Number, From: rec.State}
		err := f.pollOne(ctx, rec, dir, &res)
		if err != nil {
			res.Err = err
			errs = append(errs, fmt.Errorf("PR %d (%s): %w", rec.Number, rec.Fingerprint, err))
		}
		out = append(out, res)
	}
	return out, errors.Join(errs...)
}

func (f *Fixer) pollOne(ctx context.Context, rec Record, dir string, res *PollResult) error {
	pr, err := f.cfg.Forge.Get(ctx, rec.Number)
	if err != nil {
		return err
	}
	res.To = pr.State
	if _, err := updateRecord(f.cfg.StateDir, rec.Fingerprint, func(r *Record) { r.applyPR(pr) }); err != nil {
		return err
	}
	if pr.State != StateMerged || rec.Regression == nil {
		return nil
	}
	still, commit, out, err := f.recheck(ctx, rec, dir)
	if err != nil {
		return fmt.Errorf("re-check after merge: %w", err)
	}
	if still {
		res.Recheck = RecheckStill
		body := fmt.Sprintf("fleetd re-ran the regression test %s on the merged base %s and it **still fails**: the finding still reproduces, so its cluster stays open.\n\n%s",
			Code(rec.Regression.Path, 300), Code(shortSHA(commit), 20), Block(out, bodyOutput))
		if err := f.cfg.Forge.Comment(ctx, rec.Number, body); err != nil {
			return fmt.Errorf("comment on PR %d: %w", rec.Number, err)
		}
		_, err := updateRecord(f.cfg.StateDir, rec.Fingerprint, func(r *Record) { r.Recheck, r.RecheckCommit = RecheckStill, commit })
		return err
	}
	res.Recheck = RecheckResolved
	var idx *uint64
	if f.cfg.Poster != nil {
		n, err := f.cfg.Poster.Post(ctx, fleet.Finding{
			Source: f.cfg.Source, Severity: fleet.SeverityInfo, Surface: rec.Surface, Kind: fleet.KindResolution, Ref: rec.Fingerprint,
			Summary: fmt.Sprintf("Fixed by PR #%d (merged): its regression test passes on %s at %s.", rec.Number, f.cfg.Repo.BaseBranch(), shortSHA(commit)),
		})
		if err != nil {
			return fmt.Errorf("post resolution: %w", err)
		}
		idx = n
		res.Resolution = idx
	}
	_, err = updateRecord(f.cfg.StateDir, rec.Fingerprint, func(r *Record) {
		r.Recheck, r.RecheckCommit, r.ResolutionEntry = RecheckResolved, commit, idx
	})
	return err
}

// recheck runs the record's regression test on the freshly fetched base
// branch. The test file is written if the merge left it out.
func (f *Fixer) recheck(ctx context.Context, rec Record, dir string) (still bool, commit, output string, err error) {
	gitDir := f.gitDir()
	if err := EnsureBare(ctx, gitDir); err != nil {
		return false, "", "", err
	}
	commit, err = f.cfg.Forge.Fetch(ctx, gitDir, f.cfg.Repo.BaseBranch())
	if err != nil {
		return false, "", "", err
	}
	wt := filepath.Join(dir, "recheck-"+rec.Fingerprint)
	os.RemoveAll(wt)
	Git(ctx, gitDir, nil, "worktree", "prune")
	if _, err := Git(ctx, gitDir, nil, "worktree", "add", "--quiet", "--detach", wt, commit); err != nil {
		return false, "", "", err
	}
	defer func() {
		Git(context.WithoutCancel(ctx), gitDir, nil, "worktree", "remove", "--force", wt)
		Git(context.WithoutCancel(ctx), gitDir, nil, "worktree", "prune")
	}()
	rt := *rec.Regression
	if _, err := os.Stat(filepath.Join(wt, filepath.FromSlash(rt.Path))); err != nil {
		if err := writeInTree(wt, rt.Path, rt.Content); err != nil {
			return false, "", "", err
		}
	}
	r, err := f.run(ctx, wt, rt.Argv, f.cfg.RegressionTimeout+30*time.Second)
	if err != nil {
		return false, "", "", err
	}
	failed, passed := rt.verdict(r)
	if !failed && !passed {
		return false, "", "", fmt.Errorf("the regression test did not run on %s (exit %d): %s", shortSHA(commit), r.ExitCode, tailText(string(r.Output), 800))
	}
	return failed, commit, tailText(string(r.Output), bodyOutput), nil
}
