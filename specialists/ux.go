package specialists

import (
	"encoding/json"
	"fmt"
	neturl "net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/qafleet/fleetd/crawl"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/specialists/authz"
	"github.com/qafleet/fleetd/specialists/probe"
)

// UX limits.
const (
	uxHosts        = 2  // hosts probed with a bogus path
	uxNames        = 4  // public names called
	uxClaims       = 12 // documented endpoints checked against their docs
	uxDeadFindings = 5
	uxLeakFindings = 4
	uxTypeFindings = 3
)

// unknownName is a name no platform should have. It is fixed rather than
// seeded by the run so that the same leak found by every run groups into
// one fingerprint.
const unknownName = "qa-no-such-name-0"

// missingPage is a path no platform should serve, fixed for the same reason.
const missingPage = "qa-no-such-page"

// probeToken matches the names and paths above as they show up in an
// error (possibly with an extension added), so one leak reached through
// several of them is recognized as one.
var probeToken = regexp.MustCompile(`qa-no-such-[a-z0-9-]+(?:\.[a-z0-9]+)*`)

// uxRun is one ux session's memory: what was reported.
type uxRun struct {
	p     *probe.Probe
	dead  map[string]bool // URLs already reported as dead or broken
	leaks int
	deads int
	types int
	// leakSigs are the leaks reported so far, by kind and normalized text.
	leakSigs map[string]bool
	calls    map[string]fleet.Result // qa_call results by canonical args
	// login is the sign-in the docs (or target.auth) describe: a
	// documented endpoint that refuses a caller without a session is
	// behind it, not short of credentials the docs hide.
	login authz.Flow
}

// ux checks the platform as a user or an agent meets it; see the package
// doc. Every check that reads pages runs on every page the crawl found.
func ux(p *probe.Probe, _ Options) {
	u := &uxRun{p: p, dead: map[string]bool{}, leakSigs: map[string]bool{}, calls: map[string]fleet.Result{}}
	if p.Can("qa_fetch") {
		pages := p.Crawl()
		u.login = authz.Learn(pages, p.Target().Auth)
		u.docs(pages)
		u.contract(pages)
		u.deadLinks(pages)
		u.contentTypes(pages)
		u.errorPaths() // before pageLeaks: a leak both show is named by its probe
		u.pageLeaks(pages)
		u.rendered()      // what the rendering crawl saw break
		u.renderedLeaks() // internals only the rendered DOM shows
	} else {
		p.Skip("qa_fetch unavailable: docs, links and error pages not checked")
	}
	u.replies()
}

// get fetches url once per run (see Probe.Get).
func (u *uxRun) get(url string) (fleet.Result, bool) { return u.p.Get(url) }

// agent is qa_call, once per distinct request in this run.
func (u *uxRun) agent(a probe.CallArgs) (fleet.Exchange, bool) {
	key := string(probe.Canonical(probe.Marshal(a)))
	if r, ok := u.calls[key]; ok {
		return fleet.Exchange{Result: r}, true
	}
	if !u.p.Can("qa_call") || !u.p.Room(1) {
		return fleet.Exchange{}, false
	}
	ex := u.p.Exchange("qa_call", a)
	u.calls[key] = ex.Result
	return ex, true
}

