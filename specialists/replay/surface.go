package replay

import (
	"fmt"
	"slices"

	"github.com/qafleet/fleetd/crawl"
	"github.com/qafleet/fleetd/fleet"
)

// Crawl limits.
const (
	crawlDefaultBudget = 20 // pages a playbook without its own budget fetches
	crawlPerTemplate   = 3  // URLs of one template (crawl.Template) fetched
	crawlNames         = 4  // faces of target.names seeded
)

// leafKinds are links to resources that seldom link anywhere (stylesheets,
// images, media): fetched after every page, for dead links and secrets.
var leafKinds = []string{"img", "media", "stylesheet", "css", "embed"}

// Page is one fetched URL of the platform's surface.
type Page struct {
	URL string
	// kind is how the page was reached: a seed (docs, face, fresh-face,
	// index, robots), a crawl.Link kind (a, script, markdown, url, code,
	// js, json, ...), or a probe of a playbook's own (exposed).
	Kind  string
	From  string // the page that linked it; "" for a seed or a probe
	Depth int
	Res   fleet.Result
}

// OK reports whether the page answered with a status below 400.
func (pg Page) OK() bool { return Answered(pg.Res) && Status(pg.Res) < 400 }

// webState is what one replay of a playbook knows about the platform's web
// side: the crawl, the run's fresh name, and every fetch made so far.
type webState struct {
	crawled *[]Page
	forms   []crawl.Link // non-GET form targets the crawl saw (never fetched)
	fresh   *string
	cache   map[string]fleet.Result

	// The rendering crawl (render.go).
	rendered     []RenderedPage
	renderedN    map[string]bool // URLs rendered in this replay (the budget)
	endpoints    []crawl.Request // calls the rendered pages' scripts made
	endpointSeen map[string]bool
	pageForms    []PageForm // non-GET forms of rendered pages
}

func (p *Play) webState() *webState {
	if p.web == nil {
		p.web = &webState{cache: map[string]fleet.Result{}, renderedN: map[string]bool{}, endpointSeen: map[string]bool{}}
	}
	return p.web
}

// Minted returns the name FreshName minted ("" if none) and whether
// FreshName was asked at all in this replay.
func (p *Play) Minted() (name string, asked bool) {
	w := p.webState()
	if w.fresh == nil {
		return "", false
	}
	return *w.fresh, true
}

// Get fetches url once per replay (later calls return the first result).
// ok is false when it was not fetched: off the allowlist, no room under the
// cap, qa_fetch unavailable, or refused by the tool's allowlist.
func (p *Play) Get(url string) (fleet.Result, bool) {
	w := p.webState()
	if r, ok := w.cache[url]; ok {
		return r, true
	}
	if !AllowedURL(p.t.FetchAllow, url) || !p.Room(1) || !p.Can("qa_fetch") {
		return nil, false
	}
	r := p.Fetch(url)
	if NotAllowed(r) {
		p.Skip("%s is not fetchable (%s)", url, Clip(r.Err(), 100))
		return nil, false
	}
	w.cache[url] = r
	return r, true
}

// FreshName mints one name for this run (qa_create) the first time it is
// asked and returns it; "" when minting is not among the tools, refused by
// the dial or failed. The name is released when the run ends.
func (p *Play) FreshName() string {
	w := p.webState()
	if w.fresh != nil {
		return *w.fresh
	}
	name := ""
	switch {
	case !p.Has("qa_create"):
	case !p.Can("qa_create"):
		p.Skip("qa_create not allowed: no fresh name")
	case !p.Room(1):
	default:
		ex := p.Exchange("qa_create", map[string]any{})
		switch {
		case RefusedByDial(ex):
			p.Skip("qa_create refused (%s): no fresh name", ex.Result.Err())
		case !ex.Result.IsOK() || Str(ex.Result, "name") == "":
			p.Skip("no fresh name (%s)", Clip(ex.Result.Err(), 120))
		default:
			name = Str(ex.Result, "name")
		}
	}
	w.fresh = &name
	return name
}

// fillMemo caches crawl.Fill of a link with a name ("" when it cannot be
// filled): every replay offers every link to the frontier again.
var fillMemo Memo[string]

// linksMemo caches crawl.Links over response bodies across replays.
var linksMemo Memo[[]crawl.Link]

// LinksOf returns the links of a response (memoized; do not modify).
func LinksOf(base, contentType, text string) []crawl.Link {
	return linksMemo.Get(base+"\x00"+contentType+"\x00"+text, func(string) []crawl.Link {
		return crawl.Links(base, contentType, text)
	})
}

