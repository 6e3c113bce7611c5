package specialists

import (
	"fmt"
	neturl "net/url"
	"slices"
	"strings"

	"github.com/qafleet/fleetd/crawl"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/specialists/replay"
)

// renderedLeaks runs ux's leak scan on the rendered DOM of every page
// that is not documentation: stack traces and database errors the page's
// scripts put on screen. A leak the raw responses already showed is the
// same problem (uxRun.leak reports a leak once, by its text), so what is
// left is what only the browser shows; it has no tool repro.
func (u *uxRun) renderedLeaks() {
	for _, rp := range u.p.Rendered() {
		if rp.Kind == "docs" || u.isDocPage(rp.URL) {
			continue
		}
		var serious []replay.Leak
		for _, l := range replay.ScanLeaks(rp.R.HTML) {
			if l.Kind == "stack trace" || l.Kind == "database error" {
				serious = append(serious, l)
			}
		}
		if len(serious) > 0 {
			u.leak(strings.Join(leakSnippets(serious), "\n"), fmt.Sprintf("%s, as a browser renders it,", replay.DescribePage(rp.Page)),
				replay.SurfaceOf(u.p.Target(), rp.URL), "", nil)
		}
	}
}

// leak reports internals in an error answer, once per URL or call.
func (u *uxRun) leak(text, where string, surface fleet.Surface, tool string, args any) {
	found := replay.ScanLeaks(text)
	if a, ok := args.(map[string]any); ok {
		// An error that echoes the requested path ("Cannot GET /usr/x")
		// shows the user's own input, not a server path.
		if url, _ := a["url"].(string); url != "" {
			found = slices.DeleteFunc(slices.Clone(found), func(l replay.Leak) bool {
				return l.Kind == "file path" && strings.Contains(url, strings.TrimRight(l.Snippet, ".:,;"))
			})
		}
	}
	if len(found) == 0 || u.leaks == uxLeakFindings {
		return
	}
	// The same leak reached through another URL (a missing path that ends
	// up in the same handler) is the same problem: report it once.
	var sig []string
	for _, l := range found {
		s := probeToken.ReplaceAllString(l.Snippet, "*")
		if l.Kind == "file path" {
			// The same handler leaks the same directory whatever file was
			// asked for (a missing page, robots.txt, a bogus name).
			if i := strings.LastIndexAny(s, "/\\"); i >= 0 {
				s = s[:i+1]
			}
		}
		sig = append(sig, l.Kind+":"+replay.SigNoise.ReplaceAllString(s, "N"))
	}
	key := strings.Join(sig, "|")
	if u.leakSigs[key] {
		u.p.Notef("%s shows a leak already reported", where)
		return
	}
	u.leakSigs[key] = true
	u.leaks++
	sev := fleet.SeverityLow
	if replay.HasStackTrace(found) {
		sev = fleet.SeverityMedium
	}
	u.p.File(sev, surface,
		fmt.Sprintf("%s leaks internals to the user: %s. Expected a generic error without OS errors, server paths or stack traces.", where, replay.DescribeLeaks(found)),
		tool, args)
}

// pageLeaks scans every crawled answer for internals: all kinds on error
// answers, stack traces and database errors on pages that answered below
// 400 (docs, scripts and stylesheets excepted: they may quote either).
func (u *uxRun) pageLeaks(pages []replay.Page) {
	for _, pg := range pages {
		if !replay.Answered(pg.Res) {
			continue
		}
		if replay.Status(pg.Res) >= 400 {
			u.leak(replay.Body(pg.Res), fmt.Sprintf("The error answer of %s (HTTP %d)", replay.DescribePage(pg), replay.Status(pg.Res)), replay.SurfaceOf(u.p.Target(), pg.URL), "qa_fetch", map[string]any{"url": pg.URL})
			continue
		}
		switch crawl.Sniff(pg.URL, replay.Str(pg.Res, "content_type"), replay.Body(pg.Res)) {
		case crawl.KindMarkdown, crawl.KindText, crawl.KindJS, crawl.KindCSS, crawl.KindBinary:
			continue
		}
		if pg.Kind == "docs" {
			continue
		}
		var serious []replay.Leak
		for _, l := range replay.ScanLeaks(replay.Body(pg.Res)) {
			if l.Kind == "stack trace" || l.Kind == "database error" {
				serious = append(serious, l)
			}
		}
		if len(serious) > 0 {
			u.leak(strings.Join(leakSnippets(serious), "\n"), fmt.Sprintf("%s (HTTP %d)", replay.DescribePage(pg), replay.Status(pg.Res)), replay.SurfaceOf(u.p.Target(), pg.URL), "qa_fetch", map[string]any{"url": pg.URL})
		}
	}
}

func leakSnippets(ls []replay.Leak) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.Snippet)
	}
	return out
}

// errorPaths provokes error pages: the face of a name that does not exist
// and a bogus path on each host.
func (u *uxRun) errorPaths() {
	if u.p.Target().Faces != "" {
		url := u.p.Target().FaceURL(unknownName)
		if r, ok := u.get(url); ok {
			u.leak(replay.Body(r), fmt.Sprintf("The face of a name that does not exist (%s, HTTP %d)", url, replay.Status(r)), fleet.SurfaceFace, "qa_fetch", map[string]any{"url": url})
		}
	}
	var missing []string
	for _, o := range replay.First(replay.TargetOrigins(u.p.Target()), uxHosts) {
		missing = append(missing, o+"/"+missingPage)
	}
	// A missing page next to the docs, when they live below the root.
	if len(u.p.Target().Docs) > 0 {
		if b, err := neturl.Parse(u.p.Target().Docs[0]); err == nil && strings.Count(b.Path, "/") > 1 {
			missing = append(missing, crawl.Resolve(b, missingPage+".md"))
		}
	}
	for _, url := range missing {
		if r, ok := u.get(url); ok {
			u.leak(replay.Body(r), fmt.Sprintf("The error page for a missing path (%s, HTTP %d)", url, replay.Status(r)), replay.SurfaceOf(u.p.Target(), url), "qa_fetch", map[string]any{"url": url})
		}
	}
}
