package specialists

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

// crawlBudget is how many pages each playbook's crawl fetches, seeds
// included. It is part of the playbook's call cap (see defaultCaps).
var crawlBudget = map[string]int{"security": 40, "ux": 40}

// leafKinds are links to resources that seldom link anywhere (stylesheets,
// images, media): fetched after every page, for dead links and secrets.
var leafKinds = []string{"img", "media", "stylesheet", "css", "embed"}

// page is one fetched URL of the platform's surface.
type page struct {
	url string
	// kind is how the page was reached: a seed (docs, face, fresh-face,
	// index, robots), a crawl.Link kind (a, script, markdown, url, code,
	// js, json, ...), or a probe of a playbook's own (exposed).
	kind  string
	from  string // the page that linked it; "" for a seed or a probe
	depth int
	res   fleet.Result
}

// ok reports whether the page answered with a status below 400.
func (pg page) ok() bool { return answered(pg.res) && status(pg.res) < 400 }

// webState is what one replay of a playbook knows about the platform's web
// side: the crawl, the run's fresh name, and every fetch made so far.
type webState struct {
	crawled *[]page
	forms   []crawl.Link // non-GET form targets the crawl saw (never fetched)
	fresh   *string
	cache   map[string]fleet.Result
}

func (p *probe) webState() *webState {
	if p.web == nil {
		p.web = &webState{cache: map[string]fleet.Result{}}
	}
	return p.web
}

// get fetches url once per replay (later calls return the first result).
// ok is false when it was not fetched: off the allowlist, no room under the
// cap, qa_fetch unavailable, or refused by the tool's allowlist.
func (p *probe) get(url string) (fleet.Result, bool) {
	w := p.webState()
	if r, ok := w.cache[url]; ok {
		return r, true
	}
	if !allowedURL(p.t.FetchAllow, url) || !p.room(1) || !p.can("qa_fetch") {
		return nil, false
	}
	r := p.Fetch(url)
	if notAllowed(r) {
		p.Skip("%s is not fetchable (%s)", url, clip(r.Err(), 100))
		return nil, false
	}
	w.cache[url] = r
	return r, true
}

// freshName mints one name for this run (qa_create) the first time it is
// asked and returns it; "" when minting is not among the tools, refused by
// the dial or failed. The name is released when the run ends.
func (p *probe) freshName() string {
	w := p.webState()
	if w.fresh != nil {
		return *w.fresh
	}
	name := ""
	switch {
	case !p.has("qa_create"):
	case !p.can("qa_create"):
		p.Skip("qa_create not allowed: no fresh name")
	case !p.room(1):
	default:
		ex := p.call("qa_create", map[string]any{})
		switch {
		case refusedByDial(ex):
			p.Skip("qa_create refused (%s): no fresh name", ex.Result.Err())
		case !ex.Result.IsOK() || str(ex.Result, "name") == "":
			p.Skip("no fresh name (%s)", clip(ex.Result.Err(), 120))
		default:
			name = str(ex.Result, "name")
		}
	}
	w.fresh = &name
	return name
}

// fillMemo caches crawl.Fill of a link with a name ("" when it cannot be
// filled): every replay offers every link to the frontier again.
var fillMemo memo[string]

// linksMemo caches crawl.Links over response bodies across replays.
var linksMemo memo[[]crawl.Link]

// linksOf returns the links of a response (memoized; do not modify).
func linksOf(base, contentType, text string) []crawl.Link {
	return linksMemo.get(base+"\x00"+contentType+"\x00"+text, func(string) []crawl.Link {
		return crawl.Links(base, contentType, text)
	})
}

// crawl discovers the platform's web surface, breadth first from the
// docs, the faces of target.names, the face of a fresh name (when the run
// may mint one), and each allowlisted origin's index and robots.txt; it
// follows every same-scope link crawl.Links finds (HTML, markdown, JS,
// JSON, CSS, sitemaps, robots.txt), with placeholders filled with a public
// name, at most crawlPerTemplate URLs of a template, until the playbook's
// page budget (crawlBudget) or the cap. Every fetch is a qa_fetch the
// playbook makes; the result is memoized for the rest of the replay, so
// any rule may call it. It returns every page fetched, in order; do not
// modify the slice.
func (p *probe) crawl() []page {
	w := p.webState()
	if w.crawled != nil {
		return *w.crawled
	}
	var pages []page
	if !p.can("qa_fetch") {
		w.crawled = &pages
		p.Skip("qa_fetch unavailable: the web surface was not crawled")
		return pages
	}
	fr := crawl.NewFrontier(func(u string) bool { return allowedURL(p.t.FetchAllow, u) }, crawlPerTemplate)
	name := firstName(p.t)
	seed := func(url, kind string) {
		if url == "" {
			return
		}
		if !allowedURL(p.t.FetchAllow, url) {
			p.notef("%s (%s) is off the fetch allowlist", url, kind)
			return
		}
		fr.Add(crawl.Item{URL: url, Kind: kind, Seed: true})
	}
	for _, d := range p.t.Docs {
		seed(d, "docs")
	}
	for _, n := range first(p.t.Names, crawlNames) {
		seed(p.t.FaceURL(n), "face")
	}
	for _, o := range targetOrigins(p.t) {
		seed(o+"/", "index")
		seed(o+"/robots.txt", "robots")
	}
	seeds := fr.Pending()
	budget := crawlBudget[p.pb.name]
	if budget == 0 {
		budget = crawlDefaultBudget
	}
	for n, taken := 0, 0; n < budget; taken++ {
		if taken == seeds && p.t.Faces != "" {
			// The configured seeds first (a read-only run starts the same
			// way), then the face of a name this run mints, if it may.
			if name := p.freshName(); name != "" {
				seed(p.t.FaceURL(name), "fresh-face")
			}
		}
		it, ok := fr.Next()
		if !ok || !p.room(1) || !p.can("qa_fetch") {
			break
		}
		if _, cached := p.webState().cache[it.URL]; !cached {
			n++
		}
		r, ok := p.get(it.URL)
		if !ok {
			continue
		}
		pages = append(pages, page{url: it.URL, kind: it.Kind, from: it.From, depth: it.Depth, res: r})
		if !answered(r) || status(r) >= 400 {
			continue
		}
		base := it.URL
		if fu := str(r, "final_url"); fu != "" {
			base = fu
		}
		for _, l := range linksOf(base, str(r, "content_type"), body(r)) {
			if l.Method != "GET" {
				w.forms = append(w.forms, l)
				continue
			}
			u := fillMemo.get(l.URL+"\x00"+name, func(string) string {
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
	}
	if left := fr.Pending(); left > 0 {
		p.notef("crawl: %d pages fetched, %d more found but over the page budget", len(pages), left)
	} else {
		p.notef("crawl: %d pages fetched", len(pages))
	}
	if outside, dropped := fr.Stats(); outside+dropped > 0 {
		p.notef("crawl: %d links off the allowlist and %d repeats of a URL template not followed", outside, dropped)
	}
	w.crawled = &pages
	return pages
}

// pageAt returns the crawled or fetched result for url.
func (p *probe) pageAt(url string) (fleet.Result, bool) {
	r, ok := p.webState().cache[url]
	return r, ok
}

// describePage says where a page was found, for summaries.
func describePage(pg page) string {
	if pg.from == "" {
		return pg.url
	}
	return fmt.Sprintf("%s (linked from %s)", pg.url, pg.from)
}
