package specialists

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/qafleet/fleetd/crawl"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/specialists/replay"
)

// fakeRenderer answers renders from a function and counts them per URL.
type fakeRenderer struct {
	mu    sync.Mutex
	count map[string]int
	fn    func(u string) (crawl.Rendered, error)
}

func (f *fakeRenderer) Render(_ context.Context, u string) (crawl.Rendered, error) {
	f.mu.Lock()
	if f.count == nil {
		f.count = map[string]int{}
	}
	f.count[u]++
	f.mu.Unlock()
	return f.fn(u)
}

const shellHTML = `<!doctype html><html><body><main id=view></main><script src="/app.js"></script></body></html>`

// spaWorld serves a shell page on every HTML path, a script, and the JSON
// of the API paths only a rendered page reveals.
func spaWorld(fetched *[]string) *world {
	return &world{dial: fleet.Exercise, handlers: map[string]func(map[string]any) fleet.Result{
		"qa_fetch": func(a map[string]any) fleet.Result {
			u, _ := a["url"].(string)
			*fetched = append(*fetched, u)
			pu, _ := url.Parse(u)
			switch {
			case pu.Path == "/app.js":
				return fetchOK(`var q = new URLSearchParams(location.search).get("term");`, map[string]any{"content-type": "text/javascript"})
			case strings.HasPrefix(pu.Path, "/api/"):
				return fetchOK(`{"ok":true}`, map[string]any{"content-type": "application/json"})
			}
			return fetchOK(shellHTML, map[string]any{"content-type": "text/html", "content-security-policy": "default-src 'self'", "x-content-type-options": "nosniff", "x-frame-options": "DENY"})
		},
		"qa_call": func(map[string]any) fleet.Result {
			return fleet.Result{"ok": true, "status": 200, "reply": "hi", "json": true}
		},
	}}
}

func TestRenderingCrawlFeedsTheCrawl(t *testing.T) {
	tg := testTarget()
	origin := "http://" + tg.FetchAllow[0]
	r := &fakeRenderer{fn: func(u string) (crawl.Rendered, error) {
		if strings.Contains(u, "/broken") {
			return crawl.Rendered{}, errors.New("browser died")
		}
		return crawl.Rendered{URL: u, FinalURL: u, Status: 200, Settled: true,
			HTML: `<html><body><a href="/rendered-only">x</a><a href="/broken">y</a><form method=post action="/api/notes"><input name=n></form></body></html>`,
			Requests: []crawl.Request{
				{URL: u, Method: "GET", Type: "document", Status: 200},
				{URL: origin + "/api/hidden?x=1", Method: "GET", Type: "fetch", Status: 200},
				{URL: origin + "/api/write", Method: "POST", Type: "xhr", Status: 201},
				{URL: "https://elsewhere.example/api", Method: "GET", Type: "fetch", Blocked: true, Failed: "net::ERR_BLOCKED_BY_CLIENT"},
				{URL: "ws://" + tg.FetchAllow[0] + "/live", Method: "GET", Type: "websocket"},
			}}, nil
	}}
	var fetched []string
	w := spaWorld(&fetched)
	st := fleet.State{RunID: "r-render", Target: tg, Tools: toolList("qa_fetch", "qa_call", "qa_report")}
	_, summary := drive(t, mustNew(t, "ux", Options{Renderer: r}), st, w, 200)
	for _, want := range []string{origin + "/rendered-only", origin + "/api/hidden?x=1"} {
		if !slices.Contains(fetched, want) {
			t.Errorf("the crawl did not fetch %s, which only the rendered page shows: %v", want, fetched)
		}
	}
	if slices.ContainsFunc(fetched, func(u string) bool {
		return strings.Contains(u, "elsewhere") || strings.Contains(u, "/api/write") || strings.Contains(u, "/api/notes")
	}) {
		t.Errorf("fetched a blocked call or a write: %v", fetched)
	}
	for u, n := range r.count {
		if n != 1 {
			t.Errorf("%s rendered %d times over the replays, want once", u, n)
		}
	}
	if !strings.Contains(summary, "pages rendered") || !strings.Contains(summary, "rendering") || !strings.Contains(summary, "browser died") {
		t.Errorf("summary does not tell the rendering crawl: %s", summary)
	}
	if !strings.Contains(summary, "opens a websocket to ws://") {
		t.Errorf("the WebSocket is not noted: %s", summary)
	}
	if len(w.reports) != 0 {
		t.Errorf("findings on a page that renders cleanly:%s", summaries(w.reports))
	}
}