// leak reports internals in an error answer, once per URL or call.
func (u *uxRun) leak(text, where string, surface fleet.Surface, tool string, args any) {
	found := probe.ScanLeaks(text)
	if a, ok := args.(map[string]any); ok {
		// An error that echoes the requested path ("Cannot GET /usr/x")
		// shows the user's own input, not a server path.
		if url, _ := a["url"].(string); url != "" {
			found = slices.DeleteFunc(slices.Clone(found), func(l probe.Leak) bool {
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
		sig = append(sig, l.Kind+":"+probe.SigNoise.ReplaceAllString(s, "N"))
	}
	key := strings.Join(sig, "|")
	if u.leakSigs[key] {
		u.p.Notef("%s shows a leak already reported", where)
		return
	}
	u.leakSigs[key] = true
	u.leaks++
	sev := fleet.SeverityLow
	if probe.HasStackTrace(found) {
		sev = fleet.SeverityMedium
	}
	u.p.Report(sev, surface,
		fmt.Sprintf("%s leaks internals to the user: %s. Expected a generic error without OS errors, server paths or stack traces.", where, probe.DescribeLeaks(found)),
		tool, args)
}

// docs reports configured docs pages that do not answer.
func (u *uxRun) docs(pages []probe.Page) {
	for _, pg := range pages {
		if pg.Kind != "docs" || pg.OK() {
			continue
		}
		u.dead[pg.URL] = true
		u.p.Report(fleet.SeverityMedium, fleet.SurfaceDocs,
			fmt.Sprintf("The docs page %s %s. Expected the platform's configured docs to be served.", pg.URL, deadWhy(pg.Res)),
			"qa_fetch", map[string]any{"url": pg.URL})
		u.leak(probe.Body(pg.Res), "The error page of "+pg.URL, fleet.SurfaceDocs, "qa_fetch", map[string]any{"url": pg.URL})
	}
}

// deadWhy says how a fetch failed.
func deadWhy(r fleet.Result) string {
	if !probe.Answered(r) {
		return "does not answer (" + probe.Clip(probe.OneLine(r.Err()), 120) + ")"
	}
	return fmt.Sprintf("answers HTTP %d", probe.Status(r))
}

// isDead reports whether a link target is gone: no answer, 404, 410 or 5xx.
func isDead(r fleet.Result) bool {
	s := probe.Status(r)
	return !probe.Answered(r) || s == 404 || s == 410 || s >= 500
}

// linkKinds are the link kinds an author wrote as links (markup, markdown,
// bare URLs, sitemaps): a dead one is a broken page. Paths guessed from
// scripts, JSON, code spans or robots.txt are not links a user follows.
var linkKinds = []string{"a", "area", "link", "stylesheet", "script", "img", "media", "iframe", "embed", "meta-refresh", "markdown", "url", "css", "sitemap"}

// isDocPage reports whether a crawled page is documentation: a configured
// docs page, or a markdown or plain-text page.
func (u *uxRun) isDocPage(url string) bool {
	if slices.Contains(u.p.Target().Docs, url) {
		return true
	}
	r, ok := u.p.PageAt(url)
	if !ok {
		return false
	}
	k := crawl.Sniff(url, probe.Str(r, "content_type"), probe.Body(r))
	return k == crawl.KindMarkdown || k == crawl.KindText
}

// onFace reports whether url is the face of a public or fresh name: user
// content, whose broken links are its author's, not the platform's.
func (u *uxRun) onFace(url string) bool {
	if probe.NameOfFace(u.p.Target(), url) != "" {
		return true
	}
	name, _ := u.p.Minted()
	return name != "" && u.p.Target().FaceURL(name) == url
}

// deadLinks reports links on crawled pages whose targets are gone. A
// link only the rendered DOM holds (the page's script built it; the
// rendering crawl offered it) is checked the same way, and its finding
// says the page's script built it.
func (u *uxRun) deadLinks(pages []probe.Page) {
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
		u.p.Report(fleet.SeverityLow, surface,
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
			return slices.ContainsFunc(probe.LinksOf(base, ct, text), func(l crawl.Link) bool { return l.URL == link })
		}
		base := rp.R.FinalURL
		if !strings.HasPrefix(base, "http") {
			base = rp.URL
		}
		return has(base, "text/html", rp.R.HTML) && !has(rp.URL, probe.Str(rp.Res, "content_type"), probe.Body(rp.Res))
	}
	return false
}

// pageLeaks scans every crawled answer for internals: all kinds on error
// answers, stack traces and database errors on pages that answered below
// 400 (docs, scripts and stylesheets excepted: they may quote either).
func (u *uxRun) pageLeaks(pages []probe.Page) {
	for _, pg := range pages {
		if !probe.Answered(pg.Res) {
			continue
		}
		if probe.Status(pg.Res) >= 400 {
			u.leak(probe.Body(pg.Res), fmt.Sprintf("The error answer of %s (HTTP %d)", probe.DescribePage(pg), probe.Status(pg.Res)), probe.SurfaceOf(u.p.Target(), pg.URL), "qa_fetch", map[string]any{"url": pg.URL})
			continue
		}
		switch crawl.Sniff(pg.URL, probe.Str(pg.Res, "content_type"), probe.Body(pg.Res)) {
		case crawl.KindMarkdown, crawl.KindText, crawl.KindJS, crawl.KindCSS, crawl.KindBinary:
			continue
		}
		if pg.Kind == "docs" {
			continue
		}
		var serious []probe.Leak
		for _, l := range probe.ScanLeaks(probe.Body(pg.Res)) {
			if l.Kind == "stack trace" || l.Kind == "database error" {
				serious = append(serious, l)
			}
		}
		if len(serious) > 0 {
			u.leak(strings.Join(leakSnippets(serious), "\n"), fmt.Sprintf("%s (HTTP %d)", probe.DescribePage(pg), probe.Status(pg.Res)), probe.SurfaceOf(u.p.Target(), pg.URL), "qa_fetch", map[string]any{"url": pg.URL})
		}
	}
}

func leakSnippets(ls []probe.Leak) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.Snippet)
	}
	return out
}

// contentTypes reports answers whose Content-Type contradicts them: a
// declared JSON body that does not parse, a JSON document served as HTML,
// a script served as HTML (an app shell answering for a missing file), a
// body without any Content-Type. One finding per host and kind of mismatch.
func (u *uxRun) contentTypes(pages []probe.Page) {
	seen := map[string]bool{}
	for _, pg := range pages {
		if !pg.OK() || probe.Flag(pg.Res, "truncated") || strings.TrimSpace(probe.Body(pg.Res)) == "" || probe.Str(pg.Res, "method") == "HEAD" || u.dead[pg.URL] {
			continue
		}
		why := typeMismatch(pg)
		if why == "" {
			continue
		}
		key := probe.HostOf(pg.URL) + "\x00" + why
		if seen[key] {
			continue
		}
		seen[key] = true
		if u.types == uxTypeFindings {
			u.p.Notef("more content-type mismatches not reported (%s)", pg.URL)
			continue
		}
		u.types++
		u.p.Report(fleet.SeverityLow, "content-type",
			fmt.Sprintf("%s is %s. Expected the Content-Type to describe the body, so clients and browsers treat it right.", probe.DescribePage(pg), why),
			"qa_fetch", map[string]any{"url": pg.URL})
	}
}

