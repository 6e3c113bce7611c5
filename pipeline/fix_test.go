package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/qafleet/fleetd/fixer"
	"github.com/qafleet/fleetd/fixer/fixertest"
	"github.com/qafleet/fleetd/fixer/gitlocal"
	"github.com/qafleet/fleetd/fixtures/twin"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/fleet/fleettest"
	"github.com/qafleet/fleetd/sandbox"
	"github.com/qafleet/fleetd/triage"
)

// TestFixDryRun composes the fix pipeline on the testbed compiler as a git
// repository with the local forge and no model, and runs one dry job on a
// qa_compile repro: the reproducer replays it through the tool in a
// sandbox run of its own (the fake compiler crashes), the regression test
// fails on base, nothing is pushed, and both sandbox runs are closed.
func TestFixDryRun(t *testing.T) {
	fixertest.HaveGo(t)
	ctx := context.Background()
	repo := fixertest.CompilerRepo(t)
	forge, err := gitlocal.New(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	cfg := FixConfig{
		Repo: fixertest.CompilerRepoConfig(repo), StateDir: data + "/fixer", SandboxDir: data + "/qa-sandbox", Forge: forge,
		Tools: newTools(t), Dial: fleettest.Dial(fleet.Propose), Budget: fleet.Budget{MaxTokens: 1000, Deadline: time.Minute},
	}
	p, err := NewFix(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	wi := triage.WorkItem{
		ID: "0123456789abcdef", Title: "compile panic on enum E {}", Severity: fleet.SeverityHigh, Surface: fleet.SurfaceCompiler,
		Repro: fleet.Repro{Tool: "qa_compile", Args: []byte(`{"source":"enum E {}"}`)}, Entries: []uint64{5, 3}, Sources: []string{"qa-fuzz"},
	}
	it := p.Item(ctx, wi)
	if it.Latest != 5 || len(it.Entries) != 2 || it.Entries[0] != (fixer.Entry{Index: 5}) {
		t.Errorf("item without a log: latest %d, entries %+v", it.Latest, it.Entries)
	}
	j, err := p.Run(ctx, it, true)
	if err != nil {
		t.Fatalf("Run: %v (job %+v)", err, j)
	}
	if j.Outcome != fixer.OutcomeDryRun || j.Repro == nil || !j.Repro.Reproduced || j.Repro.RunID == "" || string(j.Repro.Input) != "enum E {}" || j.Regression == nil {
		t.Errorf("job: outcome %s, repro %+v, regression %+v, error %q", j.Outcome, j.Repro, j.Regression, j.Error)
	}
	if got := fixertest.Git(t, repo, "branch", "--list", "fleetd/fix-*"); got != "" {
		t.Errorf("a dry run pushed %q", got)
	}
	if crashed, err := sandbox.FindCrashed(cfg.SandboxDir); err != nil || len(crashed) != 0 {
		t.Errorf("sandbox runs left open: %+v %v", crashed, err)
	}
}

func TestNextWorkItem(t *testing.T) {
	repo := fixertest.CompilerRepoConfig("x")
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	wi := func(id string, surface fleet.Surface, entries ...uint64) triage.WorkItem {
		return triage.WorkItem{ID: id, Surface: surface, Entries: entries}
	}
	u := func(n uint64) *uint64 { return &n }
	items := []triage.WorkItem{wi("call1", fleet.SurfaceCall, 1), wi("open", "compiler", 2), wi("merged", "compiler", 3), wi("closed", "compiler", 4),
		wi("asked", "compiler", 5), wi("tried", "compiler", 6), wi("next", "compiler", 7), wi("last", "compiler", 8)}
	recs := []fixer.Record{
		{Fingerprint: "open", State: fixer.StateDraft},
		{Fingerprint: "merged", State: fixer.StateMerged},
		{Fingerprint: "closed", State: fixer.StateClosed, ClosedAt: now.Add(-time.Hour)},
		{Fingerprint: "asked", NeedsRepro: u(5)},
		{Fingerprint: "tried", LastRunAt: now.Add(-time.Hour), LastOutcome: fixer.OutcomeFailed},
	}
	tests := []struct {
		name string
		recs []fixer.Record
		want string
	}{
		{"skips what is in flight", recs, "next"},
		{"a closed PR after its cooldown", append(recs[:2:2], fixer.Record{Fingerprint: "closed", State: fixer.StateClosed, ClosedAt: now.Add(-8 * 24 * time.Hour)}), "closed"},
		{"a merged, resolved PR that regressed", []fixer.Record{{Fingerprint: "open", State: fixer.StateOpen}, {Fingerprint: "merged", State: fixer.StateMerged, Recheck: fixer.RecheckResolved}}, "merged"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := nextWorkItem(items, tc.recs, repo, fixer.DefaultCooldown, now)
			if !ok || got.ID != tc.want {
				t.Errorf("next = %q %v, want %q", got.ID, ok, tc.want)
			}
		})
	}
	if _, ok := nextWorkItem(items[:1], nil, repo, fixer.DefaultCooldown, now); ok {
		t.Error("took a work item on a surface the repository does not own")
	}
}

// TestFixPass runs the daemon's pass twice on a report with one trusted
// compiler crash: the first takes it and opens a draft PR (no model), the
// second finds nothing to take because that PR is in flight; an
// untrusted cluster is never taken.
func TestFixPass(t *testing.T) {
	fixertest.HaveGo(t)
	ctx := context.Background()
	repo := fixertest.CompilerRepo(t)
	forge, err := gitlocal.New(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	p, err := NewFix(ctx, FixConfig{
		Repo: fixertest.CompilerRepoConfig(repo), StateDir: data + "/fixer", SandboxDir: data + "/qa-sandbox", Forge: forge,
		Tools: newTools(t), Dial: fleettest.Dial(fleet.Propose), Budget: fleet.Budget{MaxTokens: 1000, Deadline: time.Minute},
	})
	if err != nil {
		t.Fatal(err)
	}
	repro := &fleet.Repro{Tool: "qa_compile", Args: []byte(`{"source":"enum E {}"}`)}
	report := fleet.Report{Schema: 1, Clusters: []fleet.Cluster{
		{ID: "untrusted0000000", State: fleet.ClusterOpen, Surface: fleet.SurfaceCompiler, Severity: fleet.SeverityCritical, Repro: repro, Entries: []uint64{1}},
		{ID: "0123456789abcdef", State: fleet.ClusterOpen, Trusted: true, Surface: fleet.SurfaceCompiler, Severity: fleet.SeverityHigh,
			Title: "compile panic on enum E {}", Repro: repro, Entries: []uint64{2}},
	}}
	var said []string
	say := func(format string, args ...any) { said = append(said, fmt.Sprintf(format, args...)) }
	res, err := p.Pass(ctx, report, time.Now(), say)
	if err != nil {
		t.Fatalf("first pass: %v (%+v)", err, res)
	}
	if res.Took != "0123456789abcdef" || !strings.Contains(res.Summary, "PR #1") {
		t.Errorf("first pass: %+v", res)
	}
	if len(said) < 2 || !strings.HasPrefix(said[0], "taking 0123456789abcdef: high compiler") {
		t.Errorf("first pass said %q", said)
	}
	res, err = p.Pass(ctx, report, time.Now(), nil)
	if err != nil || res.Took != "" || res.Summary != "no work item to take" {
		t.Errorf("second pass, with the PR in flight: %+v, %v", res, err)
	}
}

// TestFixKeepsAnErroredReplay runs a job whose replay is cut short: a
// qa_authz repro against Keyring with a replay budget of one write (a's
// sign-in; b's is refused). The job fails, and its verdict and record
// keep what the errored call returned: the job's error names the budget
// and a's account left on the platform, the job's Repro holds the call's
// error, result and leftovers, the job file on disk says the same, and
// the pass's line in the run list carries the error. Before, the job held
// the error alone and what the replay left was nowhere.
func TestFixKeepsAnErroredReplay(t *testing.T) {
	ctx := context.Background()
	repo := fixertest.CompilerRepo(t)
	forge, err := gitlocal.New(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	_, env, repro := keyringRepro(t, twin.Flawed)
	data := t.TempDir()
	cfg := FixConfig{
		Repo: fixertest.CompilerRepoConfig(repo), StateDir: data + "/fixer", SandboxDir: data + "/qa-sandbox", Forge: forge,
		Tools: env, Dial: fleettest.Dial(fleet.Propose), Budget: fleet.Budget{MaxWrites: 1, MaxTokens: 1000, Deadline: time.Minute},
	}
	p, err := NewFix(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	it := p.Item(ctx, triage.WorkItem{ID: "0123456789abcdef", Title: "b reads a's settings", Severity: fleet.SeverityHigh, Surface: fleet.SurfaceCompiler, Repro: repro, Entries: []uint64{1}})
	j, err := p.Run(ctx, it, true)
	const account = "the accounts of fresh identities authz1a"
	if err == nil || j == nil || j.Outcome != fixer.OutcomeFailed || !strings.Contains(j.Error, "budget") || !strings.Contains(j.Error, "left on the platform: "+account) {
		t.Fatalf("job %+v, %v: want failed with the budget's error and a's account left", j, err)
	}
	if r := j.Repro; r == nil || r.RunID == "" || !strings.Contains(r.Error, "budget") || r.Result == nil || len(r.LeftOnPlatform) != 1 || !strings.HasPrefix(r.LeftOnPlatform[0], account) {
		t.Errorf("the job's reproduction %+v: want the errored call's run, error, result and leftovers", r)
	}
	files, _ := filepath.Glob(filepath.Join(cfg.StateDir, "jobs", it.ID, "*.json"))
	if len(files) != 1 {
		t.Fatalf("job files %q, want one", files)
	}
	raw, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		Repro struct {
			Error  string         `json:"error"`
			Result map[string]any `json:"result"`
			Left   []string       `json:"left_on_platform"`
		} `json:"repro"`
	}
	if err := json.Unmarshal(raw, &rec); err != nil || !strings.Contains(rec.Repro.Error, "budget") || rec.Repro.Result["written"] == nil || len(rec.Repro.Left) != 1 {
		t.Errorf("the job file's repro %+v (%v): want the error, the result with what it wrote, and a's account", rec.Repro, err)
	}
	if line := jobLine(j); !strings.HasPrefix(line, "failed: ") || !strings.Contains(line, account) {
		t.Errorf("the run list's line %q does not say what the replay left", line)
	}
	if crashed, err := sandbox.FindCrashed(cfg.SandboxDir); err != nil || len(crashed) != 0 {
		t.Errorf("sandbox runs left open: %+v %v", crashed, err)
	}
}
