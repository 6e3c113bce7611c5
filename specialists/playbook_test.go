package specialists

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/qafleet/fleetd/configs"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/specialists/replay"
	"go.yaml.in/yaml/v3"
)

func testTarget() fleet.Target {
	return fleet.Target{
		Registry:       "0x00000000000000000000000000000000000000aa",
		Faces:          "http://plat.test:8080/{name}/",
		Call:           "http://plat.test:8080/call",
		Docs:           []string{"http://plat.test:8080/llms.txt"},
		Compiler:       []string{"cc", "{src}"},
		FetchAllow:     []string{"plat.test:8080"},
		AdminFunctions: []string{"adminBurn(string[])"},
		Names:          []string{"alice", "bob"},
		SLO:            fleet.SLO{P95Ms: 500},
	}
}

func TestNamesAndNew(t *testing.T) {
	want := []string{"fuzz", "perf", "security", "smoke", "ux"}
	if got := Names(); !slices.Equal(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	for _, n := range want {
		m, err := New(n, Options{})
		if err != nil || m == nil {
			t.Fatalf("New(%q) = %v, %v", n, m, err)
		}
		if DefaultCap(n) <= 0 {
			t.Errorf("DefaultCap(%q) = %d", n, DefaultCap(n))
		}
	}
	// The budgets the package doc and docs/architecture.md state.
	budgets := map[string][3]int{"smoke": {30, 0, 0}, "security": {380, 40, 32}, "fuzz": {250, 0, 0}, "ux": {90, 40, 12}, "perf": {80, 0, 0}}
	for _, s := range shipped {
		if got := [3]int{s.Cap, s.Crawl, s.Render}; got != budgets[s.Name] {
			t.Errorf("%s: cap, crawl, render = %v, want %v", s.Name, got, budgets[s.Name])
		}
	}
	if _, err := New("nope", Options{}); err == nil || !strings.Contains(err.Error(), "smoke") {
		t.Errorf("New(nope) = %v, want an error listing the playbooks", err)
	}
	if _, err := New("smoke", Options{Caps: map[string]int{"smoke": -1}}); err == nil {
		t.Error("a negative cap was accepted")
	}
}

func TestReplayNextCallFollowsHistory(t *testing.T) {
	m := mustNew(t, "smoke", Options{Corpus: []string{"print 1;\n", "a longer program;\n"}})
	st := fleet.State{RunID: "r-1", Target: testTarget(), Tools: toolList()}
	step, err := m.Next(context.Background(), &st)
	if err != nil || step.Call == nil || step.Call.Tool != "qa_create" {
		t.Fatalf("first step = %+v, %v; want qa_create", step, err)
	}
	// The dial refuses the mint: the playbook moves on to compile the
	// smallest corpus program, and never tries another exercise tool.
	st.History = append(st.History, fleet.Exchange{Call: *step.Call, Verdict: fleet.VerdictRefused,
		Result: fleet.Result{"ok": false, "error": "refused: needs dial exercise, dial is observe"}})
	step, err = m.Next(context.Background(), &st)
	if err != nil || step.Call == nil || step.Call.Tool != "qa_compile" || argsOf(t, *step.Call)["source"] != "print 1;\n" {
		t.Fatalf("after the refusal: %+v, %v; want qa_compile of the smallest program", step, err)
	}
}

func TestReplayIsDeterministicAcrossInstances(t *testing.T) {
	w := &world{dial: fleet.Exercise, handlers: map[string]func(map[string]any) fleet.Result{
		"qa_create":  func(map[string]any) fleet.Result { return fleet.Result{"name": "qa-r-1", "owner_verified": true} },
		"qa_compile": func(map[string]any) fleet.Result { return fleet.Result{"outcome": "compiled"} },
		"qa_fetch":   func(map[string]any) fleet.Result { return fetchOK("<p>hi</p>", nil) },
		"qa_call":    func(map[string]any) fleet.Result { return fleet.Result{"status": 200, "hint": "ok", "reply": "pong"} },
	}}
	st := fleet.State{RunID: "r-1", Target: testTarget(), Tools: toolList()}
	opts := Options{Corpus: []string{"print 1;\n"}}
	h1, s1 := drive(t, mustNew(t, "smoke", opts), st, w, 60)
	// A fresh instance replaying every prefix of the history asks the same
	// next call: the history is the only state.
	m2 := mustNew(t, "smoke", opts)
	for i := range h1 {
		st2 := st
		st2.History = h1[:i]
		step, err := m2.Next(context.Background(), &st2)
		if err != nil || step.Call == nil || step.Call.Tool != h1[i].Call.Tool || string(step.Call.Args) != string(h1[i].Call.Args) {
			t.Fatalf("prefix %d: %+v, %v; want %s %s", i, step, err, h1[i].Call.Tool, h1[i].Call.Args)
		}
	}
	st2 := st
	st2.History = h1
	step, err := m2.Next(context.Background(), &st2)
	if err != nil || !step.Done || step.Summary != s1 {
		t.Fatalf("full history: %+v, %v; want done with %q", step, err, s1)
	}
}

func TestReplayDivergenceIsMalformed(t *testing.T) {
	m := mustNew(t, "smoke", Options{})
	for name, ex := range map[string]fleet.Exchange{
		"other tool": {Call: fleet.Call{Tool: "qa_fetch", Args: json.RawMessage(`{"url":"http://x/"}`)}, Verdict: fleet.VerdictOK, Result: fleet.Result{"ok": true}},
		"other args": {Call: fleet.Call{Tool: "qa_create", Args: json.RawMessage(`{"x":1}`)}, Verdict: fleet.VerdictOK, Result: fleet.Result{"ok": true}},
	} {
		st := fleet.State{RunID: "r-1", Target: testTarget(), History: []fleet.Exchange{ex}}
		_, err := m.Next(context.Background(), &st)
		if !errors.Is(err, fleet.ErrMalformed) || !strings.Contains(err.Error(), "diverged") {
			t.Errorf("%s: err = %v, want a divergence wrapping ErrMalformed", name, err)
		}
	}
	// Equal JSON spelled differently (a history read back from a record) is
	// not a divergence.
	st := fleet.State{RunID: "r-1", Target: testTarget(), History: []fleet.Exchange{
		{Call: fleet.Call{Tool: "qa_create", Args: json.RawMessage(`{ }`)}, Verdict: fleet.VerdictRefused, Result: fleet.Result{"ok": false, "error": "refused: needs dial exercise, dial is observe"}},
	}}
	if _, err := m.Next(context.Background(), &st); err != nil {
		t.Errorf("re-spaced args: %v", err)
	}
}

func TestReplayCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	st := fleet.State{RunID: "r-1", Target: testTarget()}
	if _, err := mustNew(t, "smoke", Options{}).Next(ctx, &st); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestCapStopsCleanly(t *testing.T) {
	w := &world{dial: fleet.Observe, handlers: map[string]func(map[string]any) fleet.Result{
		"qa_fetch": func(map[string]any) fleet.Result { return fleet.Result{"status": 500, "body": "boom"} },
	}}
	st := fleet.State{RunID: "r-1", Target: testTarget(), Tools: toolList()}
	h, summary := drive(t, mustNew(t, "smoke", Options{Caps: map[string]int{"smoke": 4}}), st, w, 20)
	if len(h) > 4 {
		t.Fatalf("%d calls under a cap of 4: %v", len(h), calls(h))
	}
	if !strings.Contains(summary, "cap 4") {
		t.Errorf("summary %q does not mention the cap", summary)
	}
}

func TestToolsNotGivenAreNotCalled(t *testing.T) {
	w := &world{dial: fleet.Propose}
	st := fleet.State{RunID: "r-1", Target: testTarget(), Tools: toolList("qa_fetch", "qa_report")}
	h, summary := drive(t, mustNew(t, "smoke", Options{Corpus: []string{"x"}}), st, w, 40)
	for _, c := range calls(h) {
		if c != "qa_fetch" && c != "qa_report" {
			t.Fatalf("called %s, which the run does not have: %v", c, calls(h))
		}
	}
	if !strings.Contains(summary, "qa_create is not among") {
		t.Errorf("summary %q does not say why the mint was skipped", summary)
	}
}

func TestDisabledToolKeepsReplayStable(t *testing.T) {
	// The loop removes a tool it disabled from State.Tools; a replay must
	// still take the path it took while the tool was enabled.
	w := &world{dial: fleet.Exercise, handlers: map[string]func(map[string]any) fleet.Result{
		"qa_create": func(map[string]any) fleet.Result {
			return fleet.Result{"ok": false, "error": "fund throwaway key: no funds"}
		},
	}}
	st := fleet.State{RunID: "r-1", Target: testTarget(), Tools: toolList()}
	m := mustNew(t, "smoke", Options{})
	h, _ := drive(t, m, st, w, 40)
	st.History = h
	st.Tools = toolList("qa_compile", "qa_fetch", "qa_call", "qa_chain", "qa_report", "qa_publish") // qa_create disabled
	if h[0].Call.Tool != "qa_create" {
		t.Fatalf("first call %s", h[0].Call.Tool)
	}
	for i := 1; i <= len(h); i++ { // every history the loop could hand over once qa_create ran
		st2 := st
		st2.History = h[:i]
		step, err := m.Next(context.Background(), &st2)
		switch {
		case err != nil:
			t.Fatalf("prefix %d after disabling qa_create: %v", i, err)
		case i == len(h) && !step.Done:
			t.Fatalf("full history: %+v, want done", step)
		case i < len(h) && (step.Call == nil || step.Call.Tool != h[i].Call.Tool):
			t.Fatalf("prefix %d after disabling qa_create: %+v; want %s", i, step, h[i].Call.Tool)
		}
	}
}

func TestLoadCorpusAndOptionsFor(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{"b.tl": "print 2;", "a.tl": "print 1;", ".hidden": "x", "empty.tl": ""} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := LoadCorpus(dir)
	if err != nil || !slices.Equal(got, []string{"print 1;", "print 2;"}) {
		t.Fatalf("LoadCorpus = %q, %v", got, err)
	}
	opts, err := OptionsFor(fleet.Target{Corpus: dir})
	if err != nil || len(opts.Corpus) != 2 {
		t.Fatalf("OptionsFor = %+v, %v", opts, err)
	}
	if _, err := LoadCorpus(filepath.Join(dir, "missing")); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("missing dir: %v", err)
	}
	if got, err := LoadCorpus(""); got != nil || err != nil {
		t.Errorf("empty dir: %v, %v", got, err)
	}
}

