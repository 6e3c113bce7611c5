// Package gitlocal is the offline forge: a pull request is a branch pushed
// into a local git repository plus a PR record file, for the demo and for
// air-gapped users.
//
// Records live in <git-dir>/fleetd/pulls/<number>.json (inside the
// repository's .git, so they are never committed). A human reviews the
// branch (git log -p main..fleetd/fix-<fp>) and merges it with git merge;
// Get then reports the PR merged, because the branch's head is an ancestor
// of the base branch. To close one unmerged, set "state": "closed" in its
// record or delete the branch without merging it. Like every forge, it has
// no merge method.
package gitlocal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/qafleet/fleetd/fixer"
	"github.com/qafleet/fleetd/fleet"
)

// Forge is a local repository with PR record files.
type Forge struct {
	repo string // the repository's working tree or bare directory
	dir  string // the PR records
	now  func() time.Time
}

var _ fixer.Forge = (*Forge)(nil)

// New opens the forge for the local repository at repo (a working tree or
// a bare repository). The error says when repo is not a git repository.
func New(ctx context.Context, repo string) (*Forge, error) {
	abs, err := filepath.Abs(repo)
	if err != nil {
		return nil, fmt.Errorf("gitlocal: %w", err)
	}
	gitDir, err := fixer.Git(ctx, abs, nil, "rev-parse", "--absolute-git-dir")
	if err != nil {
		return nil, fmt.Errorf("gitlocal: %s is not a git repository: %w", abs, err)
	}
	return &Forge{repo: abs, dir: filepath.Join(gitDir, "fleetd", "pulls"), now: time.Now}, nil
}

// RecordsDir is where the PR record files are.
func (f *Forge) RecordsDir() string { return f.dir }