// Crawl discovers the platform's web surface, breadth first from the
// docs, the faces of target.names, the face of a fresh name (when the run
// may mint one), and each allowlisted origin's index and robots.txt; it
// follows every same-scope link crawl.Links finds (HTML, markdown, JS,
// JSON, CSS, sitemaps, robots.txt), with placeholders filled with a public
// name, at most crawlPerTemplate URLs of a template, until the playbook's
// page budget (Config.CrawlBudget) or the cap. Every fetch is a qa_fetch the
// playbook makes; the result is memoized for the rest of the replay, so
// any rule may call it. It returns every page fetched, in order; do not
// modify the slice.
func (p *Play) Crawl() []Page {
	w := p.webState()
	if w.crawled != nil {
		return *w.crawled
	}
	var pages []Page
	if !p.Can("qa_fetch") {
		w.crawled = &pages
		p.Skip("qa_fetch unavailable: the web surface was not crawled")
		return pages
	}
	fr := crawl.NewFrontier(func(u string) bool { return AllowedURL(p.t.FetchAllow, u) }, crawlPerTemplate)
	name := FirstName(p.t)
	seed := func(url, kind string) {
		if url == "" {
			return
		}
		if !AllowedURL(p.t.FetchAllow, url) {
			p.Notef("%s (%s) is off the fetch allowlist", url, kind)
			return
		}
		fr.Add(crawl.Item{URL: url, Kind: kind, Seed: true})
	}
	for _, d := range p.t.Docs {
		seed(d, "docs")
	}
	for _, n := range First(p.t.Names, crawlNames) {
		seed(p.t.FaceURL(n), "face")
	}
	for _, o := range TargetOrigins(p.t) {
		seed(o+"/", "index")
		seed(o+"/robots.txt", "robots")
	}
	seeds := fr.Pending()
	budget := p.cfg.CrawlBudget
	if budget == 0 {
		budget = crawlDefaultBudget
	}
	for n, taken := 0, 0; n < budget; taken++ {
		if taken == seeds && p.t.Faces != "" {
			// The configured seeds first (a read-only run starts the same
			// way), then the face of a name this run mints, if it may.
			if name := p.FreshName(); name != "" {
				seed(p.t.FaceURL(name), "fresh-face")
			}
		}
		it, ok := fr.Next()
		if !ok || !p.Room(1) || !p.Can("qa_fetch") {
			break
		}
		if _, cached := p.webState().cache[it.URL]; !cached {
			n++
		}
		r, ok := p.Get(it.URL)
		if !ok {
			continue
		}
		pages = append(pages, Page{URL: it.URL, Kind: it.Kind, From: it.From, Depth: it.Depth, Res: r})
		if !Answered(r) || Status(r) >= 400 {
			continue
		}
		base := it.URL
		if fu := Str(r, "final_url"); fu != "" {
			base = fu
		}
		for _, l := range LinksOf(base, Str(r, "content_type"), Body(r)) {
			if l.Method != "GET" {
				w.addForm(l)
				continue
			}
			u := fillMemo.Get(l.URL+"\x00"+name, func(string) string {
				if u, ok := crawl.Fill(l.URL, name); ok {
					return u
				}
				return ""
			})
			if u == "" {
				continue
			}
			fr.Add(crawl.Item{URL: u, From: it.URL, Kind: l.Kind, Depth: it.Depth + 1, Later: slices.Contains(leafKinds, l.Kind)})
		}
		// The rendering crawl: what the page's scripts built and called.
		p.renderPage(pages[len(pages)-1], func(u, kind string) {
			fr.Add(crawl.Item{URL: u, From: it.URL, Kind: kind, Depth: it.Depth + 1, Later: slices.Contains(leafKinds, kind)})
		})
	}
	p.renderSummary()
	if left := fr.Pending(); left > 0 {
		p.Notef("crawl: %d pages fetched, %d more found but over the page budget", len(pages), left)
	} else {
		p.Notef("crawl: %d pages fetched", len(pages))
	}
	if outside, dropped := fr.Stats(); outside+dropped > 0 {
		p.Notef("crawl: %d links off the allowlist and %d repeats of a URL template not followed", outside, dropped)
	}
	w.crawled = &pages
	return pages
}

// PageAt returns the crawled or fetched result for url.
func (p *Play) PageAt(url string) (fleet.Result, bool) {
	r, ok := p.webState().cache[url]
	return r, ok
}

// DescribePage says where a page was found, for summaries.
func DescribePage(pg Page) string {
	if pg.From == "" {
		return pg.URL
	}
	return fmt.Sprintf("%s (linked from %s)", pg.URL, pg.From)
}
