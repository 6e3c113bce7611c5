package specialists

// The evaluation of the rendering crawl and the browser checks on a
// platform whose pages render in the browser: fixtures/spa ("Lantern"),
// every page an empty shell plus a script that builds it from a JSON API.
// security and ux run through the real loop with the test-local HTTP tools
// and a real headless Chromium (package browser) as the renderer, its
// requests under the same allowlist. Flawed mode must yield one finding per
// planted flaw; the correct twin nothing at high or above. The same flawed
// platform is probed with the rendering crawl off, as the baseline. The
// table it logs is the one in BENCHMARKS.md:
//
//	go test -run TestEvalSPA -v ./specialists

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/qafleet/fleetd/browser"
	"github.com/qafleet/fleetd/crawl"
	"github.com/qafleet/fleetd/fixtures/spa"
	"github.com/qafleet/fleetd/fixtures/twin"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/fleet/fleettest"
	"github.com/qafleet/fleetd/qatools"
	"github.com/qafleet/fleetd/sandbox"
	"github.com/qafleet/fleetd/specialists/replay"
)

// spaFlaws are the flaws fixtures/spa/README.md lists.
var spaFlaws = []plantedFlaw{
	{"DOM XSS: URL fragment into innerHTML on the faces", []string{"dom"}, []string{"/u/", "fragment", "CWE-79", "second render"}, fleet.SeverityHigh},
	{"DOM XSS: query parameter into innerHTML", []string{"dom"}, []string{"/search", "query parameter q", "CWE-79"}, fleet.SeverityHigh},
	{"DOM XSS: query parameter into location.assign", []string{"dom"}, []string{"/guide", "query parameter next", "javascript: URL", "CWE-79"}, fleet.SeverityHigh},
	{"stored DOM XSS: a JSON resource's field into innerHTML", []string{"dom"}, []string{"Stored DOM-based XSS", `field "status"`, "/api/v1/profiles/", "PUT", "CWE-79", "second write"}, fleet.SeverityHigh},
	{"stored DOM XSS: a field a form writes into innerHTML", []string{"dom"}, []string{"Stored DOM-based XSS", `field "note"`, "/notes", "POST", "the form on", "CWE-79", "second write"}, fleet.SeverityHigh},
	{"reflected XSS through a form", []string{"dom"}, []string{"through the form POST", "/api/v1/subscribe", `field "email"`, "CWE-79"}, fleet.SeverityHigh},
	{"page throws on load", []string{"render"}, []string{"/stats", "throws on load", "TypeError"}, fleet.SeverityMedium},
	{"endpoint only the script calls: stack trace", []string{"web"}, []string{"/api/v1/lamps/health", "stack trace"}, fleet.SeverityLow},
	{"dead link only the page's script builds", []string{"docs", "links"}, []string{"Dead link on", "/guide, built by the page's script", "/fair/2027", "404"}, fleet.SeverityLow},
}

// mustChromium returns Chromium's path; without one the test skips, but in
// CI (CI set) it fails: .ci/run installs Debian's chromium package.
// evalBrowser is the rendering crawl as a run at dial wires it: requests
// only to tg's fetch allowlist, and the page's own writes decided by
// qatools.PageWrites at that dial, from a write budget of evalWrites (held
// at observe; at exercise sent within the page's share). created, when
// set, gets what the answers to the writes the gate let through name as
// created (as a run gives them to qa_submit's DELETE).
//
// sessions, when given, are the run's signed-in identities (realTools'),
// which the browser renders as (RenderAs) while sessions' dial allows.
func evalBrowser(exec string, tg fleet.Target, dial fleet.Dial, created func(string), sessions ...*qatools.Sessions) (*browser.Browser, error) {
	writes := qatools.NewPageWrites(fleettest.Dial(dial), sandbox.NewMeter(fleet.Budget{MaxWrites: evalWrites}))
	var session func(context.Context, string) (browser.Session, error)
	if len(sessions) > 0 {
		session = func(ctx context.Context, id string) (browser.Session, error) {
			s, err := sessions[0].Browser(ctx, id, "")
			return browser.Session{Identity: id, Origin: s.Origin, Header: s.Header, Never: s.Never}, err
		}
	}
	return browser.New(browser.Config{Exec: exec, Session: session,
		Allow: func(u string) error {
			if !replay.AllowedURL(tg.FetchAllow, u) {
				return fmt.Errorf("not on the fetch allowlist: %s", u)
			}
			return nil
		},
		Write: func(w browser.Write) error { return writes.Decide(w.Method, w.URL, w.Via) },
		Created: func(w browser.Write, u string) {
			if writes.Created(w.Method, w.URL, u) && created != nil {
				created(u)
			}
		},
	})
}

func mustChromium(t testing.TB) string {
	t.Helper()
	p, err := browser.Find()
	if err == nil {
		return p
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%v: .ci/run installs Debian's chromium package", err)
	}
	t.Skipf("%v: apt-get install -y chromium to run the rendering crawl's evaluation", err)
	return ""
}

// timedRenderer counts the pages rendered and the time they took.
type timedRenderer struct {
	r     replay.Renderer
	pages int
	took  time.Duration
}

