package github_test

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/qafleet/fleetd/fixer"
	"github.com/qafleet/fleetd/fixer/fixertest"
	"github.com/qafleet/fleetd/fixer/github"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/fleet/fleettest"
)

// TestForgeCannotMerge: the GitHub forge has no merge method.
func TestForgeCannotMerge(t *testing.T) {
	ty := reflect.TypeFor[*github.Forge]()
	for i := range ty.NumMethod() {
		if strings.Contains(strings.ToLower(ty.Method(i).Name), "merge") {
			t.Errorf("github.Forge has %s", ty.Method(i).Name)
		}
	}
}

// giteaEnv is a Gitea with the compiler repository, reached by fleetd
// through a recording, fault-injecting proxy.
type giteaEnv struct {
	g      *fixertest.Server
	proxy  *fixertest.Proxy
	forge  *github.Forge
	repo   string
	state  string
	poster *fixertest.Poster
}

func newGitea(t *testing.T) *giteaEnv {
	t.Helper()
	fixertest.HaveGo(t)
	g := fixertest.Start(t)
	e := &giteaEnv{g: g, repo: "tinylang", state: filepath.Join(t.TempDir(), "fixer"), poster: &fixertest.Poster{}}
	g.CreateRepo(t, e.repo, fixertest.CompilerRepo(t))
	e.proxy = fixertest.NewProxy(t, g.URL)
	var err error
	e.forge, err = github.New(github.Config{
		BaseURL: e.proxy.URL + "/api/v1/", Owner: g.User, Repo: e.repo, Token: g.Token,
		RepoURL: e.proxy.URL + "/" + g.User + "/" + e.repo + ".git",
	})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *giteaEnv) fixer(t *testing.T, model fleet.Model, mod func(*fixer.Config)) *fixer.Fixer {
	t.Helper()
	cfg := fixer.Config{
		Repo: fixertest.CompilerRepoConfig(e.g.URL + "/" + e.g.User + "/" + e.repo + ".git"), StateDir: e.state, Forge: e.forge,
		Reproducer: &fixertest.Reproducer{}, Poster: e.poster, Model: model, ModelName: "fake",
		Dial: fleettest.Dial(fleet.Propose), Attempts: 2, TestEnv: fixertest.TestEnv(t),
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

func item(id, source string) fixer.Item {
	args, _ := json.Marshal(map[string]string{"source": source})
	return fixer.Item{ID: id, Title: "compile panic on `" + source + "` @someone #1", Severity: fleet.SeverityHigh, Surface: fleet.SurfaceCompiler,
		Repro: fleet.Repro{Tool: "qa_compile", Args: args}, Latest: 1}
}

func run(t *testing.T, f *fixer.Fixer, it fixer.Item) (*fixer.Job, error) {
	t.Helper()
	return f.Fix(context.Background(), it, nil, fixer.JobOptions{Dir: filepath.Join(t.TempDir(), "job")})
}

// pull is a PR as Gitea's API shows it to a human.
type pull struct {
	Number int    `json:"number"`
	Title  string `json:"title"`
	Body   string `json:"body"`
	State  string `json:"state"`
	Draft  bool   `json:"draft"`
	Merged bool   `json:"merged"`
	Labels []struct {
		Name string `json:"name"`
	} `json:"labels"`
	Head struct {
		Ref string `json:"ref"`
	} `json:"head"`
}

func (e *giteaEnv) pulls(t *testing.T) []pull {
	t.Helper()
	var out []pull
	e.g.API(t, "GET", "/repos/"+e.g.User+"/"+e.repo+"/pulls?state=all", nil, &out)
	return out
}

const (
	fpA = "0123456789abcdef"
	fpB = "fedcba9876543210"
)

// TestGitea is the forge suite against a real Gitea: open a draft with
// labels, update instead of duplicate, turn it ready when verified, both
// caps, a dropped connection mid-push, a 5xx from the API, and the closed
// loop after a human merges; the server never sees a merge call from fleetd.
func TestGitea(t *testing.T) {
	e := newGitea(t)
	f := e.fixer(t, nil, func(c *fixer.Config) { c.MaxOpenPRs = 5 })

	// Open: a draft (no model) with the labels, title inert.
	j, err := run(t, f, item(fpA, "enum E {}"))
	if err != nil || j.Outcome != fixer.OutcomeOpened || j.PR.State != fixer.StateDraft {
		t.Fatalf("open: %v %s %+v", err, j.Outcome, j.PR)
	}
	prs := e.pulls(t)
	if len(prs) != 1 || !prs[0].Draft || prs[0].Head.Ref != fixer.BranchFor(fpA) {
		t.Fatalf("gitea PRs after open: %+v", prs)
	}
	var names []string
	for _, l := range prs[0].Labels {
		names = append(names, l.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"fleetd", "severity:high"}) {
		t.Errorf("labels %v", names)
	}
	if strings.Contains(prs[0].Title, "@someone") || strings.Contains(prs[0].Title, "#1") || !strings.Contains(prs[0].Body, "## On-chain entries") && len(j.Item.Entries) > 0 {
		t.Errorf("title %q is not inert", prs[0].Title)
	}

	// Update instead of duplicate, with a verified patch now: ready.
	good := fixertest.CorrectPatch(t)
	fm := e.fixer(t, patchModel(good), nil)
	j, err = run(t, fm, item(fpA, "enum E {}"))
	if err != nil || j.Outcome != fixer.OutcomeUpdated || !j.Verified || j.PR.State != fixer.StateOpen || j.PR.Number != prs[0].Number {
		t.Fatalf("update: %v %s verified %v %+v attempts %+v", err, j.Outcome, j.Verified, j.PR, j.Attempts)
	}
	if prs := e.pulls(t); len(prs) != 1 || prs[0].Draft || !strings.Contains(prs[0].Body, "## Verification") {
		t.Fatalf("after the update: %d PRs, draft %v", len(prs), prs[0].Draft)
	}

	// A dropped connection mid-push (every try: curl retries a request
	// whose reused connection died): the job fails, nothing is opened, and
	// the next run opens exactly one PR.
	var drops atomic.Int32
	e.proxy.SetRule(func(r *http.Request) fixertest.Fault {
		if strings.HasSuffix(r.URL.Path, "/git-receive-pack") && r.Method == "POST" {
			drops.Add(1)
			return fixertest.DropBody
		}
		return fixertest.Pass
	})
	j, err = run(t, f, item(fpB, "enum F {}"))
	if err == nil || !strings.Contains(err.Error(), "push") {
		t.Fatalf("push through a dropped connection: %v %s", err, j.Outcome)
	}
	if strings.Contains(err.Error(), e.g.Token) || drops.Load() == 0 {
		t.Fatalf("the error carries the token, or no push was dropped (%d)", drops.Load())
	}
	if prs := e.pulls(t); len(prs) != 1 {
		t.Fatalf("%d PRs after a failed push, want 1", len(prs))
	}
	// A 5xx on the create call: retried after checking it did not happen.
	var fails atomic.Int32
	e.proxy.SetRule(func(r *http.Request) fixertest.Fault {
		if r.Method == "POST" && strings.HasSuffix(r.URL.Path, "/pulls") && fails.Add(1) == 1 {
			return fixertest.Status502
		}
		if r.Method == "GET" && strings.Contains(r.URL.Path, "/pulls/") && fails.Load() < 3 {
			fails.Add(1)
			return fixertest.Status500
		}
		return fixertest.Pass
	})
	j, err = run(t, f, item(fpB, "enum F {}"))
	if err != nil || j.Outcome != fixer.OutcomeOpened {
		t.Fatalf("open through 5xx answers: %v %s", err, j.Outcome)
	}
	if fails.Load() < 2 {
		t.Errorf("the 5xx faults did not fire (%d)", fails.Load())
	}
	e.proxy.SetRule(nil)
	if prs := e.pulls(t); len(prs) != 2 {
		t.Fatalf("%d PRs, want 2", len(prs))
	}

	// Caps: a third fingerprint is refused at max_open_prs 2 and at
	// max_prs_per_hour 2, and nothing is pushed for it.
	fpC := "00000000000000cc"
	for _, mod := range []func(*fixer.Config){
		func(c *fixer.Config) { c.MaxOpenPRs = 2 },
		func(c *fixer.Config) { c.MaxOpenPRs, c.MaxPRsPerHour = 10, 2 },
	} {
		j, err := run(t, e.fixer(t, nil, mod), item(fpC, "enum G {}"))
		if err != nil || (j.Outcome != fixer.OutcomeCapOpen && j.Outcome != fixer.OutcomeCapHour) {
			t.Errorf("third PR: %v %s, want capped", err, j.Outcome)
		}
	}
	var branches []struct{ Name string }
	e.g.API(t, "GET", "/repos/"+e.g.User+"/"+e.repo+"/branches", nil, &branches)
	for _, b := range branches {
		if strings.Contains(b.Name, fpC) {
			t.Errorf("a capped job pushed %s", b.Name)
		}
	}

	// The closed loop: a human merges the verified PR in Gitea; Poll
	// re-checks on the new base and posts the resolution. A human closes
	// the other unmerged: recorded, then the cooldown holds.
	e.g.Merge(t, e.repo, prs[0].Number)
	e.g.Close(t, e.repo, e.pulls(t)[0].Number)
	res, err := f.Poll(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]fixer.PollResult{}
	for _, r := range res {
		got[r.Fingerprint] = r
	}
	if r := got[fpA]; r.To != fixer.StateMerged || r.Recheck != fixer.RecheckResolved {
		t.Errorf("after merge: %+v", r)
	}
	if r := got[fpB]; r.To != fixer.StateClosed {
		t.Errorf("after close: %+v", r)
	}
	if k := e.poster.Kinds(); !slices.Equal(k, []string{"resolution ref=" + fpA}) {
		t.Errorf("posts %v", k)
	}
	if j, err := run(t, f, item(fpB, "enum F {}")); err != nil || j.Outcome != fixer.OutcomeCooldown {
		t.Errorf("after a close: %v %s, want cooldown", err, j.Outcome)
	}

	for _, line := range e.proxy.Log() {
		if strings.Contains(line, "/merge") {
			t.Errorf("fleetd sent %s", line)
		}
	}
	if len(e.proxy.Log()) < 10 {
		t.Errorf("the proxy saw %d requests: fleetd did not go through it", len(e.proxy.Log()))
	}
}

// TestStillReproducesAfterMerge: a human merges a draft that only adds the
// regression test; the re-check finds it still failing, comments on the
// PR and posts no resolution.
func TestStillReproducesAfterMerge(t *testing.T) {
	e := newGitea(t)
	f := e.fixer(t, nil, nil)
	j, err := run(t, f, item(fpA, "enum E {}"))
	if err != nil || j.Outcome != fixer.OutcomeOpened {
		t.Fatal(err, j.Outcome)
	}
	// Gitea refuses to merge a WIP PR; the human takes the WIP prefix off first.
	path := "/repos/" + e.g.User + "/" + e.repo + "/pulls/" + itoa(j.PR.Number)
	e.g.API(t, "PATCH", path, map[string]any{"title": "regression test"}, nil)
	e.g.Merge(t, e.repo, j.PR.Number)
	res, err := f.Poll(context.Background(), t.TempDir())
	if err != nil || len(res) != 1 || res[0].Recheck != fixer.RecheckStill {
		t.Fatalf("poll: %+v %v", res, err)
	}
	if len(e.poster.Posts) != 0 {
		t.Errorf("posted %v while it still reproduces", e.poster.Kinds())
	}
	var comments []struct{ Body string }
	e.g.API(t, "GET", "/repos/"+e.g.User+"/"+e.repo+"/issues/"+itoa(j.PR.Number)+"/comments", nil, &comments)
	if len(comments) != 1 || !strings.Contains(comments[0].Body, "still fails") {
		t.Errorf("comments %+v", comments)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// patchModel is a fleet.Model proposing the same patch on every call (the
// forge suite is about the forge; cmd/fleetd's TestFixClosedLoop drives the
// OpenAI adapter against a wire-true fake and this Gitea).
type patchModel string

func (m patchModel) Next(context.Context, *fleet.State) (fleet.Step, error) {
	return fleettest.Calls(fixer.ProposePatch, map[string]string{"diff": string(m)}), nil
}