// hookCall is how a canary payload calls the renderer's hook, up to the
// canary (crawl.CanaryCall).
var hookCall = strings.TrimSuffix(crawl.CanaryCall(""), "')")

func TestBrowserChecks(t *testing.T) {
	tg := testTarget()
	render := func(u string) (crawl.Rendered, error) {
		pu, _ := url.Parse(u)
		out := crawl.Rendered{URL: u, FinalURL: u, Status: 200, Settled: true, HTML: shellHTML,
			Requests: []crawl.Request{{URL: u, Method: "GET", Type: "document", Status: 200}, {URL: "https://" + pu.Host + "/app.js", Method: "GET", Type: "script", Status: 200}}}
		// A face runs whatever markup the fragment holds; the query is
		// only ever shown as text.
		if frag, err := url.PathUnescape(pu.EscapedFragment()); err == nil && strings.Contains(frag, "ontoggle="+hookCall) {
			c := frag[strings.Index(frag, hookCall)+len(hookCall):]
			out.Dialogs = append(out.Dialogs, c[:strings.IndexByte(c, '\'')])
		}
		// A page navigates to its term parameter: a javascript: URL runs.
		if term := pu.Query().Get("term"); strings.HasPrefix(term, "javascript:"+hookCall) {
			c := strings.TrimPrefix(term, "javascript:"+hookCall)
			out.Dialogs = append(out.Dialogs, c[:strings.IndexByte(c, '\'')])
		}
		if pu.Fragment == "" && pu.RawQuery == "" {
			out.Exceptions = []string{"TypeError: x is undefined at https://" + pu.Host + "/app.js:3:1"}
			out.ConsoleErrors = []string{"Failed to load resource: the server responded with a status of 404 (Not Found)", "state lost"}
			out.Requests = append(out.Requests,
				crawl.Request{URL: "https://" + pu.Host + "/logo.png", Method: "GET", Type: "image", Status: 404},
				crawl.Request{URL: "https://cdn.example/x.js", Method: "GET", Type: "script", Blocked: true, Failed: "net::ERR_BLOCKED_BY_CLIENT"})
			out.CSP = []string{"violates script-src-elem: inline"}
			// What the page's scripts decoded and put on screen.
			out.HTML = strings.Replace(shellHTML, "<main id=view>", "<main id=view><pre>Traceback (most recent call last):\n  File \"/srv/app/view.py\", line 9</pre><code>AKIAQ3EGRTYU7WSDFGHJ</code>", 1)
		}
		return out, nil
	}
	run := func(name string, dial fleet.Dial, r *fakeRenderer) []map[string]any {
		var fetched []string
		w := spaWorld(&fetched)
		w.dial = dial
		st := fleet.State{RunID: "r-" + name, Target: tg, Tools: toolList("qa_fetch", "qa_call", "qa_report")}
		drive(t, mustNew(t, name, Options{Renderer: r}), st, w, 400)
		return w.reports
	}
	ux := run("ux", fleet.Exercise, &fakeRenderer{fn: render})
	for _, want := range [][]string{{"render", "throw the same uncaught exception on load", "TypeError"}, {"render", "loses 1 request", "logo.png", "HTTP 404"}, {"render", "console error", "state lost"}} {
		f := findReport(ux, want[1:]...)
		if f == nil || f["surface"] != want[0] {
			t.Errorf("ux lacks %v:%s", want, summaries(ux))
		}
	}
	// Every page runs the shared app.js that throws: one row, not one per page.
	thrown := 0
	for _, f := range ux {
		if strings.Contains(fmt.Sprint(f["summary"]), "uncaught exception") {
			thrown++
		}
	}
	if f := findReport(ux, "uncaught exception", "app.js"); thrown != 1 || f == nil || f["state"] == nil {
		t.Errorf("%d rows for the one error the shared app.js throws on every page, want 1 with a state:%s", thrown, summaries(ux))
	}
	if f := findReport(ux, "as a browser renders it", "Traceback"); f == nil || f["repro"] != nil {
		t.Errorf("no leak from the rendered DOM, or one with a repro that cannot show it:%s", summaries(ux))
	}
	if f := findReport(ux, "cdn.example"); f != nil {
		t.Errorf("a request the allowlist blocked is reported: %v", f["summary"])
	}
	if f := findReport(ux, "console error", "Failed to load resource"); f != nil {
		t.Errorf("a failed load is reported twice: %v", f["summary"])
	}
	sec := run("security", fleet.Exercise, &fakeRenderer{fn: render})
	dom := findReport(sec, "DOM-based XSS", "fragment", "second render")
	if dom == nil || dom["severity"] != "high" || dom["surface"] != "dom" {
		t.Errorf("no confirmed DOM XSS in the fragment:%s", summaries(sec))
	}
	if f := findReport(sec, "DOM-based XSS", "query parameter term", "javascript: URL", "second render"); f == nil || f["severity"] != "high" {
		t.Errorf("no confirmed DOM XSS through a javascript: URL in the term parameter the script reads:%s", summaries(sec))
	}
	if f := findReport(sec, "DOM-based XSS", "query parameter", "markup"); f != nil {
		t.Errorf("DOM XSS reported for markup in a query parameter no sink takes as HTML: %v", f["summary"])
	}
	if f := findReport(sec, "once a browser runs its scripts", "AWS access key id"); f == nil || f["severity"] != "medium" {
		t.Errorf("no secret from the rendered DOM at medium:%s", summaries(sec))
	}
	if f := findReport(sec, "Content-Security-Policy", "script-src-elem"); f == nil || f["surface"] != "csp" {
		t.Errorf("no CSP finding:%s", summaries(sec))
	}
	// At observe no payload goes into a URL.
	or := &fakeRenderer{fn: render}
	obs := run("security", fleet.Observe, or)
	if f := findReport(obs, "DOM-based XSS"); f != nil {
		t.Errorf("DOM XSS probed at observe: %v", f["summary"])
	}
	if len(or.count) == 0 {
		t.Error("nothing rendered at observe: the crawl's renders are safe there")
	}
	for u := range or.count {
		if strings.Contains(u, crawl.CanaryHook) {
			t.Errorf("rendered a payload at observe: %s", u)
		}
	}
}

