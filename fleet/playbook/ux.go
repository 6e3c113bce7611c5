package playbook

import (
	"fmt"
	neturl "net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/qafleet/fleetd/fleet"
)

// UX limits.
const (
	uxDocs         = 4  // docs pages read
	uxLinks        = 15 // links followed
	uxEndpoints    = 6  // documented GET endpoints tried
	uxHosts        = 2  // hosts probed with a bogus path
	uxNames        = 4  // public names called
	uxDeadFindings = 5
	uxLeakFindings = 4
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

// uxRun is one ux session's memory: what was fetched and reported.
type uxRun struct {
	p     *probe
	cache map[string]fleet.Result
	dead  map[string]bool
	leaks int
	deads int
	// leakSigs are the leaks reported so far, by kind and normalized text.
	leakSigs map[string]bool
}

// ux checks the platform as a user or an agent meets it; see the package doc.
func ux(p *probe) {
	u := &uxRun{p: p, cache: map[string]fleet.Result{}, dead: map[string]bool{}, leakSigs: map[string]bool{}}
	if p.can("qa_fetch") {
		docs := u.docs()
		linked := u.links(docs)
		u.endpoints(append(docs, linked...))
		u.errorPaths()
	} else {
		p.Skip("qa_fetch unavailable: docs, links and error pages not checked")
	}
	u.calls()
}

// get fetches url once per run; ok is false when it was not fetched.
func (u *uxRun) get(url string) (fleet.Result, bool) {
	if r, ok := u.cache[url]; ok {
		return r, true
	}
	if !allowedURL(u.p.t.FetchAllow, url) || !u.p.room(1) || !u.p.can("qa_fetch") {
		return nil, false
	}
	r := u.p.Fetch(url)
	if notAllowed(r) {
		u.p.Skip("%s is not fetchable (%s)", url, clip(r.Err(), 100))
		return nil, false
	}
	u.cache[url] = r
	return r, true
}

// leak reports internals in an error answer, once per URL or call.
func (u *uxRun) leak(text, where string, surface fleet.Surface, tool string, args any) {
	found := ScanLeaks(text)
	if a, ok := args.(map[string]any); ok {
		// An error that echoes the requested path ("Cannot GET /usr/x")
		// shows the user's own input, not a server path.
		if url, _ := a["url"].(string); url != "" {
			found = slices.DeleteFunc(slices.Clone(found), func(l Leak) bool {
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
		sig = append(sig, l.Kind+":"+sigNoise.ReplaceAllString(s, "N"))
	}
	key := strings.Join(sig, "|")
	if u.leakSigs[key] {
		u.p.notef("%s shows a leak already reported", where)
		return
	}
	u.leakSigs[key] = true
	u.leaks++
	sev := fleet.SeverityLow
	if hasStackTrace(found) {
		sev = fleet.SeverityMedium
	}
	u.p.Report(sev, surface,
		fmt.Sprintf("%s leaks internals to the user: %s. Expected a generic error without OS errors, server paths or stack traces.", where, describeLeaks(found)),
		tool, args)
}

type docPage struct {
	url string
	res fleet.Result
}

// docs reads the configured docs pages.
func (u *uxRun) docs() []docPage {
	var out []docPage
	for _, d := range first(u.p.t.Docs, uxDocs) {
		r, ok := u.get(d)
		if !ok {
			continue
		}
		if !answered(r) || status(r) >= 400 {
			u.dead[d] = true
			u.p.Report(fleet.SeverityMedium, fleet.SurfaceDocs,
				fmt.Sprintf("The docs page %s %s. Expected the platform's configured docs to be served.", d, deadWhy(r)),
				"qa_fetch", map[string]any{"url": d})
			u.leak(body(r), "The error page of "+d, fleet.SurfaceDocs, "qa_fetch", map[string]any{"url": d})
			continue
		}
		out = append(out, docPage{d, r})
	}
	return out
}

// deadWhy says how a fetch failed.
func deadWhy(r fleet.Result) string {
	if !answered(r) {
		return "does not answer (" + clip(oneLine(r.Err()), 120) + ")"
	}
	return fmt.Sprintf("answers HTTP %d", status(r))
}

// isDead reports whether a link target is gone: no answer, 404, 410 or 5xx.
func isDead(r fleet.Result) bool {
	s := status(r)
	return !answered(r) || s == 404 || s == 410 || s >= 500
}

// links follows the docs' links on allowlisted hosts. It returns the
// linked pages that are docs themselves (markdown or plain text), whose
// documented endpoints count too.
func (u *uxRun) links(docs []docPage) []docPage {
	var more []docPage
	type link struct{ url, doc string }
	var links []link
	elsewhere := 0
	name := firstName(u.p.t)
	for _, d := range docs {
		for _, l := range ExtractLinks(d.url, body(d.res)) {
			filled, ok := fillPlaceholders(l, name)
			if !ok {
				continue
			}
			if !allowedURL(u.p.t.FetchAllow, filled) {
				elsewhere++
				continue
			}
			if !slices.ContainsFunc(links, func(x link) bool { return x.url == filled }) {
				links = append(links, link{filled, d.url})
			}
		}
	}
	if elsewhere > 0 {
		u.p.notef("%d doc links to hosts off the allowlist not checked", elsewhere)
	}
	checked := 0
	for _, l := range links {
		if checked == uxLinks {
			u.p.notef("%d more doc links not checked", len(links)-checked)
			break
		}
		r, ok := u.get(l.url)
		if !ok {
			continue
		}
		checked++
		if !isDead(r) {
			if isTextDoc(l.url, r) && status(r) < 400 {
				more = append(more, docPage{l.url, r})
			}
			continue
		}
		u.dead[l.url] = true
		if u.deads < uxDeadFindings {
			u.deads++
			u.p.Report(fleet.SeverityLow, fleet.SurfaceDocs,
				fmt.Sprintf("Dead link in %s: %s %s. Expected every link in the docs to resolve.", l.doc, l.url, deadWhy(r)),
				"qa_fetch", map[string]any{"url": l.url})
		}
		u.leak(body(r), "The error page of "+l.url, surfaceOf(u.p.t, l.url), "qa_fetch", map[string]any{"url": l.url})
	}
	if checked > 0 {
		u.p.notef("%d doc links checked", checked)
	}
	return more
}

// isTextDoc reports whether a fetched page is a markdown or plain-text doc.
func isTextDoc(url string, r fleet.Result) bool {
	ct := strings.ToLower(str(r, "content_type"))
	path := strings.ToLower(strings.SplitN(url, "?", 2)[0])
	return strings.Contains(ct, "markdown") || strings.HasPrefix(ct, "text/plain") ||
		strings.HasSuffix(path, ".md") || strings.HasSuffix(path, ".txt")
}

// endpoints tries every documented GET endpoint.
func (u *uxRun) endpoints(docs []docPage) {
	tried, other := 0, 0
	name := firstName(u.p.t)
	for _, d := range docs {
		for _, e := range DocEndpoints(d.url, body(d.res)) {
			if e.Method != "GET" {
				other++
				continue
			}
			url, ok := fillPlaceholders(e.URL, name)
			if !ok || tried == uxEndpoints {
				continue
			}
			r, ok := u.get(url)
			if !ok {
				continue
			}
			tried++
			where := fmt.Sprintf("%s (line %d)", d.url, e.Line)
			switch s := status(r); {
			case s == 405 || s == 501:
				allow := headers(r)["allow"]
				if allow != "" {
					allow = " (Allow: " + allow + ")"
				}
				u.p.Report(fleet.SeverityMedium, fleet.SurfaceDocs,
					fmt.Sprintf("The docs promise GET %s in %s, but the endpoint answers HTTP %d%s. Expected the documented method to work, or the docs to show the method that does.", url, where, s, allow),
					"qa_fetch", map[string]any{"url": url})
			case isDead(r) && !u.dead[url]:
				u.dead[url] = true
				u.p.Report(fleet.SeverityMedium, fleet.SurfaceDocs,
					fmt.Sprintf("The docs promise GET %s in %s, but it %s. Expected the documented endpoint to answer.", url, where, deadWhy(r)),
					"qa_fetch", map[string]any{"url": url})
			}
			if status(r) >= 400 {
				u.leak(body(r), "The error answer of documented GET "+url, surfaceOf(u.p.t, url), "qa_fetch", map[string]any{"url": url})
			}
		}
	}
	if other > 0 {
		u.p.notef("%d documented non-GET endpoints not checked with qa_fetch", other)
	}
}

// errorPaths provokes error pages: the face of a name that does not exist
// and a bogus path on each host.
func (u *uxRun) errorPaths() {
	if u.p.t.Faces != "" {
		url := u.p.t.FaceURL(unknownName)
		if r, ok := u.get(url); ok {
			u.leak(body(r), fmt.Sprintf("The face of a name that does not exist (%s, HTTP %d)", url, status(r)), fleet.SurfaceFace, "qa_fetch", map[string]any{"url": url})
		}
	}
	var missing []string
	for _, o := range first(targetOrigins(u.p.t), uxHosts) {
		missing = append(missing, o+"/"+missingPage)
	}
	// A missing page next to the docs, when they live below the root.
	if len(u.p.t.Docs) > 0 {
		if b, err := neturl.Parse(u.p.t.Docs[0]); err == nil && strings.Count(b.Path, "/") > 1 {
			missing = append(missing, resolve(b, missingPage+".md"))
		}
	}
	for _, url := range missing {
		if r, ok := u.get(url); ok {
			u.leak(body(r), fmt.Sprintf("The error page for a missing path (%s, HTTP %d)", url, status(r)), surfaceOf(u.p.t, url), "qa_fetch", map[string]any{"url": url})
		}
	}
}

// calls checks replies (exercise rung): internals in the error for an
// unknown target, and empty replies from public names and a fresh one.
func (u *uxRun) calls() {
	p := u.p
	if !p.can("qa_call") {
		p.Skip("qa_call unavailable: replies not checked")
		return
	}
	if !p.room(1) {
		return
	}
	a := callArgs{Target: unknownName, Message: "hello"}
	ex := p.call("qa_call", a)
	if refusedByDial(ex) {
		p.Skip("qa_call refused (%s): replies not checked", ex.Result.Err())
		return
	}
	u.leak(body(ex.Result), fmt.Sprintf("The call endpoint's answer for an unknown target (HTTP %d)", status(ex.Result)), fleet.SurfaceCall, "qa_call", a)
	for _, n := range first(p.t.Names, uxNames) {
		if !p.room(1) {
			return
		}
		a := callArgs{Target: n, Message: "hello"}
		r := p.Agent(a)
		switch {
		case str(r, "hint") == "empty_reply":
			p.Report(fleet.SeverityMedium, fleet.SurfaceCall,
				fmt.Sprintf("The agent of %q answers %q with HTTP %d and an empty reply. Expected a non-empty reply or an error that says why.", n, a.Message, status(r)),
				"qa_call", a)
		case status(r) >= 400:
			u.leak(body(r), fmt.Sprintf("The call endpoint's error for %q (HTTP %d)", n, status(r)), fleet.SurfaceCall, "qa_call", a)
		}
	}
	if !p.can("qa_create") || !p.room(2) {
		return
	}
	ex = p.call("qa_create", map[string]any{})
	name := str(ex.Result, "name")
	if refusedByDial(ex) || !ex.Result.IsOK() || name == "" {
		p.Skip("no fresh name to call (%s)", clip(ex.Result.Err(), 120))
		return
	}
	r := p.Agent(callArgs{Target: name, Message: "hello"})
	if str(r, "hint") == "empty_reply" {
		p.Report(fleet.SeverityLow, fleet.SurfaceCall,
			fmt.Sprintf("The agent of a freshly minted name answers \"hello\" with HTTP %d and an empty reply. Expected a default reply or an error that says the name has no agent. Steps: qa_create, then qa_call the new name.", status(r)),
			"", nil)
	} else if strings.TrimSpace(body(r)) != "" {
		p.notef("a fresh name's agent replies (%s)", str(r, "hint"))
	}
}
