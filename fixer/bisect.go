package fixer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/qafleet/fleetd/fleet"
)

// Defaults of the cause bisection's bounds (Config.BisectCommits,
// Config.BisectTimeout).
const (
	DefaultBisectCommits = 64
	DefaultBisectTimeout = 10 * time.Minute
)

// Bisection is what searching the base branch's history for the commit
// that introduced a finding showed. The regression test is the judge: at
// each commit tried it is written into a scratch worktree and run, failing
// is bad, passing is good, and a commit where it does not run (the tree
// does not build) is skipped.
type Bisection struct {
	// Commit, Subject and Date name the first bad commit; empty when none
	// was found.
	Commit  string    `json:"commit,omitempty"`
	Subject string    `json:"subject,omitempty"`
	Date    time.Time `json:"date,omitzero"`
	// Oldest is the oldest commit tried (the bound's end of the base
	// branch's first-parent history); PresentSinceOldest is set when the
	// regression test fails there too, so no commit in range introduced it.
	Oldest             string `json:"oldest"`
	PresentSinceOldest bool   `json:"present_since_oldest,omitempty"`
	// Span is how many commits before base the range reaches.
	Span int `json:"span"`
	// Tried counts the commits the regression test ran at, base included.
	Tried int `json:"tried"`
	// Note says why a bisection ended without a first bad commit (the time
	// bound, the oldest commit not building, only skipped commits left).
	Note     string        `json:"note,omitempty"`
	Duration time.Duration `json:"duration"`
}

// Line is the bisection as one line for a person: the first bad commit,
// or since when the bug is present, or why neither is known.
func (b *Bisection) Line() string {
	switch {
	case b == nil:
		return ""
	case b.Commit != "":
		return fmt.Sprintf("introduced by %s %q (%s)", shortSHA(b.Commit), Inline(b.Subject, 80), b.Date.UTC().Format("2006-01-02"))
	case b.PresentSinceOldest:
		return fmt.Sprintf("present since the oldest commit tried (%s, %d commits back)", shortSHA(b.Oldest), b.Span)
	}
	return "cause not found: " + b.Note
}

// BisectStage searches the base branch's history for the commit that
// introduced the finding, with the regression test as the judge, within
// Config.BisectCommits commits and Config.BisectTimeout. It never fails the
// job: what it could not learn is its Note.
type BisectStage struct{ f *Fixer }

// Name implements Stage.
func (BisectStage) Name() string { return "bisect" }

// Run bisects when the job has a regression test that fails on base.
func (s BisectStage) Run(ctx context.Context, j *Job) error {
	f := s.f
	if f.cfg.BisectCommits < 0 || j.Regression == nil || j.Base == "" {
		return nil
	}
	defer j.time("bisect", time.Now())
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, f.cfg.BisectTimeout)
	defer cancel()
	b, err := f.bisect(ctx, j)
	if err != nil {
		if ctx.Err() != nil && context.Cause(ctx) == context.DeadlineExceeded {
			err = fmt.Errorf("stopped at the time bound (%s) after %d commits", f.cfg.BisectTimeout, b.Tried)
		}
		b.Note = err.Error()
		f.log.Warn("bisect", "fp", j.Item.ID, "err", err)
	}
	b.Duration = time.Since(start)
	j.Bisect = &b
	return f.postCause(ctx, j)
}

// postCause posts a conclusive bisection as a kind=cause ref=<fp> record
// (severity meta, fleet.Cause: commit=, date=, the subject line, or since=)
// through the Poster, once per result, and keeps it in
// the fingerprint's record. A dry run, a fixer without a Poster, a
// bisection that found nothing or had no history to search posts nothing.
func (f *Fixer) postCause(ctx context.Context, j *Job) error {
	b := j.Bisect
	key := b.Commit
	if key == "" && b.PresentSinceOldest && b.Span > 0 {
		key = "since " + b.Oldest
	}
	if key == "" || j.DryRun || f.cfg.Poster == nil {
		return nil
	}
	recs, err := LoadRecords(f.cfg.StateDir)
	if err != nil {
		return err
	}
	if r, ok := findRecord(recs, j.Item.ID); ok && r.CausePosted == key {
		return nil
	}
	var prose string
	c := fleet.Cause{Commit: b.Commit, Subject: b.Subject, Date: b.Date, Span: b.Span}
	if b.Commit != "" {
		prose = fmt.Sprintf("fleetd's fix stage bisected this cluster over %d commits of %s with its regression test: first bad commit %s (%s).",
			b.Span, f.cfg.Repo.BaseBranch(), b.Commit, b.Date.UTC().Format(time.RFC3339))
	} else {
		c.Since = b.Oldest
		prose = fmt.Sprintf("fleetd's fix stage bisected this cluster over %d commits of %s with its regression test: present since the oldest commit tried, %s.",
			b.Span, f.cfg.Repo.BaseBranch(), b.Oldest)
	}
	rec, err := c.Record(f.cfg.Source, j.Item.Surface, j.Item.ID, prose)
	if err != nil {
		return fmt.Errorf("post cause: %w", err)
	}
	idx, err := f.cfg.Poster.Post(ctx, rec)
	if err != nil {
		return fmt.Errorf("post cause: %w", err)
	}
	_, err = updateRecord(f.cfg.StateDir, j.Item.ID, func(r *Record) {
		fillRecord(r, j.Item)
		r.Cause, r.CausePosted, r.CauseEntry = b, key, idx
	})
	return err
}

