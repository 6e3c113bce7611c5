package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/qafleet/fleetd/fixer"
	"github.com/qafleet/fleetd/fixtures/testbed"
	"github.com/qafleet/fleetd/fleet"
	"go.yaml.in/yaml/v3"
)

// demoRepoTest is the demo repository's test command: its TestPlantedFlaws
// asserts the testbed's planted flaws are present (a fix fails it on
// purpose), so the fix stage verifies against the rest of the suite.
var demoRepoTest = []string{"go", "test", "-count=1", "-skip", "TestPlantedFlaws", "./..."}

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
	b, err := os.ReadFile(cfgPath)
	if err != nil {
		return "", err
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		return "", fmt.Errorf("demo config: %w", err)
	}
	target, _ := cfg["target"].(map[string]any)
	if target == nil {
		return "", fmt.Errorf("demo config %s has no target", cfgPath)
	}
	target["repo"] = fleet.Repo{URL: repo, Base: "main", Test: demoRepoTest, FuzzPackage: ".", FuzzTarget: "FuzzCompile", Surfaces: []string{"compiler"}}
	cfg["forge"] = map[string]any{"kind": forgeGitLocal}
	// Every 15 s: off the 20/25/30/40 s grids the demo's probes fire on, so
	// the pass does not race them for a slot.
	cfg["fixer"] = map[string]any{"every": "15s", "max_prs_per_hour": 10, "deadline": "3m"}
	if daemon, ok := cfg["daemon"].(map[string]any); ok {
		// Slots of its own, so the fix pass is not skipped while the
		// continuous fuzz run and the probes hold the usual two.
		daemon["max_concurrent"] = 4
	}
	nb, err := yaml.Marshal(cfg)
	if err != nil {
		return "", err
	}
	nb = append([]byte("# Written by `fleetd demo`; valid while the demo runs (its chain is ephemeral).\n"), nb...)
	if err := fleet.WriteFileAtomic(cfgPath, nb, 0o600); err != nil {
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
