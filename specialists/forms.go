package specialists

import (
	"strings"

	"github.com/qafleet/fleetd/specialists/probe"
)

// staticFormsListed bounds the POST forms a note names.
const staticFormsListed = 3

// secStaticForms says which forms the static crawl found that nothing in
// the run submits: GET forms go to the reflected-injection probes (a
// canary per field, inject.Reflected) and the non-GET forms of rendered
// pages to the browser (secForms); a non-GET form on a page the browser
// did not render (or with no browser) needs a request body, which qa_fetch
// does not send.
func secStaticForms(p *probe.Probe, pages []probe.Page) {
	submitted := map[string]bool{}
	if p.CanSubmit() {
		for _, pf := range probe.First(p.PageForms(), formsMax) {
			submitted[pf.Form.Method+" "+pf.Form.URL] = true
		}
	}
	var posts []string
	seen := map[string]bool{}
	for _, pg := range pages {
		if !pg.OK() || !isHTML(pg.Res) {
			continue
		}
		for _, l := range probe.LinksOf(pg.URL, probe.Str(pg.Res, "content_type"), probe.Body(pg.Res)) {
			key := l.Method + " " + l.URL
			if l.Kind != "form" || l.Method == "GET" || seen[key] || submitted[key] {
				continue
			}
			seen[key] = true
			posts = append(posts, key+" (on "+pg.URL+")")
		}
	}
	if len(posts) == 0 {
		return
	}
	more, why := "", "qa_fetch sends no body and no browser submits forms in this run"
	if len(posts) > staticFormsListed {
		more = " and more"
	}
	if p.CanSubmit() {
		why = "qa_fetch sends no body, and the browser submits only the first forms of the pages it rendered"
	}
	p.Notef("%d form(s) with a request body found by the static crawl and not submitted (%s): %s%s",
		len(posts), why, strings.Join(probe.First(posts, staticFormsListed), "; "), more)
}