func TestReportKeepsEnvelopeSmallAndSecretsOut(t *testing.T) {
	w := &world{dial: fleet.Observe}
	st := fleet.State{RunID: "r-20260101-0001", Target: testTarget()}
	big := strings.Repeat("let v = 1;\n", 400)
	key := "0x" + strings.Repeat("ab12", 16)
	prog := func(p *replay.Play, _ Options) {
		p.File(fleet.SeverityHigh, fleet.SurfaceCompiler, "crash on a big input", "qa_compile", map[string]any{"source": big})
		p.File(fleet.SeverityHigh, fleet.SurfaceCompiler, "crash on a big input", "qa_compile", map[string]any{"source": big}) // same: once
		p.File(fleet.SeverityCritical, "web", "page shows PRIVATE_KEY="+key+"\nrepro: qa_fetch {}", "qa_fetch", map[string]any{"url": "http://x/.env"})
	}
	pbs := Default()
	if err := pbs.Add(Spec{Name: "test-report", Play: prog, Cap: 50}); err != nil {
		t.Fatal(err)
	}
	m, err := pbs.New("test-report", Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, summary := drive(t, m, st, w, 10)
	if len(w.reports) != 2 {
		t.Fatalf("%d reports, want 2 (one deduped in the run): %s", len(w.reports), summaries(w.reports))
	}
	if _, has := w.reports[0]["repro"]; has || !strings.Contains(w.reports[0]["summary"].(string), "repro left out") {
		t.Errorf("an oversized repro was kept: %v", w.reports[0]["summary"])
	}
	s := w.reports[1]["summary"].(string)
	if strings.Contains(s, strings.Repeat("ab12", 4)) || strings.Contains(s, "\n") {
		t.Errorf("summary leaks the key or spans lines: %q", s)
	}
	checkEnvelopes(t, "qa-test", st.RunID, w.reports)
	if !strings.Contains(summary, "2 findings (2 posted)") {
		t.Errorf("summary = %q", summary)
	}
}

// TestSixthSpecialist registers a playbook fleetd does not ship from one
// Spec and runs it through the path the shipped five take (Playbooks.New,
// replay, the cap, the crawl budget, Options.Caps, the report road), on a
// table of its own: the shipped table does not change.
func TestSixthSpecialist(t *testing.T) {
	sixth := Spec{Name: "sixth", Cap: 12, Crawl: 2, Play: func(p *replay.Play, _ Options) {
		pages := p.Crawl()
		for i := 0; p.Room(1); i++ {
			p.Fetch(fmt.Sprintf("http://plat.test:8080/extra-%d", i))
		}
		p.File(fleet.SeverityLow, "web", fmt.Sprintf("sixth crawled %d page(s)", len(pages)), "qa_fetch", map[string]any{"url": pages[0].URL})
	}}
	pbs := Default()
	if err := pbs.Add(sixth); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(pbs.Names(), "sixth") || slices.Contains(Names(), "sixth") || pbs.Cap("sixth") != 12 {
		t.Fatalf("table %v (cap %d), shipped %v", pbs.Names(), pbs.Cap("sixth"), Names())
	}
	// Every page links to two more: without the crawl budget the crawl
	// would go on.
	page := func(map[string]any) fleet.Result {
		return fetchOK(`<a href="/a">a</a> <a href="/b">b</a> <a href="/c/d">d</a>`, nil)
	}
	for _, c := range []struct {
		caps      map[string]int
		wantCalls int
	}{
		{nil, 12},
		{map[string]int{"sixth": 20}, 20},
	} {
		w := &world{dial: fleet.Exercise, handlers: map[string]func(map[string]any) fleet.Result{"qa_fetch": page}}
		st := fleet.State{RunID: "r-20260101-0006", Target: testTarget(), Tools: toolList()}
		m, err := pbs.New("sixth", Options{Caps: c.caps})
		if err != nil {
			t.Fatal(err)
		}
		if m.(*Playbook).Name() != "sixth" {
			t.Errorf("Name() = %q", m.(*Playbook).Name())
		}
		hist, summary := drive(t, m, st, w, 40)
		crawled := 0
		for _, ex := range hist {
			if ex.Call.Tool == "qa_fetch" && !strings.Contains(string(ex.Call.Args), "extra-") {
				crawled++
			}
		}
		if crawled != 2 {
			t.Errorf("caps %v: the crawl fetched %d pages, want the spec's crawl budget 2", c.caps, crawled)
		}
		if len(hist) > c.wantCalls || len(hist) < c.wantCalls-3 {
			t.Errorf("caps %v: %d calls, want the cap %d (a few kept for reports)", c.caps, len(hist), c.wantCalls)
		}
		if len(w.reports) != 1 || !strings.Contains(w.reports[0]["summary"].(string), "sixth crawled 2 page(s)") {
			t.Errorf("caps %v: reports %s; summary %q", c.caps, summaries(w.reports), summary)
		}
	}
	if _, err := Default().New("sixth", Options{}); err == nil {
		t.Error("a fresh Default table has the sixth playbook")
	}
}

// TestPlaybooksAddRejects: a spec the table cannot run is refused with an
// error naming it and what was wrong.
func TestPlaybooksAddRejects(t *testing.T) {
	play := func(*replay.Play, Options) {}
	for _, c := range []struct {
		spec Spec
		want string
	}{
		{Spec{Play: play, Cap: 5}, "empty name"},
		{Spec{Name: "Sixth", Play: play, Cap: 5}, "lowercase"},
		{Spec{Name: "sixth", Cap: 5}, "no program"},
		{Spec{Name: "sixth", Play: play}, "cap 0"},
		{Spec{Name: "sixth", Play: play, Cap: 5, Crawl: -1}, "negative budget"},
		{Spec{Name: "ux", Play: play, Cap: 5}, `"ux": already registered`},
	} {
		if err := Default().Add(c.spec); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Add(%+v) = %v, want an error with %q", c.spec, err, c.want)
		}
	}
}

