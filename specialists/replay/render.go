package replay

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/qafleet/fleetd/crawl"
)

// Renderer opens a page in a browser and reports what it did: the
// rendering crawl's engine (package browser's Browser, wired in cmd). Its
// requests go through the tools' allowlist and pacing; it is not a tool
// call, so the playbook keeps what it saw in Renders for every replay.
type Renderer interface {
	Render(ctx context.Context, url string) (crawl.Rendered, error)
}

// Submitter is a Renderer that also fills and submits a page's form
// (package browser's Browser): the form submission of the exercise rung.
type Submitter interface {
	Submit(ctx context.Context, page string, f crawl.FormFill) (crawl.Rendered, error)
}

// PageForm is a non-GET form the rendering crawl saw, with its page.
type PageForm struct {
	Page string
	Form crawl.Link
}

// Renders is one run's rendering crawl: the Renderer and every page it
// rendered, by URL. A playbook replays its program on every turn; a page is
// rendered once per run and every later replay reads the same result, so
// replays stay deterministic. Make one per run (NewRenders).
type Renders struct {
	r  Renderer
	mu sync.Mutex
	m  map[string]renderOut
}

type renderOut struct {
	page crawl.Rendered
	err  error
}

// NewRenders returns a run's rendering crawl over r; nil r gives nil (the
// rendering crawl is off).
func NewRenders(r Renderer) *Renders {
	if r == nil {
		return nil
	}
	return &Renders{r: r, m: map[string]renderOut{}}
}

func (rs *Renders) get(ctx context.Context, url string) (crawl.Rendered, error, bool) {
	return rs.do(ctx, url, func() (crawl.Rendered, error) { return rs.r.Render(ctx, url) })
}

// do returns the kept result for key, or runs f once and keeps it.
func (rs *Renders) do(ctx context.Context, url string, f func() (crawl.Rendered, error)) (crawl.Rendered, error, bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if o, ok := rs.m[url]; ok {
		return o.page, o.err, true
	}
	if ctx.Err() != nil {
		return crawl.Rendered{}, ctx.Err(), false // not kept: the turn ended, not the page
	}
	pg, err := f()
	if ctx.Err() == nil {
		rs.m[url] = renderOut{pg, err}
	}
	return pg, err, false
}

// Page budgets of the rendering crawl: renders per run (every rule's) and
// crawled pages rendered.
const (
	renderDefaultBudget = 12
	crawlRenders        = 12
)

// RenderedPage is a crawled page as the browser rendered it.
type RenderedPage struct {
	Page                // the page as qa_fetch saw it (the raw response)
	R    crawl.Rendered // the page in the browser
}

// Rendering reports whether this run has a rendering crawl.
func (p *Play) Rendering() bool { return p.cfg.Renders != nil }

// Render opens url in the run's browser (once per run: later calls and
// replays get the first result). ok is false when the run has no
// rendering crawl, url is off the allowlist, the render budget
// (Config.RenderBudget) is spent or the browser failed (a skip says why).
// A render is not a tool call: it does not count against the cap.
func (p *Play) Render(url string) (crawl.Rendered, bool) {
	rs := p.cfg.Renders
	if rs == nil || !AllowedURL(p.t.FetchAllow, url) {
		return crawl.Rendered{}, false
	}
	w := p.webState()
	if w.renderedN[url] {
		rd, err, _ := rs.get(p.ctx(), url)
		return rd, err == nil
	}
	budget := p.cfg.RenderBudget
	if budget == 0 {
		budget = renderDefaultBudget
	}
	if len(w.renderedN) >= budget {
		p.Notef("rendering crawl: page budget (%d) spent", budget)
		return crawl.Rendered{}, false
	}
	w.renderedN[url] = true
	rd, err, _ := rs.get(p.ctx(), url)
	if err != nil {
		p.Skip("rendering %s failed (%s)", url, Clip(err.Error(), 120))
		return crawl.Rendered{}, false
	}
	return rd, true
}

// CanSubmit reports whether the run's renderer submits forms.
func (p *Play) CanSubmit() bool {
	if p.cfg.Renders == nil {
		return false
	}
	_, ok := p.cfg.Renders.r.(Submitter)
	return ok
}

// Submit opens page in the run's browser, fills the form f names and
// submits it (once per run and arguments: later calls and replays get the
// first result). It draws on the render budget like Render; ok is false
// when the renderer cannot submit, the page is off the allowlist, the
// budget is spent or the browser failed. Submitting sends what f types to
// the platform: callers submit only at the exercise rung.
func (p *Play) Submit(page string, f crawl.FormFill) (crawl.Rendered, bool) {
	rs := p.cfg.Renders
	if !p.CanSubmit() || !AllowedURL(p.t.FetchAllow, page) {
		return crawl.Rendered{}, false
	}
	key := "submit\x00" + page + "\x00" + f.Method + "\x00" + f.Action + "\x00" + f.Text
	w := p.webState()
	budget := p.cfg.RenderBudget
	if budget == 0 {
		budget = renderDefaultBudget
	}
	if !w.renderedN[key] && len(w.renderedN) >= budget {
		p.Notef("rendering crawl: page budget (%d) spent", budget)
		return crawl.Rendered{}, false
	}
	w.renderedN[key] = true
	rd, err, _ := rs.do(p.ctx(), key, func() (crawl.Rendered, error) {
		return rs.r.(Submitter).Submit(p.ctx(), page, f)
	})
	if err != nil {
		p.Skip("submitting a form of %s failed (%s)", page, Clip(err.Error(), 120))
		return crawl.Rendered{}, false
	}
	p.keepCreated(rd)
	return rd, true
}