// bisect runs `git bisect` in a scratch worktree of the base branch's
// history: the oldest commit within the bound is tried first; if the
// regression test passes there, git bisect between it (good) and base
// (bad, as the regression stage showed) is driven one step at a time, each
// step the regression test at the commit git picked.
func (f *Fixer) bisect(ctx context.Context, j *Job) (Bisection, error) {
	b := Bisection{Tried: 1} // base: the regression stage ran it there
	gitDir := f.gitDir()
	list, err := Git(ctx, gitDir, nil, "rev-list", "--first-parent", fmt.Sprintf("--max-count=%d", f.cfg.BisectCommits+1), j.Base)
	if err != nil {
		return b, err
	}
	commits := strings.Fields(list)
	if len(commits) == 0 {
		return b, fmt.Errorf("no history at %s", shortSHA(j.Base))
	}
	b.Oldest, b.Span = commits[len(commits)-1], len(commits)-1
	if len(commits) == 1 {
		b.PresentSinceOldest = true // base is the oldest commit there is
		return b, nil
	}
	wt := filepath.Join(j.Dir, "bisect")
	os.RemoveAll(wt)
	Git(ctx, gitDir, nil, "worktree", "prune")
	if _, err := Git(ctx, gitDir, nil, "worktree", "add", "--quiet", "--detach", wt, b.Oldest); err != nil {
		return b, err
	}
	defer func() {
		bg := context.WithoutCancel(ctx)
		Git(bg, wt, nil, "bisect", "reset", "--quiet")
		if _, err := Git(bg, gitDir, nil, "worktree", "remove", "--force", wt); err != nil {
			os.RemoveAll(wt)
		}
		Git(bg, gitDir, nil, "worktree", "prune")
	}()
	rt := *j.Regression
	// try runs the regression test at the commit checked out in wt:
	// "bad", "good" or "skip", as git bisect names them.
	try := func() (string, error) {
		b.Tried++
		if err := writeInTree(wt, rt.Path, rt.Content); err != nil {
			return "", err
		}
		res, err := f.run(ctx, wt, rt.Argv, f.cfg.RegressionTimeout+30*time.Second)
		if err != nil {
			return "", err
		}
		// Leave the tree as git had it, so the next checkout is clean.
		if _, err := Git(ctx, wt, nil, "clean", "-fdq", "--", rt.Path); err != nil {
			return "", err
		}
		if _, err := Git(ctx, wt, nil, "checkout", "--quiet", "--", "."); err != nil {
			return "", err
		}
		switch failed, passed := rt.verdict(res); {
		case failed:
			return "bad", nil
		case passed:
			return "good", nil
		}
		return "skip", nil
	}
	verdict, err := try()
	if err != nil {
		return b, err
	}
	switch verdict {
	case "bad":
		b.PresentSinceOldest = true
		return b, nil
	case "skip":
		return b, fmt.Errorf("the regression test does not run at the oldest commit tried (%s): no good commit to start from", shortSHA(b.Oldest))
	}
	out, err := Git(ctx, wt, nil, "bisect", "start", "--first-parent", j.Base, b.Oldest)
	for range len(commits) + 1 {
		if err != nil {
			return b, err
		}
		if first, ok := firstBad(out); ok {
			line, err := Git(ctx, gitDir, nil, "log", "-1", "--format=%H%x00%s%x00%cI", first)
			if err != nil {
				return b, err
			}
			parts := strings.SplitN(line, "\x00", 3)
			if len(parts) != 3 {
				return b, fmt.Errorf("git log %s: %q", shortSHA(first), line)
			}
			b.Commit, b.Subject = parts[0], parts[1]
			b.Date, _ = time.Parse(time.RFC3339, parts[2])
			return b, nil
		}
		if strings.Contains(out, "only 'skip'ped commits left") {
			return b, errors.New("only commits where the regression test does not run are left between the last good and the first bad")
		}
		if verdict, err = try(); err != nil {
			return b, err
		}
		out, err = Git(ctx, wt, nil, "bisect", verdict)
	}
	return b, errors.New("git bisect did not converge")
}

// firstBad reads "<hash> is the first bad commit" from git bisect's output.
func firstBad(out string) (string, bool) {
	for _, line := range strings.Split(out, "\n") {
		if h, ok := strings.CutSuffix(strings.TrimSpace(line), " is the first bad commit"); ok && len(h) >= 7 {
			return h, true
		}
	}
	return "", false
}