func TestNoRendererNoRenders(t *testing.T) {
	var fetched []string
	w := spaWorld(&fetched)
	st := fleet.State{RunID: "r-text", Target: testTarget(), Tools: toolList("qa_fetch", "qa_call", "qa_report")}
	_, summary := drive(t, mustNew(t, "ux", Options{}), st, w, 200)
	if strings.Contains(summary, "render") {
		t.Errorf("a run without a renderer mentions rendering: %s", summary)
	}
	if slices.ContainsFunc(fetched, func(u string) bool { return strings.Contains(u, "/api/hidden") }) {
		t.Error("the text crawl found what only a render shows")
	}
}

// fakeSubmitter is a fakeRenderer that also submits forms.
type fakeSubmitter struct {
	*fakeRenderer
	submits []crawl.FormFill
	submit  func(page string, f crawl.FormFill) crawl.Rendered
}

func (f *fakeSubmitter) Submit(_ context.Context, page string, ff crawl.FormFill) (crawl.Rendered, error) {
	f.mu.Lock()
	f.submits = append(f.submits, ff)
	f.mu.Unlock()
	return f.submit(page, ff), nil
}

func TestFormSubmission(t *testing.T) {
	tg := testTarget()
	render := func(u string) (crawl.Rendered, error) {
		return crawl.Rendered{URL: u, FinalURL: u, Status: 200, Settled: true,
			HTML: `<html><body><form method=post action="/sign"><input name=guest><input name=note></form><form method=post action="/quiet"><input name=q></form></body></html>`}, nil
	}
	// /sign echoes the note field raw; /quiet escapes everything.
	submit := func(page string, f crawl.FormFill) crawl.Rendered {
		out := crawl.Rendered{URL: page, FinalURL: f.Action, Status: 200, Submitted: true, Settled: true}
		if strings.HasSuffix(f.Action, "/sign") {
			c := f.Text[strings.Index(f.Text, hookCall)+len(hookCall):]
			out.Dialogs = []string{strings.Replace(c[:strings.IndexByte(c, '\'')], "{field}", "note", 1)}
		}
		return out
	}
	run := func(dial fleet.Dial, r replay.Renderer) []map[string]any {
		var fetched []string
		w := spaWorld(&fetched)
		w.dial = dial
		st := fleet.State{RunID: "r-forms", Target: tg, Tools: toolList("qa_fetch", "qa_call", "qa_report")}
		drive(t, mustNew(t, "security", Options{Renderer: r}), st, w, 400)
		return w.reports
	}
	fs := &fakeSubmitter{fakeRenderer: &fakeRenderer{fn: render}, submit: submit}
	got := run(fleet.Exercise, fs)
	f := findReport(got, "through the form POST", "/sign", `field "note"`, "again with a fresh canary")
	if f == nil || f["severity"] != "high" || f["surface"] != "dom" {
		t.Errorf("no confirmed XSS through the form:%s", summaries(got))
	}
	if findReport(got, "/quiet") != nil {
		t.Errorf("a form that escapes is reported:%s", summaries(got))
	}
	if len(fs.submits) != 3 { // /sign, its confirmation, /quiet
		t.Errorf("%d submissions, want 3: %+v", len(fs.submits), fs.submits)
	}
	obs := &fakeSubmitter{fakeRenderer: &fakeRenderer{fn: render}, submit: submit}
	run(fleet.Observe, obs)
	if len(obs.submits) != 0 {
		t.Errorf("forms submitted at observe: %+v", obs.submits)
	}
	// A renderer that cannot submit: nothing is submitted, nothing breaks.
	if got := run(fleet.Exercise, &fakeRenderer{fn: render}); findReport(got, "through the form") != nil {
		t.Errorf("a form finding without submissions:%s", summaries(got))
	}
}

