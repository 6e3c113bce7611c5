package pipeline

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/qafleet/fleetd/fixer"
	"github.com/qafleet/fleetd/fixer/github"
	"github.com/qafleet/fleetd/fixer/gitlocal"
)

// Forge kinds (forge.kind).
const (
	ForgeGitHub   = "github"
	ForgeGitLocal = "gitlocal"
)

// ForgeConfig is where the fix stage opens pull requests (forge:), as
// values.
type ForgeConfig struct {
	Kind                 string // ForgeGitHub or ForgeGitLocal
	BaseURL, Owner, Repo string // github: the REST API root and the repository
	RepoURL              string // target.repo.url: the repository cloned
	// Token returns the API token (github only); it is asked once, here.
	Token  func() (string, error)
	Logger *slog.Logger
}

// NewForge builds the forge backend c names: a GitHub-API server
// (fixer/github) or a branch in a local repository (fixer/gitlocal).
// Errors are the token's, or the backend's prefixed "forge: ".
func NewForge(ctx context.Context, c ForgeConfig) (fixer.Forge, error) {
	switch c.Kind {
	case ForgeGitLocal:
		f, err := gitlocal.New(ctx, c.RepoURL)
		if err != nil {
			return nil, fmt.Errorf("forge: %w", err)
		}
		return f, nil
	case ForgeGitHub:
		tok, err := c.Token()
		if err != nil {
			return nil, err
		}
		f, err := github.New(github.Config{BaseURL: c.BaseURL, Owner: c.Owner, Repo: c.Repo, RepoURL: c.RepoURL, Token: tok, Logger: c.Logger})
		if err != nil {
			return nil, fmt.Errorf("forge: %w", err)
		}
		return f, nil
	}
	return nil, fmt.Errorf("forge.kind: %q is not github or gitlocal", c.Kind)
}
