package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/qafleet/fleetd/fixer"
	"github.com/qafleet/fleetd/fixtures/testbed"
)

// demoFixStage is `fleetd demo --dial propose`'s fix stage: it makes a git
// repository of the testbed compiler's source under the data dir (once),
// and adds target.repo, a gitlocal forge and a fix pass every 15 s to the
// demo's config file. Without a model the PRs are drafts carrying the
// failing regression test. It returns the repository's directory.
func (a fixCommands) demoFixStage(ctx context.Context, out io.Writer, dataDir, cfgPath string) (string, error) {
	repo := filepath.Join(dataDir, "tinylang")
	if _, err := os.Stat(filepath.Join(repo, ".git")); err != nil {
		if err := testbed.WriteCompilerModule(repo); err != nil {
			return "", fmt.Errorf("demo fix stage: %w", err)
		}
		for _, args := range [][]string{{"init", "--quiet", "-b", "main"}, {"add", "-A"}, {"commit", "--quiet", "-m", "TinyLang compiler (from fleetd's testbed)"}} {
			if _, err := fixer.Git(ctx, repo, nil, args...); err != nil {
				return "", fmt.Errorf("demo fix stage: %w", err)
			}
		}
	}
	if err := testbed.AddDemoFixStage(cfgPath, repo); err != nil {
		return "", err
	}
	fmt.Fprintf(out, "  fixer    draft PRs for compiler crashes go to %s (branches fleetd/fix-*, records in .git/fleetd/pulls); list them with: fleetd prs --config %s\n", repo, cfgPath)
	return repo, nil
}

// demoFixSummary lists the PRs the demo's fix stage opened.
func (a fixCommands) demoFixSummary() {
	recs, err := fixer.LoadRecords(a.fixerDir())
	if err != nil || a.cfg.Forge.Kind == "" {
		return
	}
	n := 0
	for _, r := range recs {
		if r.Number > 0 {
			n++
		}
	}
	fmt.Fprintf(a.stdout, "\npull requests (fleetd prs --config %s): %d\n", a.configPath, n)
	for _, r := range recs {
		if r.Number > 0 {
			l := fixer.RowOf(r, r.UpdatedAt)
			fmt.Fprintf(a.stdout, "  %s  %-7s %-28s %s\n", r.Fingerprint, r.State, l.Verification, r.URL)
		}
	}
}
