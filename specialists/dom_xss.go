package specialists

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/qafleet/fleetd/crawl"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/specialists/probe"
)

// The browser checks: what the rendering crawl (Probe.Rendered) saw that
// reading responses as text cannot. ux reports pages whose scripts throw,
// log errors or lose subresources on load; security reports DOM-based XSS
// (confirmed by the canary's own script running in the browser, never by
// a pattern) and cross-site scripting through the forms it submits,
// Content-Security-Policy violations and mixed content as the browser
// reported them, and secrets only the rendered DOM holds.

// Browser check limits.
const (
	domXSSPages    = 6 // pages probed with URL canaries
	domXSSParams   = 4 // query parameters per page
	renderFindings = 8 // ux findings from rendered pages per run
)

// Surfaces of the browser findings.
const (
	surfaceDOM    fleet.Surface = "dom"    // DOM-based injection
	surfaceRender fleet.Surface = "render" // a page that breaks in the browser
	surfaceCSP    fleet.Surface = "csp"
)

// rendered reports the uncaught exceptions of the rendered pages, grouped
// (pageErrors), then, per page, console errors and subresources that
// failed on load. A render has no repro a tool call can replay: the
// summary names the page (or the pages) and what the browser said.
func (u *uxRun) rendered() {
	n := 0
	for _, g := range pageErrors(u.p.Rendered()) {
		if n == renderFindings {
			break
		}
		n++
		var summary string
		if len(g.pages) == 1 {
			summary = fmt.Sprintf("%s throws on load in a browser: uncaught exception %s.", g.where, probe.Quote(g.text, 200))
		} else {
			summary = fmt.Sprintf("%d pages throw the same uncaught exception on load in a browser: %s, on %s.",
				len(g.pages), probe.Quote(g.text, 200), strings.Join(probe.First(g.pages, 4), ", "))
			if len(g.pages) > 4 {
				summary = strings.TrimSuffix(summary, ".") + fmt.Sprintf(" and %d more.", len(g.pages)-4)
			}
		}
		// The state names the error, so the same error is one
		// fingerprint and one row in triage however many pages show it,
		// and whichever pages a run rendered.
		u.p.Report(fleet.SeverityMedium, surfaceRender,
			summary+" Expected the page's scripts to run without an uncaught exception (a script that throws leaves the page half built).",
			"", nil, probe.StateArgs{State: "uncaught " + g.key})
	}
	for _, rp := range u.p.Rendered() {
		r := rp.R
		where := probe.DescribePage(rp.Page)
		var failed []string
		for _, rq := range r.Requests {
			switch {
			case rq.Blocked || rq.Type == "document" && rq.URL == rp.URL:
			case rq.Failed != "" && rq.Failed != "canceled":
				failed = append(failed, fmt.Sprintf("%s %s (%s)", rq.Type, rq.URL, rq.Failed))
			case rq.Status >= 400:
				failed = append(failed, fmt.Sprintf("%s %s (HTTP %d)", rq.Type, rq.URL, rq.Status))
			}
		}
		if len(failed) > 0 && n < renderFindings {
			n++
			u.p.Report(fleet.SeverityLow, surfaceRender,
				fmt.Sprintf("%s loses %d request(s) on load in a browser: %s. Expected every resource and call a page makes on load to succeed.",
					where, len(failed), strings.Join(probe.First(failed, 4), "; ")), "", nil)
		}
		var errs []string
		for _, e := range r.ConsoleErrors {
			if !strings.HasPrefix(e, "Failed to load resource") { // the failed requests above
				errs = append(errs, e)
			}
		}
		if len(errs) > 0 && n < renderFindings {
			n++
			u.p.Report(fleet.SeverityLow, surfaceRender,
				fmt.Sprintf("%s logs %d console error(s) on load in a browser: %s. Expected a page to load without errors in the console.",
					where, len(errs), quoteList(errs, 3)), "", nil)
		}
	}
}

// pageError is one uncaught exception and the pages that throw it.
type pageError struct {
	key   string   // the message and the script's location (exceptionKey)
	text  string   // the exception as the browser said it, on the first page
	where string   // the first page, described
	pages []string // every page that throws it, in the order rendered
}

