package gitlocal_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/qafleet/fleetd/fixer"
	"github.com/qafleet/fleetd/fixer/fixertest"
	"github.com/qafleet/fleetd/fixer/gitlocal"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/fleet/fleettest"
	"github.com/qafleet/fleetd/sandbox"
)

// crashItem is the work item of the compiler's panic on an enum without
// variants, as triage would hand it over.
func crashItem(id, title, source string) fixer.Item {
	args, _ := json.Marshal(map[string]string{"source": source})
	return fixer.Item{
		ID: id, Title: title, Severity: fleet.SeverityHigh, Surface: fleet.SurfaceCompiler,
		Repro: fleet.Repro{Tool: "qa_compile", Args: args}, Sources: []string{"qa-fuzz"}, Latest: 7,
		Entries: []fixer.Entry{{Index: 3, Sender: fleet.Address{0xab}, Time: time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC), Tx: "0x" + strings.Repeat("cd", 32)}},
	}
}

const fpA = "0123456789abcdef"

type env struct {
	repo   string
	forge  *gitlocal.Forge
	state  string
	poster *fixertest.Poster
	repro  *fixertest.Reproducer
}

func newEnv(t *testing.T) *env {
	t.Helper()
	fixertest.HaveGo(t)
	e := &env{repo: fixertest.CompilerRepo(t), state: filepath.Join(t.TempDir(), "fixer"), poster: &fixertest.Poster{Next: 100}, repro: &fixertest.Reproducer{}}
	var err error
	if e.forge, err = gitlocal.New(context.Background(), e.repo); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) fixer(t *testing.T, model fleet.Model, mod func(*fixer.Config)) *fixer.Fixer {
	t.Helper()
	cfg := fixer.Config{
		Repo: fixertest.CompilerRepoConfig(e.repo), StateDir: e.state, Forge: e.forge, Reproducer: e.repro, Poster: e.poster,
		Model: model, ModelName: "fake", Dial: fleettest.Dial(fleet.Propose), Attempts: 2, TestEnv: fixertest.TestEnv(t),
	}
	if mod != nil {
		mod(&cfg)
	}
	f, err := fixer.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func fix(t *testing.T, f *fixer.Fixer, it fixer.Item) *fixer.Job {
	t.Helper()
	j, err := f.Fix(context.Background(), it, nil, fixer.JobOptions{Dir: filepath.Join(t.TempDir(), "job")})
	if err != nil {
		t.Fatalf("Fix: %v (job %+v)", err, j)
	}
	return j
}

// TestForgeCannotMerge: the local forge has no merge method either.
func TestForgeCannotMerge(t *testing.T) {
	ty := reflect.TypeFor[*gitlocal.Forge]()
	for i := range ty.NumMethod() {
		if strings.Contains(strings.ToLower(ty.Method(i).Name), "merge") {
			t.Errorf("gitlocal.Forge has %s", ty.Method(i).Name)
		}
	}
}

// TestDraftWithoutModel: no model, a draft PR carrying only the failing
// regression test; a second run updates that PR and opens no other; after
// a human merges the fix, Poll re-checks and posts the resolution.
func TestDraftWithoutModel(t *testing.T) {
	e := newEnv(t)
	f := e.fixer(t, nil, nil)
	it := crashItem(fpA, "compile panic on `enum E {}` @maintainer <b>see https://evil.example</b>", "enum E {}")
	j := fix(t, f, it)
	if j.Outcome != fixer.OutcomeOpened || j.Verified || j.PR == nil || j.PR.State != fixer.StateDraft {
		t.Fatalf("outcome %s verified %v PR %+v, want a draft opened", j.Outcome, j.Verified, j.PR)
	}
	for _, phase := range []string{"reproduce", "regression", "forge"} {
		if j.Timings[phase] <= 0 {
			t.Errorf("no %s timing: %v", phase, j.Timings)
		}
	}
	branch := fixer.BranchFor(fpA)
	files := fixertest.Git(t, e.repo, "diff", "--name-only", "main", branch)
	if files != "testdata/fuzz/FuzzCompile/fleetd-"+fpA {
		t.Errorf("the draft changes %q, want only the regression test", files)
	}
	corpus := fixertest.Git(t, e.repo, "show", branch+":testdata/fuzz/FuzzCompile/fleetd-"+fpA)
	if corpus != "go test fuzz v1\n[]byte(\"enum E {}\")" {
		t.Errorf("corpus file %q", corpus)
	}
	if !strings.Contains(j.Before.Output, "--- FAIL: FuzzCompile/fleetd-"+fpA) || !slices.Equal(j.Grounded, []string{"compile.go"}) {
		t.Errorf("fail-before output or grounded set wrong: %v\n%s", j.Grounded, j.Before.Output)
	}
	rec := readRecord(t, e.forge, 1)
	if !rec.Draft || rec.Branch != branch || !slices.Equal(rec.Labels, []string{"fleetd", "severity:high"}) {
		t.Errorf("PR record %+v", rec)
	}
	for _, bad := range []string{"@maintainer", "<b>", "https://evil"} {
		if strings.Contains(rec.Title, bad) {
			t.Errorf("title %q carries live %q", rec.Title, bad)
		}
	}
	for _, want := range []string{"## On-chain entries", "| 3 | `0xab00", "0xcdcdcd", "2026-11-24T10:00:00Z", "**Before**", "--- FAIL: FuzzCompile/fleetd-" + fpA} {
		if !strings.Contains(rec.Body, want) {
			t.Errorf("body lacks %q:\n%s", want, rec.Body)
		}
	}
	// The second run force-pushes and edits; one PR per fingerprint.
	j2 := fix(t, f, it)
	if j2.Outcome != fixer.OutcomeUpdated || j2.PR.Number != 1 {
		t.Fatalf("second run: %s PR %+v, want PR 1 updated", j2.Outcome, j2.PR)
	}
	if ents, _ := os.ReadDir(e.forge.RecordsDir()); len(ents) != 1 {
		t.Errorf("%d PR records after two runs, want 1", len(ents))
	}
	// A human fixes the bug on the draft's branch and merges it.
	fixertest.Git(t, e.repo, "checkout", "--quiet", branch)
	src, _ := os.ReadFile(filepath.Join(e.repo, "compile.go"))
	os.WriteFile(filepath.Join(e.repo, "compile.go"), []byte(strings.Replace(string(src), "\te.zero = d.variants[0].name", "\tif len(d.variants) == 0 {\n\t\tc.fail(d.pos, \"empty enum\")\n\t}\n\te.zero = d.variants[0].name", 1)), 0o644)
	fixertest.Git(t, e.repo, "commit", "--quiet", "-am", "fix empty enums")
	fixertest.Git(t, e.repo, "checkout", "--quiet", "main")
	fixertest.Git(t, e.repo, "merge", "--quiet", "--no-ff", "-m", "merge", branch)
	res, err := f.Poll(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res[0].To != fixer.StateMerged || res[0].Recheck != fixer.RecheckResolved || res[0].Resolution == nil {
		t.Fatalf("poll %+v, want merged and resolved", res)
	}
	if diff := cmp.Diff([]string{"resolution ref=" + fpA}, e.poster.Kinds()); diff != "" {
		t.Errorf("posts (-want +got):\n%s", diff)
	}
	if res, _ := f.Poll(context.Background(), t.TempDir()); len(res) != 0 {
		t.Errorf("a second poll did %+v, want nothing", res)
	}
	recs, _ := f.Records()
	if len(recs) != 1 || recs[0].State != fixer.StateMerged || recs[0].Recheck != fixer.RecheckResolved || *recs[0].ResolutionEntry != 100 {
		t.Errorf("records %+v", recs)
	}
}

func readRecord(t *testing.T, f *gitlocal.Forge, n int) (r struct {
	Title, Body, Branch, State string
	Draft                      bool
	Labels                     []string
	Comments                   []struct{ Body string }
}) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(f.RecordsDir(), "1.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestNeedsRepro: a repro that no longer reproduces gets one needs-repro
// record per state of the cluster, and no PR.
func TestNeedsRepro(t *testing.T) {
	e := newEnv(t)
	f := e.fixer(t, nil, nil)
	it := crashItem(fpA, "compile panic", "let x = 1;")
	for i, latest := range []uint64{7, 7, 8} {
		it.Latest = latest
		if j := fix(t, f, it); j.Outcome != fixer.OutcomeNeedsRepro || j.PR != nil {
			t.Fatalf("run %d: %s", i, j.Outcome)
		}
	}
	if diff := cmp.Diff([]string{"needs-repro ref=" + fpA, "needs-repro ref=" + fpA}, e.poster.Kinds()); diff != "" {
		t.Errorf("posts (-want +got):\n%s", diff)
	}
	// A record queued in the outbox (no index yet) counts as asked.
	e.poster.Queue = true
	for range 2 {
		it.Latest = 9
		fix(t, f, it)
	}
	recs, _ := fixer.LoadRecords(e.state)
	if len(e.poster.Posts) != 3 || len(recs) != 1 || *recs[0].NeedsRepro != 9 || recs[0].NeedsReproEntry != nil {
		t.Errorf("after a queued needs-repro: %d posts, records %+v", len(e.poster.Posts), recs)
	}
	if ents, _ := os.ReadDir(e.forge.RecordsDir()); len(ents) != 0 {
		t.Errorf("a PR was opened for a finding that does not reproduce")
	}
}

// TestCapsCooldownAndDial: max_open_prs, max_prs_per_hour, the cooldown
// after a human closed a PR unmerged, and the dial.
func TestCapsCooldownAndDial(t *testing.T) {
	e := newEnv(t)
	fpB := "fedcba9876543210"
	a, b := crashItem(fpA, "panic A", "enum E {}"), crashItem(fpB, "panic B", "enum F {}")
	open1 := e.fixer(t, nil, func(c *fixer.Config) { c.MaxOpenPRs = 1 })
	if j := fix(t, open1, a); j.Outcome != fixer.OutcomeOpened {
		t.Fatalf("first PR: %s", j.Outcome)
	}
	if j := fix(t, open1, b); j.Outcome != fixer.OutcomeCapOpen {
		t.Errorf("second PR with max_open_prs 1: %s", j.Outcome)
	}
	if j := fix(t, open1, a); j.Outcome != fixer.OutcomeUpdated {
		t.Errorf("updating the open PR at the cap: %s", j.Outcome)
	}
	hour1 := e.fixer(t, nil, func(c *fixer.Config) { c.MaxPRsPerHour = 1 })
	if j := fix(t, hour1, b); j.Outcome != fixer.OutcomeCapHour {
		t.Errorf("second PR within the hour with max_prs_per_hour 1: %s", j.Outcome)
	}
	if !slices.Contains(strings.Split(fixertest.Git(t, e.repo, "branch", "--list", "--format=%(refname:short)"), "\n"), fixer.BranchFor(fpA)) ||
		strings.Contains(fixertest.Git(t, e.repo, "branch", "--list"), fpB) {
		t.Error("a capped job pushed a branch")
	}
	// A human closes A's PR unmerged: recorded, and not reopened.
	fixertest.Git(t, e.repo, "branch", "-D", fixer.BranchFor(fpA))
	if res, err := open1.Poll(context.Background(), t.TempDir()); err != nil || len(res) != 1 || res[0].To != fixer.StateClosed {
		t.Fatalf("poll after closing: %+v %v", res, err)
	}
	if j := fix(t, open1, a); j.Outcome != fixer.OutcomeCooldown {
		t.Errorf("after a close: %s, want cooldown", j.Outcome)
	}
	later := e.fixer(t, nil, func(c *fixer.Config) { c.Now = func() time.Time { return time.Now().Add(8 * 24 * time.Hour) } })
	if j := fix(t, later, a); j.Outcome != fixer.OutcomeOpened || j.PR.Number != 2 {
		t.Errorf("after the cooldown: %s %+v, want a new PR", j.Outcome, j.PR)
	}
	// Below propose nothing is pushed.
	low := e.fixer(t, nil, func(c *fixer.Config) { c.Dial = fleettest.Dial(fleet.Exercise) })
	j, err := low.Fix(context.Background(), b, nil, fixer.JobOptions{Dir: t.TempDir()})
	if !errors.Is(err, fixer.ErrDial) || j.PR != nil {
		t.Errorf("at dial exercise: %v, PR %+v", err, j.PR)
	}
}

// TestTokenBudget: a model that spends past the job's token budget ends
// the attempts; the PR is a draft and the attempt says why.
func TestTokenBudget(t *testing.T) {
	e := newEnv(t)
	model := &fleettest.Script{Usage: fleet.Usage{TokensIn: 900, TokensOut: 200}}
	for range 3 {
		model.Steps = append(model.Steps, fleettest.Calls(fixer.ProposePatch, map[string]string{"diff": "not a diff"}))
	}
	f := e.fixer(t, model, func(c *fixer.Config) { c.Attempts = 3 })
	j, err := f.Fix(context.Background(), crashItem(fpA, "compile panic", "enum E {}"), nil,
		fixer.JobOptions{Dir: filepath.Join(t.TempDir(), "job"), Meter: sandbox.NewMeter(fleet.Budget{MaxTokens: 1000})})
	if err != nil {
		t.Fatal(err)
	}
	if len(j.Attempts) != 1 || j.Attempts[0].Result != "budget" || !strings.Contains(j.Attempts[0].Detail, "tokens") {
		t.Fatalf("attempts %+v, want one ended by the token budget", j.Attempts)
	}
	if j.PR == nil || j.PR.State != fixer.StateDraft || len(model.States) != 1 {
		t.Errorf("PR %+v after %d model calls, want a draft after one", j.PR, len(model.States))
	}
}

// refusingForge is the local forge refusing every PR edit, as a forge that
// resets or times out the call does.
type refusingForge struct{ *gitlocal.Forge }

func (refusingForge) Edit(context.Context, int, fixer.PRRequest) (*fixer.PR, error) {
	return nil, errors.New("connection reset by peer")
}

// TestUpdateTheForgeRefuses: the fingerprint's PR exists and the forge
// refuses its edit; the job fails with an error naming the PR and the
// record keeps the PR (issue 25: the publish stage dereferenced the nil PR
// Edit returned and panicked).
func TestUpdateTheForgeRefuses(t *testing.T) {
	e := newEnv(t)
	opened := fix(t, e.fixer(t, nil, nil), crashItem(fpA, "compile panic", "enum E {}"))
	if opened.Outcome != fixer.OutcomeOpened {
		t.Fatalf("first job: %s", opened.Outcome)
	}
	f := e.fixer(t, nil, func(c *fixer.Config) { c.Forge = refusingForge{e.forge} })
	j, err := f.Fix(context.Background(), crashItem(fpA, "compile panic", "enum E {}"), nil, fixer.JobOptions{Dir: filepath.Join(t.TempDir(), "job")})
	if err == nil || !strings.Contains(err.Error(), "connection reset") || j.Outcome != fixer.OutcomeFailed {
		t.Fatalf("an edit the forge refuses: %v, outcome %s; want the job failed with the forge's error", err, j.Outcome)
	}
	if want := fmt.Sprintf("update PR %d", opened.PR.Number); !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not name %q", err, want)
	}
	recs, err := fixer.LoadRecords(e.state)
	if err != nil || len(recs) != 1 || recs[0].Number != opened.PR.Number {
		t.Errorf("records after the refused edit: %+v %v", recs, err)
	}
}