// TestShippedSpecsHavePersonas: each shipped Spec has its persona YAML in
// configs/personas, a playbook persona naming it, whose max_turns is above
// the spec's cap (the cap leaves the final turn); each playbook persona
// names a shipped spec.
func TestShippedSpecsHavePersonas(t *testing.T) {
	type persona struct {
		Name     string `yaml:"name"`
		Planner  string `yaml:"planner"`
		Playbook string `yaml:"playbook"`
		Budget   struct {
			MaxTurns int `yaml:"max_turns"`
		} `yaml:"budget"`
	}
	files, err := fs.Glob(configs.Personas, "personas/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("shipped personas: %v, %v", files, err)
	}
	byPlaybook := map[string]persona{}
	for _, f := range files {
		b, err := configs.Personas.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var p persona
		if err := yaml.Unmarshal(b, &p); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if p.Planner != string(fleet.PlannerPlaybook) {
			continue
		}
		name := cmp.Or(p.Playbook, p.Name)
		if DefaultCap(name) == 0 {
			t.Errorf("%s: playbook %q is not a shipped spec (have %v)", f, name, Names())
		}
		byPlaybook[name] = p
	}
	for _, s := range shipped {
		p, ok := byPlaybook[s.Name]
		if !ok {
			t.Errorf("spec %q has no playbook persona in configs/personas", s.Name)
			continue
		}
		if p.Budget.MaxTurns <= s.Cap {
			t.Errorf("spec %q: cap %d, persona max_turns %d: want the cap under max_turns", s.Name, s.Cap, p.Budget.MaxTurns)
		}
	}
}