// pageErrors groups the rendered pages' uncaught exceptions by message and
// script location, as Sentry groups events by stack: a shared script that
// throws on every page is one group listing the pages, not a row per page
// (with a thousand names, a thousand rows).
func pageErrors(rendered []probe.RenderedPage) []*pageError {
	var out []*pageError
	byKey := map[string]*pageError{}
	for _, rp := range rendered {
		for _, e := range rp.R.Exceptions {
			k := exceptionKey(e, rp.URL)
			g := byKey[k]
			if g == nil {
				g = &pageError{key: k, text: e, where: probe.DescribePage(rp.Page)}
				byKey[k] = g
				out = append(out, g)
			}
			if !slices.Contains(g.pages, rp.URL) {
				g.pages = append(g.pages, rp.URL)
			}
		}
	}
	return out
}

// scriptAt matches the location the browser puts after an exception's
// message: " at URL:line:column".
var scriptAt = regexp.MustCompile(`^(.*) at (\S+?)(:\d+:\d+)?$`)

// exceptionKey is what an exception on page is grouped by: its message and
// the script's location, the script's URL without query or fragment (a
// cache-busting ?v= is the same script) and, for a script inline in the
// page itself, "inline" instead of the page's URL (pages built from one
// template share their inline scripts).
func exceptionKey(e, page string) string {
	m := scriptAt.FindStringSubmatch(e)
	if m == nil {
		return e
	}
	script := m[2]
	if u, err := url.Parse(script); err == nil {
		u.RawQuery, u.Fragment = "", ""
		script = u.String()
	}
	if p, err := url.Parse(page); err == nil {
		p.RawQuery, p.Fragment = "", ""
		if script == p.String() {
			script = "inline"
		}
	}
	return m[1] + " at " + script + m[3]
}

func quoteList(list []string, n int) string {
	var q []string
	for _, s := range probe.First(list, n) {
		q = append(q, probe.Quote(s, 200))
	}
	if len(list) > n {
		q = append(q, fmt.Sprintf("and %d more", len(list)-n))
	}
	return strings.Join(q, "; ")
}

// secBrowserReports reports what the browser itself refused on load:
// Content-Security-Policy violations (the page's own policy blocks what
// the page asks for: a broken page, or an injection the policy caught) and
// mixed content the raw HTML does not show (the static check reads that).
func secBrowserReports(p *probe.Probe) {
	for _, rp := range p.Rendered() {
		r := rp.R
		if len(r.CSP) > 0 {
			p.Report(fleet.SeverityLow, surfaceCSP,
				fmt.Sprintf("%s breaks its own Content-Security-Policy on load in a browser: %s. Expected a page to need nothing its policy refuses (what it blocks is either broken or injected).",
					probe.DescribePage(rp.Page), quoteList(r.CSP, 3)), "", nil)
		}
		var mixed []string
		for _, m := range r.MixedContent {
			if u := firstURL(m); u != "" && !strings.Contains(probe.Body(rp.Res), u) {
				mixed = append(mixed, m)
			}
		}
		if len(mixed) > 0 {
			p.Report(fleet.SeverityMedium, "mixed-content",
				fmt.Sprintf("%s, served over HTTPS, asks in a browser for insecure content its scripts add: %s. Expected every resource of an HTTPS page over HTTPS.",
					probe.DescribePage(rp.Page), quoteList(mixed, 3)), "", nil)
		}
	}
}

var urlIn = regexp.MustCompile(`https?://[^\s'"<>]+`)

// firstURL is the first http(s) URL in s, trimmed of trailing punctuation.
func firstURL(s string) string {
	return strings.TrimRight(urlIn.FindString(s), ".,;:'\")")
}

// paramReads finds the query parameters a page's scripts read by name
// (URLSearchParams(...).get('q'), searchParams.get("q")).
var paramReads = regexp.MustCompile(`(?:URLSearchParams\([^)]{0,80}\)|searchParams|params|query|qs)\s*\.\s*(?:get|getAll|has)\(\s*['"]([A-Za-z0-9_.\-\[\]]{1,40})['"]\s*\)`)

