package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qafleet/fleetd/fixer"
	"github.com/qafleet/fleetd/fixer/fixertest"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/fleet/fleettest"
	"github.com/qafleet/fleetd/triage"
	"go.yaml.in/yaml/v3"
)

// patchConfig adds keys to a config file written by writeDemoConfig.
func patchConfig(t testing.TB, path string, fn func(cfg map[string]any)) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	fn(cfg)
	if b, err = yaml.Marshal(cfg); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestFixClosedLoop is the fix stage end to end on the embedded chain and a
// real Gitea: the fuzz probe finds the compiler crash and posts it; triage
// makes it a work item; `fleetd fix` reproduces it, commits a regression
// test that fails, takes a patch from a model (the OpenAI adapter against a
// wire-true fake scripted with the right fix), verifies it and opens a
// ready PR; a human merges it in Gitea; `fleetd fix --poll` re-checks it on
// the new base and posts kind=resolution ref=<fp>; triage shows the cluster
// resolved and `fleetd report` and `fleetd prs` show the PR.
func TestFixClosedLoop(t *testing.T) {
	t.Parallel() // its own chain and data dir; long, mostly waiting: overlaps the others
	fixertest.HaveGo(t)
	g := fixertest.Start(t) // skips without a Gitea binary
	f := newFleetFixture(t, fleet.Propose, nil)
	cloneURL := g.CreateRepo(t, "tinylang", fixertest.CompilerRepo(t))
	tokenFile := filepath.Join(t.TempDir(), "forge.token")
	if err := os.WriteFile(tokenFile, []byte(g.Token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	good := fixertest.CorrectPatch(t)
	model := fleettest.NewChatServer(t, func(int, fleettest.ChatRequest) fleettest.ChatReply {
		return fleettest.ChatReply{Tool: fixer.ProposePatch, Args: map[string]string{"diff": good, "explanation": "reject enums without variants"}}
	})
	patchConfig(t, f.config, func(cfg map[string]any) {
		target := cfg["target"].(map[string]any)
		target["repo"] = fixertest.CompilerRepoConfig(cloneURL)
		cfg["forge"] = map[string]any{"kind": "github", "base_url": g.URL + "/api/v1/", "owner": g.User, "repo": "tinylang", "token_file": tokenFile}
		cfg["fixer"] = map[string]any{"planner": "openai", "attempts": 2}
		cfg["models"] = map[string]any{"openai": map[string]any{"base_url": model.URL(), "model": "fake-coder"}}
	})
	cfgArgs := []string{"--config", f.config}

	// The fuzz probe finds the crash (its run may end at its turn budget:
	// what counts is the finding it posted).
	persona := filepath.Join(f.dataDir, "personas", "fuzz.yaml")
	pb, err := os.ReadFile(persona)
	if err != nil {
		t.Fatal(err)
	}
	var p fleet.Persona
	if err := yaml.Unmarshal(pb, &p); err != nil {
		t.Fatal(err)
	}
	p.Budget.MaxTurns = 150
	if pb, err = yaml.Marshal(p); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(persona, pb, 0o600)
	if out, errOut, code := run(t, "", append(cfgArgs, "probe", "fuzz")...); code != 0 && !strings.Contains(errOut, "budget_exhausted") {
		t.Fatalf("probe fuzz: exit %d\n%s\n%s", code, out, errOut)
	}
	if out, errOut, code := run(t, "", append(cfgArgs, "triage")...); code != 0 {
		t.Fatalf("triage: %d %s %s", code, out, errOut)
	}
	rep, err := triage.LoadReport(filepath.Join(f.dataDir, "reports"))
	if err != nil {
		t.Fatal(err)
	}
	var crash *triage.WorkItem
	for _, wi := range triage.WorkItems(rep) {
		if wi.Surface == fleet.SurfaceCompiler && strings.Contains(wi.Title, "crash") {
			crash = &wi
			break
		}
	}
	if crash == nil {
		t.Fatalf("no compiler crash work item in %+v", triage.WorkItems(rep))
	}

	// fleetd fix: a verified, ready PR.
	out, errOut, code := run(t, "", append(cfgArgs, "fix", crash.ID)...)
	if code != 0 || !strings.Contains(out, "outcome: opened (verified)") {
		t.Fatalf("fix: exit %d\n%s\n%s", code, out, errOut)
	}
	if strings.Contains(out+errOut, g.Token) {
		t.Fatal("the token appeared in fleetd's output")
	}
	var pulls []struct {
		Number int    `json:"number"`
		Draft  bool   `json:"draft"`
		Body   string `json:"body"`
	}
	g.API(t, "GET", "/repos/"+g.User+"/tinylang/pulls?state=open", nil, &pulls)
	if len(pulls) != 1 || pulls[0].Draft {
		t.Fatalf("gitea PRs %+v, want one ready PR", pulls)
	}
	for _, want := range []string{"## On-chain entries", "| " + itoaEntry(crash.Entries[0]) + " |", "0x", "## Verification"} {
		if !strings.Contains(pulls[0].Body, want) {
			t.Errorf("PR body lacks %q:\n%s", want, pulls[0].Body)
		}
	}

	// A human merges it; the poll re-checks and posts the resolution.
	g.Merge(t, "tinylang", pulls[0].Number)
	if out, errOut, code := run(t, "", append(cfgArgs, "fix", "--poll")...); code != 0 || !strings.Contains(out, "merged resolved") {
		t.Fatalf("fix --poll: exit %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = run(t, "", append(cfgArgs, "report", "--format", "json", "--top", "0")...)
	if code != 0 {
		t.Fatalf("report: %d %s", code, errOut)
	}
	var after fleet.Report
	if err := json.Unmarshal([]byte(out), &after); err != nil {
		t.Fatal(err)
	}
	for _, row := range after.Clusters {
		if row.ID != crash.ID {
			continue
		}
		if row.State != fleet.ClusterResolved || row.Correction == nil || row.PR == nil || row.PR.State != fixer.StateMerged || !row.PR.Verified {
			t.Errorf("after the merge: state %s correction %v PR %+v", row.State, row.Correction, row.PR)
		}
	}
	out, _, code = run(t, "", append(cfgArgs, "prs", "--json")...)
	var pr struct {
		Fingerprint, State, URL string
		Verified                bool
	}
	if code != 0 || json.Unmarshal([]byte(strings.SplitN(out, "\n", 2)[0]), &pr) != nil || pr.Fingerprint != crash.ID || pr.State != "merged, resolved" || !pr.Verified {
		t.Errorf("fleetd prs --json: %q", out)
	}
}

func itoaEntry(n uint64) string { b, _ := json.Marshal(n); return string(b) }

// TestFixCommandGitlocal drives fleetd fix and fleetd prs against a local
// repository: refused below propose, a dry run pushes nothing, a draft PR
// without a model, the report shows it, an unknown id and a repro that no
// longer reproduces (one kind=needs-repro record).
func TestFixCommandGitlocal(t *testing.T) {
	fixertest.HaveGo(t)
	f := newFleetFixture(t, fleet.Exercise, nil)
	repo := fixertest.CompilerRepo(t)
	patchConfig(t, f.config, func(cfg map[string]any) {
		cfg["target"].(map[string]any)["repo"] = fixertest.CompilerRepoConfig(repo)
		cfg["forge"] = map[string]any{"kind": "gitlocal"}
	})
	c := []string{"--config", f.config}
	post := func(text string) {
		t.Helper()
		if out, errOut, code := run(t, "", append(c, "findings", "post", "--text", text)...); code != 0 {
			t.Fatalf("findings post: %d %s %s", code, out, errOut)
		}
	}
	post("qa/v1 source=qa-fuzz sev=high surface=compiler run=r-1\ncompile panic on enum E {}\nrepro: qa_compile {\"source\":\"enum E {}\"}")
	post("qa/v1 source=qa-fuzz sev=medium surface=compiler run=r-1\ncompile panic on a let statement, fixed since\nrepro: qa_compile {\"source\":\"let x = 1;\"}")
	if _, errOut, code := run(t, "", append(c, "triage")...); code != 0 {
		t.Fatal(errOut)
	}
	rep, _ := triage.LoadReport(filepath.Join(f.dataDir, "reports"))
	ids := map[string]string{}
	for _, wi := range triage.WorkItems(rep) {
		ids[wi.Title] = wi.ID
	}
	crash, stale := ids["compile panic on enum E {}"], ids["compile panic on a let statement, fixed since"]
	if crash == "" || stale == "" {
		t.Fatalf("work items %v", ids)
	}
	if _, errOut, code := run(t, "", append(c, "fix", crash)...); code != exitRefused || !strings.Contains(errOut, "dial propose") {
		t.Errorf("fix at exercise: exit %d %s", code, errOut)
	}
	out, errOut, code := run(t, "", append(c, "fix", "--dry-run", crash)...)
	if code != 0 || !strings.Contains(out, "outcome: dry-run") || strings.Contains(fixertest.Git(t, repo, "branch"), "fleetd/fix-") {
		t.Errorf("dry run: exit %d\n%s\n%s", code, out, errOut)
	}
	if _, errOut, code := run(t, "", append(c, "dial", "set", "propose", "--reason", "test")...); code != 0 {
		t.Fatal(errOut)
	}
	out, errOut, code = run(t, "", append(c, "fix", crash[:8])...)
	if code != 0 || !strings.Contains(out, "outcome: opened") || !strings.Contains(out, "PR          #1 draft") {
		t.Fatalf("fix: exit %d\n%s\n%s", code, out, errOut)
	}
	if _, errOut, code := run(t, "", append(c, "fix", "ffffffffffff")...); code == 0 || !strings.Contains(errOut, "no cluster") {
		t.Errorf("fix of an unknown id: %d %s", code, errOut)
	}
	out, _, code = run(t, "", append(c, "fix", stale)...)
	if code != 0 || !strings.Contains(out, "outcome: needs-repro") {
		t.Errorf("fix of a stale repro: %d %s", code, out)
	}
	out, _, _ = run(t, "", append(c, "prs")...)
	if !strings.Contains(out, crash) || !strings.Contains(out, "draft: regression test only") || strings.Contains(out, stale) {
		t.Errorf("fleetd prs:\n%s", out)
	}
	out, _, _ = run(t, "", append(c, "report")...)
	if !strings.Contains(out, "open, PR #1 draft") {
		t.Errorf("fleetd report does not show the PR:\n%s", out)
	}
	if _, errOut, code := run(t, "", append(c, "triage")...); code != 0 {
		t.Fatal(errOut)
	}
	rep, _ = triage.LoadReport(filepath.Join(f.dataDir, "reports"))
	if rep.Totals.CorrectionsApplied != 1 {
		t.Errorf("corrections applied %d, want the one needs-repro", rep.Totals.CorrectionsApplied)
	}
}