// PageForms returns the non-GET forms of the rendered pages, each action
// and method once, with the first page it was on. Do not modify the slice.
func (p *Play) PageForms() []PageForm {
	p.Crawl()
	return p.webState().pageForms
}

func (p *Play) ctx() context.Context {
	if p.cfg.Context != nil {
		return p.cfg.Context
	}
	return context.Background()
}

// Rendered returns the crawled pages the browser rendered, in crawl order
// (running the crawl if it has not run in this replay); nil without a
// rendering crawl. Do not modify the slice.
func (p *Play) Rendered() []RenderedPage {
	p.Crawl()
	return p.webState().rendered
}

// Endpoints returns the calls the rendered pages' scripts made (fetch,
// XHR, WebSocket, EventSource), each method and URL once, in the order
// first seen; the GET ones were crawled. Do not modify the slice.
func (p *Play) Endpoints() []crawl.Request {
	p.Crawl()
	return p.webState().endpoints
}

// Forms returns the non-GET targets the crawl saw (form actions, and the
// non-GET calls of rendered pages' scripts), never fetched. Do not modify
// the slice.
func (p *Play) Forms() []crawl.Link {
	p.Crawl()
	return p.webState().forms
}

// renderPage renders a crawled HTML page and feeds the crawl what the
// browser saw: the rendered DOM's links and forms, and the calls its
// scripts made. add offers a GET URL to the frontier.
func (p *Play) renderPage(pg Page, add func(url, kind string)) {
	if !p.Rendering() || !pg.OK() || crawl.Sniff(pg.URL, Str(pg.Res, "content_type"), Body(pg.Res)) != crawl.KindHTML {
		return
	}
	w := p.webState()
	if len(w.rendered) >= crawlRenders {
		p.Notef("rendering crawl: %d pages rendered, the rest read as text only", crawlRenders)
		return
	}
	rd, ok := p.Render(pg.URL)
	if !ok {
		return
	}
	w.rendered = append(w.rendered, RenderedPage{Page: pg, R: rd})
	for _, n := range rd.Notes {
		p.Notef("rendering %s: %s", pg.URL, n)
	}
	base := rd.FinalURL
	if base == "" || !strings.HasPrefix(base, "http") {
		base = pg.URL
	}
	for _, l := range LinksOf(base, "text/html", rd.HTML) {
		if l.Method != "GET" {
			if l.Kind == "form" && !slices.ContainsFunc(w.pageForms, func(f PageForm) bool { return f.Form.URL == l.URL && f.Form.Method == l.Method }) {
				w.pageForms = append(w.pageForms, PageForm{Page: pg.URL, Form: l})
			}
			w.addForm(l)
			continue
		}
		add(l.URL, l.Kind)
	}
	for _, rq := range rd.Requests {
		if !rq.IsAPI() || rq.Blocked {
			continue
		}
		key := rq.Method + " " + rq.URL
		if w.endpointSeen[key] {
			continue
		}
		w.endpointSeen[key] = true
		w.endpoints = append(w.endpoints, rq)
		switch {
		case rq.Type == "websocket" || rq.Type == "eventsource":
			p.Notef("rendering %s: the page opens a %s to %s", pg.URL, rq.Type, rq.URL)
		case rq.Method == "GET":
			add(StripFragment(rq.URL), rq.Type)
		default:
			w.addForm(crawl.Link{URL: rq.URL, Kind: rq.Type, Method: rq.Method})
		}
	}
}

func (w *webState) addForm(l crawl.Link) {
	for _, f := range w.forms {
		if f.URL == l.URL && f.Method == l.Method {
			return
		}
	}
	w.forms = append(w.forms, l)
}

// StripFragment drops a URL's #fragment.
func StripFragment(u string) string {
	if i := strings.IndexByte(u, '#'); i >= 0 {
		return u[:i]
	}
	return u
}

// renderSummary is the crawl's closing note on the rendering crawl.
func (p *Play) renderSummary() {
	w := p.webState()
	if !p.Rendering() {
		return
	}
	api := 0
	for _, e := range w.endpoints {
		if e.IsAPI() {
			api++
		}
	}
	p.Notef("rendering crawl: %s rendered, %d script calls seen", plural(len(w.rendered), "page"), api)
}

func plural(n int, what string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", what)
	}
	return fmt.Sprintf("%d %ss", n, what)
}