// TestPageErrorsGroupBySharedScript: uncaught exceptions group by message
// and script location, as Sentry groups by stack (issue 34: the same
// error from a shared app.js was a row per page). The script's query
// (a cache-busting ?v=) is not part of the location, an inline script's
// location is "inline" rather than its page's URL, and the group's key, the
// finding's crash state, holds no page: the same error rendered on other
// pages in another run is the same fingerprint.
func TestPageErrorsGroupBySharedScript(t *testing.T) {
	page := func(u string, exceptions ...string) replay.RenderedPage {
		return replay.RenderedPage{Page: replay.Page{URL: u}, R: crawl.Rendered{URL: u, Exceptions: exceptions}}
	}
	shared := func(v int) string {
		return fmt.Sprintf("SyntaxError: Unexpected token '}' at http://plat.test/static/app.js?v=%d:41:7", v)
	}
	inline := func(u string) string { return "ReferenceError: feed is not defined at " + u + ":12:3" }
	one := []replay.RenderedPage{
		page("http://plat.test/alice/", shared(1), inline("http://plat.test/alice/")),
		page("http://plat.test/bob/", shared(2), inline("http://plat.test/bob/")),
		page("http://plat.test/docs", shared(3), "TypeError: x is null at http://plat.test/static/docs.js:3:1"),
	}
	groups := pageErrors(one)
	if len(groups) != 3 {
		for _, g := range groups {
			t.Logf("%q on %v", g.key, g.pages)
		}
		t.Fatalf("%d groups, want 3 (the shared script, the template's inline script, docs.js)", len(groups))
	}
	if g := groups[0]; len(g.pages) != 3 || !strings.Contains(g.key, "static/app.js:41:7") || strings.Contains(g.key, "?v=") {
		t.Errorf("the shared script's group: %q on %v", g.key, g.pages)
	}
	if g := groups[1]; len(g.pages) != 2 || !strings.HasSuffix(g.key, " at inline:12:3") {
		t.Errorf("the template's inline script's group: %q on %v", g.key, g.pages)
	}
	other := pageErrors([]replay.RenderedPage{page("http://plat.test/carol/", shared(9)), page("http://plat.test/", shared(10))})
	state := func(g *pageError) string { return fleet.StateID("uncaught " + g.key) }
	if len(other) != 1 || state(other[0]) != state(groups[0]) {
		t.Errorf("the shared script's error on other pages is another state: %v", other)
	}
	fp := func(g *pageError) string {
		return fleet.Fingerprint(fleet.Finding{Surface: surfaceRender, Summary: strings.Join(g.pages, ", ")}.WithState(state(g)))
	}
	if fp(other[0]) != fp(groups[0]) {
		t.Error("the shared script's error rendered on other pages has another fingerprint: triage would make it another row")
	}
	if exceptionKey("Script error.", "http://plat.test/") != "Script error." {
		t.Error("an exception without a location is not its own key")
	}
}