// scriptParams are the parameter names the crawled scripts and the
// rendered pages' inline scripts read, in order found.
func scriptParams(p *probe.Probe) []string {
	var names []string
	scan := func(text string) {
		for _, m := range paramReads.FindAllStringSubmatch(text, -1) {
			if !slices.Contains(names, m[1]) {
				names = append(names, m[1])
			}
		}
	}
	for _, pg := range p.Crawl() {
		if pg.OK() && crawl.Sniff(pg.URL, probe.Str(pg.Res, "content_type"), probe.Body(pg.Res)) == crawl.KindJS {
			scan(probe.Body(pg.Res))
		}
	}
	for _, rp := range p.Rendered() {
		scan(rp.R.HTML)
	}
	return names
}

// domCanary is a canary for one place of one page: "qa" + 10 hex digits,
// seeded by the target (stable across runs, as the injection canaries).
func domCanary(p *probe.Probe, page, place, round string) string {
	return fmt.Sprintf("qa%010x", probe.Hash64(fmt.Sprintf("%d|dom|%s|%s|%s", p.TargetSeed(), page, place, round))&0xffffffffff)
}

// domPayload is markup whose only effect is to call the renderer's
// canary hook with the canary when a page puts it into the document as
// HTML: an open <details> fires its toggle handler on insertion, loading
// nothing, and in a browser without the hook (a visitor's) the call is a
// no-op (crawl.CanaryCall).
func domPayload(canary string) string {
	return `<details open ontoggle=` + crawl.CanaryCall(canary) + `>`
}

// domPlace is where a canary goes: a query parameter or the fragment.
type domPlace struct {
	param string // "" for the fragment
}

func (d domPlace) String() string {
	if d.param == "" {
		return "fragment"
	}
	return "query parameter " + d.param
}

// domURL returns page with each place holding its payload.
func domURL(page string, values map[domPlace]string) string {
	u, err := url.Parse(page)
	if err != nil {
		return ""
	}
	q := u.Query()
	u.Fragment, u.RawFragment = "", ""
	frag := ""
	for pl, v := range values {
		if pl.param == "" {
			frag = v
			continue
		}
		q.Set(pl.param, v)
	}
	u.RawQuery = q.Encode()
	s := u.String()
	if frag != "" {
		s += "#" + url.PathEscape(frag)
	}
	return s
}

// secDOMXSS opens the rendered pages that run scripts with a canary payload
// in every query parameter the page has or its scripts read, and in the
// fragment, each place its own canary. A place is vulnerable when the
// browser runs the payload: the canary hook it calls gets exactly that
// place's canary. A second render with a fresh canary in that place alone
// confirms it. Query payloads reach the server, so this runs only at the
// exercise rung, like the reflected probes.
func secDOMXSS(p *probe.Probe) {
	if !p.Rendering() {
		return
	}
	if !p.Exercised() {
		p.Skip("DOM XSS probes put payloads in URLs: they run only at the exercise rung")
		return
	}
	params := scriptParams(p)
	done := map[string]bool{}
	tried := 0
	for _, rp := range p.Rendered() {
		if tried == domXSSPages {
			break
		}
		if !runsScripts(rp.R) {
			continue
		}
		u, err := url.Parse(probe.StripFragment(rp.URL))
		if err != nil {
			continue
		}
		// One probe per path, and one for every face: the same script
		// reads the same places.
		key := u.Host + u.Path
		if name, _ := p.Minted(); probe.NameOfFace(p.Target(), rp.URL) != "" || name != "" && p.Target().FaceURL(name) == rp.URL {
			key = "face"
		}
		if done[key] {
			continue
		} else {
			done[key] = true
		}
		tried++
		base := u.String()
		places := []domPlace{{}}
		for k := range u.Query() {
			places = append(places, domPlace{param: k})
		}
		for _, n := range params {
			if !slices.Contains(places, domPlace{param: n}) {
				places = append(places, domPlace{param: n})
			}
		}
		places = places[:min(len(places), 1+domXSSParams)]
		slices.SortFunc(places[1:], func(a, b domPlace) int { return strings.Compare(a.param, b.param) })
		reported := map[domPlace]bool{}
		for _, v := range domVariants {
			values := map[domPlace]string{}
			canaries := map[domPlace]string{}
			for _, pl := range places {
				if !reported[pl] {
					canaries[pl] = domCanary(p, base, pl.String(), v.round+"1")
					values[pl] = v.payload(canaries[pl])
				}
			}
			if len(values) == 0 {
				break
			}
			probeURL := domURL(base, values)
			r, ok := p.Render(probeURL)
			if !ok {
				continue
			}
			for _, pl := range places {
				if reported[pl] || !slices.Contains(r.Dialogs, canaries[pl]) {
					continue
				}
				fresh := domCanary(p, base, pl.String(), v.round+"2")
				confirmURL := domURL(base, map[domPlace]string{pl: v.payload(fresh)})
				c, ok := p.Render(confirmURL)
				switch {
				case !ok:
					reported[pl] = true
					p.Report(fleet.SeverityMedium, surfaceDOM,
						fmt.Sprintf("DOM-based XSS (CWE-79) on %s, not confirmed (no render left for a second try): %s in the URL's %s ran in the browser: the canary %s called fleetd's renderer hook when opening %s. Expected the page's scripts to treat URL values as text, never as HTML or code.",
							base, v.what, pl, canaries[pl], probeURL), "", nil)
				case slices.Contains(c.Dialogs, fresh):
					reported[pl] = true
					p.Report(fleet.SeverityHigh, surfaceDOM,
						fmt.Sprintf("DOM-based XSS (CWE-79) on %s: a value in the URL's %s reaches a script-executing sink: opening %s in a browser ran %s (the canary %s called fleetd's renderer hook), and a second render with a fresh canary ran it again. Anyone who gets a user to open such a link runs script as that user on the platform. %s",
							base, pl, confirmURL, v.what, fresh, v.expect), "", nil)
				default:
					p.Notef("a DOM XSS canary in the %s of %s ran once and not on a second render", pl, base)
				}
			}
		}
	}
}