func (tr *timedRenderer) Render(ctx context.Context, url string) (crawl.Rendered, error) {
	start := time.Now()
	r, err := tr.r.Render(ctx, url)
	tr.pages++
	tr.took += time.Since(start)
	return r, err
}

func (tr *timedRenderer) Submit(ctx context.Context, page string, f crawl.FormFill) (crawl.Rendered, error) {
	start := time.Now()
	r, err := tr.r.(replay.Submitter).Submit(ctx, page, f)
	tr.pages++
	tr.took += time.Since(start)
	return r, err
}

// runSPA runs security and ux against app, each with a browser of its own
// when render is set, and returns every finding.
func runSPA(t *testing.T, app *spa.App, render bool) ([]map[string]any, *timedRenderer) {
	t.Helper()
	tg := app.Target()
	client := &http.Client{Timeout: 10 * time.Second}
	var count writeCount
	tools := httpToolsCounted(tg, client, client, evalWrites, &count)
	timed := &timedRenderer{}
	var all []map[string]any
	for _, name := range []string{"security", "ux"} {
		opts := Options{}
		if render {
			b, err := evalBrowser(mustChromium(t), tg, fleet.Exercise, nil)
			if err != nil {
				t.Fatal(err)
			}
			timed.r = b
			opts.Renderer = timed
			defer b.Close()
		}
		res, got := runLoop(t, name, fleet.Exercise, tg, tools, opts)
		if res.Totals.ToolCalls > DefaultCap(name) {
			t.Errorf("%s: %d calls over its cap %d", name, res.Totals.ToolCalls, DefaultCap(name))
		}
		for _, f := range got {
			f["playbook"] = name
			all = append(all, f)
		}
	}
	// Writes (qa_submit): the forms over HTTP and the stored fields, within
	// the budget (a write past it ends the run, which runLoop fails).
	t.Logf("%s (rendering %v): qa_submit sent %d request(s) of a budget of %d per run: %v", app.URL(), render, count.writes, evalWrites, count.urls)
	return all, timed
}

func TestEvalSPA(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the playbooks with a browser against two platforms")
	}
	mustChromium(t)
	ctx := context.Background()
	start := func(m twin.Mode) *spa.App {
		app, err := spa.Serve(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { app.Close() })
		return app
	}
	var table strings.Builder
	fmt.Fprintf(&table, "\n| class | planted | found (rendering crawl) | found (text crawl only) | severity |\n| --- | --- | --- | --- | --- |\n")
	flawedApp := start(twin.Flawed)
	flawed, timed := runSPA(t, flawedApp, true)
	static, _ := runSPA(t, flawedApp, false)
	used := make([]bool, len(flawed))
	found, foundStatic := 0, 0
	for _, fl := range spaFlaws {
		i := slices.IndexFunc(flawed, func(f map[string]any) bool { return matches(f, fl) })
		js := slices.ContainsFunc(static, func(f map[string]any) bool { return matches(f, fl) })
		if js {
			foundStatic++
		}
		sev := "—"
		if i >= 0 {
			used[i], found = true, found+1
			sev = fmt.Sprint(flawed[i]["severity"])
			if fleet.Severity(sev).Rank() < fl.minSev.Rank() {
				t.Errorf("%s found at %s, want at least %s", fl.class, sev, fl.minSev)
			}
		} else {
			t.Errorf("missed: %s (%v %v)", fl.class, fl.surfaces, fl.words)
		}
		fmt.Fprintf(&table, "| %s | 1 | %d | %d | %s |\n", fl.class, map[bool]int{true: 1, false: 0}[i >= 0], map[bool]int{true: 1, false: 0}[js], sev)
	}
	var extra []map[string]any
	for i, f := range flawed {
		if !used[i] {
			extra = append(extra, f)
		}
	}
	correct, _ := runSPA(t, start(twin.Correct), true)
	high := func(fs []map[string]any) int {
		n := 0
		for _, f := range fs {
			if fleet.Severity(fmt.Sprint(f["severity"])).Rank() >= fleet.SeverityHigh.Rank() {
				n++
			}
		}
		return n
	}
	perPage := time.Duration(0)
	if timed.pages > 0 {
		perPage = timed.took / time.Duration(timed.pages)
	}
	fmt.Fprintf(&table, "\nrecall %d/%d with the rendering crawl, %d/%d with the text crawl only; findings not matching a planted flaw on the flawed platform: %d (%d at high or above); findings on the correct twin: %d (%d at high or above); %d pages rendered on the flawed platform in %s (%s a page)\n",
		found, len(spaFlaws), foundStatic, len(spaFlaws), len(extra), high(extra), len(correct), high(correct), timed.pages, timed.took.Round(time.Millisecond), perPage.Round(time.Millisecond))
	t.Log(table.String())
	if high(extra) > 0 {
		t.Errorf("findings at high or above on the flawed platform that match no planted flaw:%s", summaries(extra))
	}
	if high(correct) > 0 {
		t.Errorf("findings at high or above on the correct twin (false positives):%s", summaries(correct))
	}
	if len(extra) > 0 || len(correct) > 0 {
		t.Logf("lower findings beyond the planted flaws: flawed%s\ncorrect%s", summaries(extra), summaries(correct))
	}
}