// typeMismatch describes how a page's Content-Type contradicts its body,
// "" if it does not.
func typeMismatch(pg probe.Page) string {
	ct := strings.ToLower(probe.Str(pg.Res, "content_type"))
	if ct == "" {
		ct = strings.ToLower(probe.Headers(pg.Res)["content-type"])
	}
	b := probe.Body(pg.Res)
	switch {
	case ct == "":
		return "served without a Content-Type"
	case strings.Contains(ct, "json") && !json.Valid([]byte(b)):
		return fmt.Sprintf("declared %s but its body is not JSON (starts %s)", probe.Clip(ct, 60), probe.Quote(b, 40))
	case strings.Contains(ct, "html") && looksJSONDoc(b):
		return fmt.Sprintf("a JSON document served as %s", probe.Clip(ct, 60))
	case pg.Kind == "script" && strings.Contains(ct, "html"):
		return fmt.Sprintf("loaded as a script but served as %s (starts %s)", probe.Clip(ct, 60), probe.Quote(b, 40))
	}
	return ""
}

// looksJSONDoc reports whether b is a JSON object or array.
func looksJSONDoc(b string) bool {
	t := strings.TrimSpace(b)
	return (strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[")) && json.Valid([]byte(t))
}

// errorPaths provokes error pages: the face of a name that does not exist
// and a bogus path on each host.
func (u *uxRun) errorPaths() {
	if u.p.Target().Faces != "" {
		url := u.p.Target().FaceURL(unknownName)
		if r, ok := u.get(url); ok {
			u.leak(probe.Body(r), fmt.Sprintf("The face of a name that does not exist (%s, HTTP %d)", url, probe.Status(r)), fleet.SurfaceFace, "qa_fetch", map[string]any{"url": url})
		}
	}
	var missing []string
	for _, o := range probe.First(probe.TargetOrigins(u.p.Target()), uxHosts) {
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
			u.leak(probe.Body(r), fmt.Sprintf("The error page for a missing path (%s, HTTP %d)", url, probe.Status(r)), probe.SurfaceOf(u.p.Target(), url), "qa_fetch", map[string]any{"url": url})
		}
	}
}

// replies checks replies (exercise rung): internals in the error for an
// unknown target, and empty replies from public names and a fresh one.
func (u *uxRun) replies() {
	p := u.p
	if !p.Can("qa_call") {
		p.Skip("qa_call unavailable: replies not checked")
		return
	}
	a := probe.CallArgs{Target: unknownName, Message: "hello"}
	ex, ok := u.agent(a)
	if !ok {
		return
	}
	if probe.RefusedByDial(ex) {
		p.Skip("qa_call refused (%s): replies not checked", ex.Result.Err())
		return
	}
	u.leak(probe.Body(ex.Result), fmt.Sprintf("The call endpoint's answer for an unknown target (HTTP %d)", probe.Status(ex.Result)), fleet.SurfaceCall, "qa_call", a)
	for _, n := range probe.First(p.Target().Names, uxNames) {
		a := probe.CallArgs{Target: n, Message: "hello"}
		ex, ok := u.agent(a)
		if !ok {
			return
		}
		r := ex.Result
		switch {
		case probe.Str(r, "hint") == "empty_reply":
			p.Report(fleet.SeverityMedium, fleet.SurfaceCall,
				fmt.Sprintf("The agent of %q answers %q with HTTP %d and an empty reply. Expected a non-empty reply or an error that says why.", n, a.Message, probe.Status(r)),
				"qa_call", a)
		case probe.Status(r) >= 400:
			u.leak(probe.Body(r), fmt.Sprintf("The call endpoint's error for %q (HTTP %d)", n, probe.Status(r)), fleet.SurfaceCall, "qa_call", a)
		}
	}
	name := p.FreshName()
	if name == "" {
		return
	}
	ex, ok = u.agent(probe.CallArgs{Target: name, Message: "hello"})
	if !ok {
		return
	}
	r := ex.Result
	if probe.Str(r, "hint") == "empty_reply" {
		p.Report(fleet.SeverityLow, fleet.SurfaceCall,
			fmt.Sprintf("The agent of a freshly minted name answers \"hello\" with HTTP %d and an empty reply. Expected a default reply or an error that says the name has no agent. Steps: qa_create, then qa_call the new name.", probe.Status(r)),
			"", nil)
	} else if strings.TrimSpace(probe.Body(r)) != "" {
		p.Notef("a fresh name's agent replies (%s)", probe.Str(r, "hint"))
	}
}
