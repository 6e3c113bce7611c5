package fixer

import (
	"context"
	"errors"
	"time"
)

// Forge is where pull requests live: GitHub, GitHub Enterprise, any server
// speaking the GitHub REST API (fixer/github), or a local repository with
// PR record files (fixer/gitlocal). It has no merge method: fleetd proposes,
// a human merges.
type Forge interface {
	// Fetch fetches branch from the repository into the bare repository
	// gitDir and returns the commit it points at.
	Fetch(ctx context.Context, gitDir, branch string) (string, error)
	// Push force-pushes commit from gitDir to branch of the repository.
	Push(ctx context.Context, gitDir, commit, branch string) error
	// Find returns the most recent PR whose head is branch, in any state,
	// or nil when there is none.
	Find(ctx context.Context, branch string) (*PR, error)
	// Get returns PR number.
	Get(ctx context.Context, number int) (*PR, error)
	// Open opens a PR. An error wrapping ErrExists means a PR for that head
	// already exists (GitHub answers 422, Gitea 409).
	Open(ctx context.Context, req PRRequest) (*PR, error)
	// Edit replaces the title, body, draft state and labels of PR number.
	Edit(ctx context.Context, number int, req PRRequest) (*PR, error)
	// Comment adds a comment to PR number.
	Comment(ctx context.Context, number int, body string) error
}

// ErrExists is wrapped by Forge.Open when the head already has an open PR.
var ErrExists = errors.New("pull request already exists")

// PR states as fleetd reports them.
const (
	StateDraft  = "draft"
	StateOpen   = "open"
	StateMerged = "merged"
	StateClosed = "closed" // closed without merging
)

// PR is a pull request as a forge reports it.
type PR struct {
	Number      int       `json:"number"`
	URL         string    `json:"url"`
	Branch      string    `json:"branch"` // head branch
	Base        string    `json:"base"`
	Title       string    `json:"title"`
	State       string    `json:"state"` // StateDraft, StateOpen, StateMerged or StateClosed
	MergeCommit string    `json:"merge_commit,omitempty"`
	Labels      []string  `json:"labels,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at,omitzero"`
	ClosedAt    time.Time `json:"closed_at,omitzero"`
}

// Active reports whether the PR is still open (draft or ready).
func (p *PR) Active() bool { return p.State == StateOpen || p.State == StateDraft }

// PRRequest is what fleetd asks a forge to open, or to change a PR into.
type PRRequest struct {
	Branch string   // head branch, fleetd/fix-<fp>
	Base   string   // base branch
	Title  string   // plain text, already rendered inert
	Body   string   // Markdown, untrusted parts already rendered inert
	Draft  bool     // a draft: unverified, carrying the failing regression test only
	Labels []string // fleetd and the severity; created on the forge when missing
}

// BranchFor returns the PR branch of a fingerprint.
func BranchFor(fp string) string { return "fleetd/fix-" + fp }
