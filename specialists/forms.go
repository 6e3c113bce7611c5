package specialists

import (
	"strings"

	"github.com/qafleet/fleetd/specialists/probe"
)

// staticFormsListed bounds the POST forms a note names.
const staticFormsListed = 3

// secStaticForms says which forms the static crawl found that no static
// check submits: GET forms go to the reflected-injection probes (a canary
// per field, inject.Reflected); a POST form needs a request body, which
// qa_fetch does not send, so only the rendering crawl's browser submits it.
func secStaticForms(p *probe.Probe, pages []probe.Page) {
	var posts []string
	seen := map[string]bool{}
	for _, pg := range pages {
		if !pg.OK() || !isHTML(pg.Res) {
			continue
		}
		for _, l := range probe.LinksOf(pg.URL, probe.Str(pg.Res, "content_type"), probe.Body(pg.Res)) {
			if l.Kind != "form" || l.Method == "GET" || seen[l.Method+" "+l.URL] {
				continue
			}
			seen[l.Method+" "+l.URL] = true
			posts = append(posts, l.Method+" "+l.URL+" (on "+pg.URL+")")
		}
	}
	if len(posts) == 0 {
		return
	}
	more := ""
	if len(posts) > staticFormsListed {
		more = " and more"
	}
	p.Notef("%d form(s) with a request body found by the static crawl, not submitted by the static checks (qa_fetch sends no body; the rendering crawl's browser submits them when one is on): %s%s",
		len(posts), strings.Join(probe.First(posts, staticFormsListed), "; "), more)
}
