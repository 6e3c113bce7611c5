package specialists

import (
	"fmt"
	"slices"
	"strings"

	"github.com/qafleet/fleetd/crawl"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/specialists/replay"
)

// deadWhy says how a fetch failed.
func deadWhy(r fleet.Result) string {
	if !replay.Answered(r) {
		return "does not answer (" + replay.Clip(replay.OneLine(r.Err()), 120) + ")"
	}
	return fmt.Sprintf("answers HTTP %d", replay.Status(r))
}

// isDead reports whether a link target is gone: no answer, 404, 410 or 5xx.
func isDead(r fleet.Result) bool {
	s := replay.Status(r)
	return !replay.Answered(r) || s == 404 || s == 410 || s >= 500
}

// linkKinds are the link kinds an author wrote as links (markup, markdown,
// bare URLs, sitemaps): a dead one is a broken page. Paths guessed from
// scripts, JSON, code spans or robots.txt are not links a user follows.
var linkKinds = []string{"a", "area", "link", "stylesheet", "script", "img", "media", "iframe", "embed", "meta-refresh", "markdown", "url", "css", "sitemap"}

// deadLinks reports links on crawled pages whose targets are gone. A
// link only the rendered DOM holds (the page's script built it; the
// rendering crawl offered it) is checked the same way, and its finding
// says the page's script built it.
func (u *uxRun) deadLinks(pages []replay.Page) {
	for _, pg := range pages {
		if pg.From == "" || !slices.Contains(linkKinds, pg.Kind) || !isDead(pg.Res) || u.dead[pg.URL] || u.onFace(pg.From) {
			continue
		}
		u.dead[pg.URL] = true
		if u.deads == uxDeadFindings {
			u.p.Notef("more dead links not reported (%s)", pg.URL)
			continue
		}
		u.deads++
		surface := fleet.Surface("links")
		if u.isDocPage(pg.From) {
			surface = fleet.SurfaceDocs
		}
		on := pg.From
		if u.builtByScript(pg.From, pg.URL) {
			on += ", built by the page's script (only the page as a browser renders it holds the link)"
		}
		u.p.File(fleet.SeverityLow, surface,
			fmt.Sprintf("Dead link on %s: %s %s. Expected every link to resolve.", on, pg.URL, deadWhy(pg.Res)),
			"qa_fetch", map[string]any{"url": pg.URL})
	}
}

// builtByScript reports whether link is a link of page as the browser
// rendered it and not of page as served: the page's script built it.
func (u *uxRun) builtByScript(page, link string) bool {
	for _, rp := range u.p.Rendered() {
		if rp.URL != page {
			continue
		}
		has := func(base, ct, text string) bool {
			return slices.ContainsFunc(replay.LinksOf(base, ct, text), func(l crawl.Link) bool { return l.URL == link })
		}
		base := rp.R.FinalURL
		if !strings.HasPrefix(base, "http") {
			base = rp.URL
		}
		return has(base, "text/html", rp.R.HTML) && !has(rp.URL, replay.Str(rp.Res, "content_type"), replay.Body(rp.Res))
	}
	return false
}

// deadDocs reports configured docs pages that do not answer.
func (u *uxRun) deadDocs(pages []replay.Page) {
	for _, pg := range pages {
		if pg.Kind != "docs" || pg.OK() {
			continue
		}
		u.dead[pg.URL] = true
		u.p.File(fleet.SeverityMedium, fleet.SurfaceDocs,
			fmt.Sprintf("The docs page %s %s. Expected the platform's configured docs to be served.", pg.URL, deadWhy(pg.Res)),
			"qa_fetch", map[string]any{"url": pg.URL})
		u.leak(replay.Body(pg.Res), "The error page of "+pg.URL, fleet.SurfaceDocs, "qa_fetch", map[string]any{"url": pg.URL})
	}
}
