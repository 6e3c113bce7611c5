package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/qafleet/fleetd/fixer"
	"github.com/qafleet/fleetd/fixer/fixertest"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/fleet/fleettest"
	"github.com/qafleet/fleetd/triage"
)

// BenchmarkFixCommand times `fleetd fix FP` on the testbed compiler's
// panic end to end (triage, the entries' transactions, the job, the PR),
// on the embedded chain, with the real reproducer (qa_compile running the
// testbed compiler in a fresh sandbox), reporting the job's phases in
// ms/op: forge gitlocal or Gitea (when FLEETD_GITEA is set), model
// scripted (verified PR) or none (draft). After the first run each job
// updates the fingerprint's PR (force-push and edit), as a second run does.
func BenchmarkFixCommand(b *testing.B) {
	fixertest.HaveGo(b)
	for _, forge := range []string{"gitlocal", "gitea"} {
		for _, mode := range []string{"verified", "draft"} {
			b.Run(forge+"/"+mode, func(b *testing.B) { benchFix(b, forge, mode) })
		}
	}
}

func benchFix(b *testing.B, forge, mode string) {
	f := newFleetFixture(b, fleet.Propose, nil)
	repo := fixertest.CompilerRepo(b)
	fixerCfg := map[string]any{"max_open_prs": 100, "max_prs_per_hour": 100}
	models := map[string]any{}
	if mode == "verified" {
		good := fixertest.CorrectPatch(b)
		srv := fleettest.NewChatServer(b, func(int, fleettest.ChatRequest) fleettest.ChatReply {
			return fleettest.ChatReply{Tool: fixer.ProposePatch, Args: map[string]string{"diff": good}}
		})
		fixerCfg["planner"] = "openai"
		models["openai"] = map[string]any{"base_url": srv.URL(), "model": "fake-coder"}
	}
	forgeCfg := map[string]any{"kind": "gitlocal"}
	repoURL := repo
	if forge == "gitea" {
		g := fixertest.Start(b)
		repoURL = g.CreateRepo(b, "tinylang", repo)
		tok := filepath.Join(b.TempDir(), "tok")
		os.WriteFile(tok, []byte(g.Token), 0o600)
		forgeCfg = map[string]any{"kind": "github", "base_url": g.URL + "/api/v1/", "owner": g.User, "repo": "tinylang", "token_file": tok}
	}
	patchConfig(b, f.config, func(cfg map[string]any) {
		cfg["target"].(map[string]any)["repo"] = fixertest.CompilerRepoConfig(repoURL)
		cfg["forge"], cfg["fixer"] = forgeCfg, fixerCfg
		if len(models) > 0 {
			cfg["models"] = models
		}
	})
	c := []string{"--config", f.config}
	runB(b, append(c, "findings", "post", "--text", "qa/v1 source=qa-fuzz sev=high surface=compiler run=r-1\ncompile panic on enum E {}\nrepro: qa_compile {\"source\":\"enum E {}\"}")...)
	runB(b, append(c, "triage")...)
	rep, err := triage.LoadReport(filepath.Join(f.dataDir, "reports"))
	if err != nil || len(triage.WorkItems(rep)) != 1 {
		b.Fatalf("work items: %v %v", triage.WorkItems(rep), err)
	}
	fp := triage.WorkItems(rep)[0].ID
	phases := []string{"reproduce", "regression", "patch", "verify", "forge"}
	sum := map[string]time.Duration{}
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		out := runB(b, append(c, "fix", "--json", fp)...)
		var j fixer.Job
		if err := json.Unmarshal([]byte(strings.SplitN(out, "\n", 2)[0]), &j); err != nil {
			b.Fatalf("fix --json: %v: %s", err, out)
		}
		if j.PR == nil || j.Verified != (mode == "verified") || (j.Outcome != fixer.OutcomeOpened && j.Outcome != fixer.OutcomeUpdated) {
			b.Fatalf("job %s verified %v PR %+v: %s", j.Outcome, j.Verified, j.PR, j.Error)
		}
		for _, p := range phases {
			sum[p] += j.Timings[p]
		}
		n++
	}
	for _, p := range phases {
		b.ReportMetric(float64(sum[p].Milliseconds())/float64(n), p+"-ms/op")
	}
}

// runB runs the CLI in-process for a benchmark and returns stdout.
func runB(b *testing.B, args ...string) string {
	b.Helper()
	var out, errb syncBuffer
	if code := Main(b.Context(), args, strings.NewReader(""), &out, &errb); code != 0 {
		b.Fatalf("fleetd %s: exit %d\n%s\n%s", strings.Join(args, " "), code, out.String(), errb.String())
	}
	return out.String()
}
