package pipeline

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/qafleet/fleetd/fixer"
	"github.com/qafleet/fleetd/fixer/github"
	"github.com/qafleet/fleetd/fixer/gitlocal"
)

// TestNewForge builds each forge kind: gitlocal over a local repository,
// github with the token asked for once; a token that cannot be read, a
// backend that refuses its config and an unknown kind are errors.
func TestNewForge(t *testing.T) {
	ctx := context.Background()
	repo := t.TempDir()
	if _, err := fixer.Git(ctx, repo, nil, "init", "-q"); err != nil {
		t.Fatal(err)
	}
	f, err := NewForge(ctx, ForgeConfig{Kind: ForgeGitLocal, RepoURL: repo})
	if _, ok := f.(*gitlocal.Forge); err != nil || !ok {
		t.Errorf("gitlocal: %T, %v", f, err)
	}
	if _, err := NewForge(ctx, ForgeConfig{Kind: ForgeGitLocal, RepoURL: repo + "/nope"}); err == nil || !strings.HasPrefix(err.Error(), "forge: ") {
		t.Errorf("gitlocal over no repository: %v", err)
	}
	asked := 0
	tok := func() (string, error) { asked++; return "t0ken", nil }
	f, err = NewForge(ctx, ForgeConfig{Kind: ForgeGitHub, BaseURL: "http://127.0.0.1:1/", Owner: "o", Repo: "r", RepoURL: repo, Token: tok})
	if _, ok := f.(*github.Forge); err != nil || !ok || asked != 1 {
		t.Errorf("github: %T, %v, token asked %d times", f, err, asked)
	}
	if _, err := NewForge(ctx, ForgeConfig{Kind: ForgeGitHub, RepoURL: repo, Token: tok}); err == nil || !strings.HasPrefix(err.Error(), "forge: github forge: owner and repo") {
		t.Errorf("github without owner and repo: %v", err)
	}
	bad := errors.New("forge.token_file: mode 644")
	if _, err := NewForge(ctx, ForgeConfig{Kind: ForgeGitHub, Owner: "o", Repo: "r", RepoURL: repo, Token: func() (string, error) { return "", bad }}); !errors.Is(err, bad) {
		t.Errorf("unreadable token: %v", err)
	}
	if _, err := NewForge(ctx, ForgeConfig{Kind: "gitea"}); err == nil || !strings.Contains(err.Error(), `"gitea"`) {
		t.Errorf("unknown kind: %v", err)
	}
}