// domVariant is one payload shape for the URL canaries.
type domVariant struct {
	round   string // seeds the canaries, so each variant has its own
	payload func(canary string) string
	what    string // what ran, for the summary
	expect  string
}

// domVariants: markup for HTML sinks (innerHTML, document.write,
// insertAdjacentHTML), then a javascript: URL, which is also a valid
// script (a label and a call), for URL sinks (location, href, src) and
// code sinks (eval, setTimeout and Function with a string).
var domVariants = []domVariant{
	{"", domPayload, "the injected markup's handler",
		"Expected the page's scripts to put URL values into the page as text (textContent), never as HTML."},
	{"js", func(c string) string { return "javascript:" + crawl.CanaryCall(c) }, "an injected javascript: URL",
		"Expected the page's scripts never to navigate to, load or evaluate a URL value that is not an http(s) URL of the platform."},
}

// runsScripts reports whether a rendered page ran any script of its own.
func runsScripts(r crawl.Rendered) bool {
	for _, rq := range r.Requests {
		if rq.Type == "script" {
			return true
		}
	}
	return strings.Contains(strings.ToLower(r.HTML), "<script")
}

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
		var serious []probe.Leak
		for _, l := range probe.ScanLeaks(rp.R.HTML) {
			if l.Kind == "stack trace" || l.Kind == "database error" {
				serious = append(serious, l)
			}
		}
		if len(serious) > 0 {
			u.leak(strings.Join(leakSnippets(serious), "\n"), fmt.Sprintf("%s, as a browser renders it,", probe.DescribePage(rp.Page)),
				probe.SurfaceOf(u.p.Target(), rp.URL), "", nil)
		}
	}
}