// record is one PR record file.
type record struct {
	Number    int       `json:"number"`
	Branch    string    `json:"branch"`
	Base      string    `json:"base"`
	Title     string    `json:"title"`
	Body      string    `json:"body"`
	Draft     bool      `json:"draft"`
	State     string    `json:"state"` // open, closed or merged
	Labels    []string  `json:"labels"`
	Head      string    `json:"head"` // the commit last pushed
	Merge     string    `json:"merge_commit,omitempty"`
	Comments  []comment `json:"comments,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	ClosedAt  time.Time `json:"closed_at,omitzero"`
}

type comment struct {
	At   time.Time `json:"at"`
	Body string    `json:"body"`
}

// Fetch fetches branch from the local repository into gitDir.
func (f *Forge) Fetch(ctx context.Context, gitDir, branch string) (string, error) {
	ref := "refs/fleetd/base/" + branch
	if _, err := fixer.Git(ctx, gitDir, nil, "fetch", "--quiet", "--force", "--no-tags", f.repo, "+refs/heads/"+branch+":"+ref); err != nil {
		return "", fmt.Errorf("gitlocal fetch: %w", err)
	}
	return fixer.Git(ctx, gitDir, nil, "rev-parse", ref)
}

// Push force-pushes commit to branch of the local repository.
func (f *Forge) Push(ctx context.Context, gitDir, commit, branch string) error {
	if _, err := fixer.Git(ctx, gitDir, nil, "push", "--quiet", "--force", f.repo, commit+":refs/heads/"+branch); err != nil {
		return fmt.Errorf("gitlocal push: %w", err)
	}
	return f.setHead(branch, commit)
}

// setHead records the pushed commit in the branch's active record, so a
// merged-then-deleted branch is still recognised as merged.
func (f *Forge) setHead(branch, commit string) error {
	recs, err := f.all()
	if err != nil {
		return err
	}
	for _, r := range recs {
		if r.Branch == branch && r.State == fixer.StateOpen {
			r.Head = commit
			return f.write(&r)
		}
	}
	return nil
}

// Find returns the newest PR on branch, or nil.
func (f *Forge) Find(ctx context.Context, branch string) (*fixer.PR, error) {
	recs, err := f.all()
	if err != nil {
		return nil, err
	}
	for i := len(recs) - 1; i >= 0; i-- {
		if recs[i].Branch == branch {
			return f.get(ctx, recs[i].Number)
		}
	}
	return nil, nil
}

// Get returns PR number, first noticing a merge (the branch's head, or the
// commit last pushed, is an ancestor of the base branch) or a branch
// deleted unmerged (closed).
func (f *Forge) Get(ctx context.Context, number int) (*fixer.PR, error) { return f.get(ctx, number) }

func (f *Forge) get(ctx context.Context, number int) (*fixer.PR, error) {
	r, err := f.read(number)
	if err != nil {
		return nil, err
	}
	if r.State == fixer.StateOpen {
		head := r.Head
		if h, err := fixer.Git(ctx, f.repo, nil, "rev-parse", "--verify", "--quiet", "refs/heads/"+r.Branch); err == nil && h != "" {
			head = h
		} else if ctx.Err() != nil {
			return nil, ctx.Err()
		} else if head == "" {
			head = "-"
		}
		base, berr := fixer.Git(ctx, f.repo, nil, "rev-parse", "--verify", "--quiet", "refs/heads/"+r.Base)
		switch {
		case berr != nil && ctx.Err() != nil:
			return nil, ctx.Err()
		case berr == nil && head != "-" && ancestor(ctx, f.repo, head, base):
			r.State, r.Merge, r.ClosedAt = fixer.StateMerged, base, f.now().UTC()
			if err := f.write(&r); err != nil {
				return nil, err
			}
		case head == "-" || !branchExists(ctx, f.repo, r.Branch):
			r.State, r.ClosedAt = fixer.StateClosed, f.now().UTC()
			if err := f.write(&r); err != nil {
				return nil, err
			}
		}
	}
	return f.pr(&r), nil
}

func ancestor(ctx context.Context, repo, a, b string) bool {
	_, err := fixer.Git(ctx, repo, nil, "merge-base", "--is-ancestor", a, b)
	return err == nil
}

func branchExists(ctx context.Context, repo, branch string) bool {
	_, err := fixer.Git(ctx, repo, nil, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch)
	return err == nil
}

// pr converts a record.
func (f *Forge) pr(r *record) *fixer.PR {
	state := r.State
	if state == fixer.StateOpen && r.Draft {
		state = fixer.StateDraft
	}
	u := url.URL{Scheme: "file", Path: f.path(r.Number)}
	return &fixer.PR{
		Number: r.Number, URL: u.String(), Branch: r.Branch, Base: r.Base, Title: r.Title, State: state,
		MergeCommit: r.Merge, Labels: slices.Clone(r.Labels), CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, ClosedAt: r.ClosedAt,
	}
}

// Open writes a new PR record; an open one on the same branch is ErrExists.
func (f *Forge) Open(ctx context.Context, req fixer.PRRequest) (*fixer.PR, error) {
	if err := checkBranch(req.Branch); err != nil {
		return nil, err
	}
	recs, err := f.all()
	if err != nil {
		return nil, err
	}
	next := 1
	for _, r := range recs {
		if r.Branch == req.Branch && r.State == fixer.StateOpen {
			return nil, fmt.Errorf("gitlocal: PR %d is open on %s: %w", r.Number, req.Branch, fixer.ErrExists)
		}
		next = max(next, r.Number+1)
	}
	head, _ := fixer.Git(ctx, f.repo, nil, "rev-parse", "--verify", "--quiet", "refs/heads/"+req.Branch)
	now := f.now().UTC()
	r := record{Number: next, Branch: req.Branch, Base: req.Base, Title: req.Title, Body: req.Body, Draft: req.Draft,
		State: fixer.StateOpen, Labels: slices.Clone(req.Labels), Head: head, CreatedAt: now, UpdatedAt: now}
	for {
		err := f.create(&r)
		if !errors.Is(err, fs.ErrExist) {
			if err != nil {
				return nil, err
			}
			break
		}
		r.Number++ // another process took that number
	}
	return f.pr(&r), nil
}

// Edit replaces a PR's title, body, draft state and labels.
func (f *Forge) Edit(ctx context.Context, number int, req fixer.PRRequest) (*fixer.PR, error) {
	r, err := f.read(number)
	if err != nil {
		return nil, err
	}
	r.Title, r.Body, r.Draft, r.Labels, r.UpdatedAt = req.Title, req.Body, req.Draft, slices.Clone(req.Labels), f.now().UTC()
	if h, err := fixer.Git(ctx, f.repo, nil, "rev-parse", "--verify", "--quiet", "refs/heads/"+r.Branch); err == nil && h != "" {
		r.Head = h
	}
	if err := f.write(&r); err != nil {
		return nil, err
	}
	return f.pr(&r), nil
}

// Comment appends a comment to a PR record.
func (f *Forge) Comment(_ context.Context, number int, body string) error {
	r, err := f.read(number)
	if err != nil {
		return err
	}
	r.Comments = append(r.Comments, comment{At: f.now().UTC(), Body: body})
	r.UpdatedAt = f.now().UTC()
	return f.write(&r)
}

func checkBranch(b string) error {
	if b == "" || strings.HasPrefix(b, "-") || strings.ContainsAny(b, " ~^:?*[\\") || strings.Contains(b, "..") {
		return fmt.Errorf("gitlocal: %q is not a branch name", b)
	}
	return nil
}

func (f *Forge) path(n int) string { return filepath.Join(f.dir, strconv.Itoa(n)+".json") }

// read loads record n; the error names the file.
func (f *Forge) read(n int) (record, error) {
	b, err := os.ReadFile(f.path(n))
	if err != nil {
		return record{}, fmt.Errorf("gitlocal: PR %d: %w", n, err)
	}
	r, err := decode(b)
	if err != nil {
		return record{}, fmt.Errorf("gitlocal: %s: %w", f.path(n), err)
	}
	if r.Number != n {
		return record{}, fmt.Errorf("gitlocal: %s holds PR %d", f.path(n), r.Number)
	}
	return r, nil
}

// decode parses a record strictly: fields fleetd does not write are errors.
func decode(b []byte) (record, error) {
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	var r record
	if err := dec.Decode(&r); err != nil {
		return record{}, err
	}
	switch r.State {
	case fixer.StateOpen, fixer.StateClosed, fixer.StateMerged:
	default:
		return record{}, fmt.Errorf("state %q: want open, closed or merged", r.State)
	}
	if r.Number <= 0 || checkBranch(r.Branch) != nil {
		return record{}, fmt.Errorf("bad number %d or branch %q", r.Number, r.Branch)
	}
	return r, nil
}

// all returns every record, by number.
func (f *Forge) all() ([]record, error) {
	entries, err := os.ReadDir(f.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("gitlocal: %w", err)
	}
	var out []record
	for _, e := range entries {
		n, err := strconv.Atoi(strings.TrimSuffix(e.Name(), ".json"))
		if err != nil || !strings.HasSuffix(e.Name(), ".json") || n <= 0 {
			continue
		}
		r, err := f.read(n)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b record) int { return a.Number - b.Number })
	return out, nil
}

// create writes a new record file, failing with fs.ErrExist if the number
// is taken.
func (f *Forge) create(r *record) error {
	if err := os.MkdirAll(f.dir, 0o700); err != nil {
		return fmt.Errorf("gitlocal: %w", err)
	}
	fh, err := os.OpenFile(f.path(r.Number), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return err
		}
		return fmt.Errorf("gitlocal: %w", err)
	}
	fh.Close()
	return f.write(r)
}

func (f *Forge) write(r *record) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("gitlocal: %w", err)
	}
	if err := fleet.WriteFileAtomic(f.path(r.Number), append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("gitlocal: %w", err)
	}
	return nil
}