// secRenderedSecrets runs the secret scan on the rendered DOM of every
// page and reports the secrets no fetched response holds as served: a
// value the page's scripts assemble or decode in the browser. There is no
// tool call that replays it (qa_fetch shows the served page), so the
// finding is filed at medium and says so, as an unreplayed finding is.
func secRenderedSecrets(p *probe.Probe) {
	served := map[string]bool{}
	for _, pg := range p.Crawl() {
		for _, s := range probe.ScanSecrets(probe.Body(pg.Res)) {
			served[s.Kind+s.Prefix] = true
		}
	}
	for _, rp := range p.Rendered() {
		var fresh []string
		for _, s := range immediateSecrets(rp.R.HTML) { // keys are secKeys' to verify
			if d := s.Describe(); !served[s.Kind+s.Prefix] && !slices.Contains(fresh, d) {
				fresh = append(fresh, d)
			}
		}
		if len(fresh) == 0 {
			continue
		}
		p.Report(fleet.SeverityMedium, probe.SurfaceOf(p.Target(), rp.URL),
			fmt.Sprintf("%s shows %d secret(s) once a browser runs its scripts, in no response as served: %s. Anyone who opens it can read them; rotate the credential. (Seen only in the rendered DOM: no tool call replays it, so filed at medium.)",
				probe.DescribePage(rp.Page), len(fresh), strings.Join(probe.First(fresh, 4), "; ")), "", nil)
	}
}

// formsMax bounds the forms security submits per run.
const formsMax = 4

// formText is what a form submission types into each text field, and
// what the stored probes write: markup that calls the renderer's canary
// hook with the canary and the field's name once a page puts it into the
// document as HTML (domPayload). In a real visitor's browser it does
// nothing: no dialog, no exception, no request, so a canary left stored
// (a POST nothing can undo) harms no one and gives later runs nothing to
// report.
func formText(canary string) string {
	return domPayload(canary + "-{field}")
}

// secForms submits, at the exercise rung, the non-GET forms the rendering
// crawl found (ZAP's full scan does the same), each text field holding a
// payload with the form's canary and the field's name, and reports a
// field whose payload runs in the page the submission leads to (reflected
// or stored cross-site scripting, CWE-79): the browser opened a dialog
// with exactly that canary and name, and again with a fresh canary. A
// submission answered with HTTP 5xx is reported too. Submissions go
// through the browser's fences (fetch_allow, pacing) and draw on the
// render budget; at most formsMax a run. It returns the forms (method and
// action) it reported.
func secForms(p *probe.Probe) (found map[string]bool) {
	found = map[string]bool{}
	if !p.CanSubmit() {
		return
	}
	forms := p.PageForms()
	if len(forms) == 0 {
		return
	}
	if !p.Exercised() {
		p.Skip("form submission sends payloads to the platform: it runs only at the exercise rung")
		return
	}
	for _, pf := range probe.First(forms, formsMax) {
		action, method := pf.Form.URL, pf.Form.Method
		canary := domCanary(p, action, method, "form1")
		r, ok := p.Submit(pf.Page, crawl.FormFill{Action: action, Method: method, Text: formText(canary)})
		if !ok || !r.Submitted {
			continue
		}
		leftBy(p, pf, r, canary)
		if r.Status >= 500 {
			p.Report(fleet.SeverityMedium, "web",
				fmt.Sprintf("Submitting the form %s %s on %s with text in every field answers HTTP %d. Expected a form to accept or refuse input with a 4xx that says why.",
					method, action, pf.Page, r.Status), "", nil)
		}
		for _, d := range r.Dialogs {
			field, ok := strings.CutPrefix(d, canary+"-")
			if !ok || field == "" {
				continue
			}
			fresh := domCanary(p, action, method, "form2")
			c, ok := p.Submit(pf.Page, crawl.FormFill{Action: action, Method: method, Text: formText(fresh)})
			if ok {
				leftBy(p, pf, c, fresh)
			}
			if !ok || !slices.Contains(c.Dialogs, fresh+"-"+field) {
				p.Notef("a form canary in field %s of %s %s ran once and not on a second submission", field, method, action)
				break
			}
			p.Report(fleet.SeverityHigh, surfaceDOM,
				fmt.Sprintf("Cross-site scripting (CWE-79) through the form %s %s on %s: markup typed into its field %q runs in the page the submission leads to (%s): the injected handler called fleetd's renderer hook with %s-%s, and again with a fresh canary. Expected submitted values to be shown as text, escaped, never as HTML. What the submissions stored, if anything, is left on the platform (harmless canaries; the run record lists them).",
					method, action, pf.Page, field, orURL(c.FinalURL, action), fresh, field), "", nil)
			found[method+" "+action] = true
			break
		}
	}
	return found
}

func orURL(u, def string) string {
	if u == "" {
		return def
	}
	return u
}
