package specialists

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/qafleet/fleetd/crawl"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/specialists/replay"
)

// DOM-based XSS, found in the browser: URL canaries (secDOMXSS) and the
// non-GET forms of rendered pages submitted with canaries
// (secDOMXSSForms), each confirmed by the canary's own script running in
// the browser, never by a pattern. The other checks on what the rendering crawl saw are filed by
// what they find: page_errors.go, csp_violations.go, secrets.go
// (secRenderedSecrets), leaked_internals.go (uxRun.renderedLeaks) and
// stored_xss_dom.go.

// DOM XSS limits.
const (
	domXSSPages  = 6 // pages probed with URL canaries
	domXSSParams = 4 // query parameters per page
)

// surfaceDOM is the surface of DOM-based injection findings.
const surfaceDOM fleet.Surface = "dom"

// paramReads finds the query parameters a page's scripts read by name
// (URLSearchParams(...).get('q'), searchParams.get("q")).
var paramReads = regexp.MustCompile(`(?:URLSearchParams\([^)]{0,80}\)|searchParams|params|query|qs)\s*\.\s*(?:get|getAll|has)\(\s*['"]([A-Za-z0-9_.\-\[\]]{1,40})['"]\s*\)`)

// scriptParams are the parameter names the crawled scripts and the
// rendered pages' inline scripts read, in order found.
func scriptParams(p *replay.Play) []string {
	var names []string
	scan := func(text string) {
		for _, m := range paramReads.FindAllStringSubmatch(text, -1) {
			if !slices.Contains(names, m[1]) {
				names = append(names, m[1])
			}
		}
	}
	for _, pg := range p.Crawl() {
		if pg.OK() && crawl.Sniff(pg.URL, replay.Str(pg.Res, "content_type"), replay.Body(pg.Res)) == crawl.KindJS {
			scan(replay.Body(pg.Res))
		}
	}
	for _, rp := range p.Rendered() {
		scan(rp.R.HTML)
	}
	return names
}

// domCanary is a canary for one place of one page: "qa" + 10 hex digits,
// seeded by the target (stable across runs, as the injection canaries).
func domCanary(p *replay.Play, page, place, round string) string {
	return fmt.Sprintf("qa%010x", replay.Hash64(fmt.Sprintf("%d|dom|%s|%s|%s", p.TargetSeed(), page, place, round))&0xffffffffff)
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
func secDOMXSS(p *replay.Play) {
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
		u, err := url.Parse(replay.StripFragment(rp.URL))
		if err != nil {
			continue
		}
		// One probe per path, and one for every face: the same script
		// reads the same places.
		key := u.Host + u.Path
		if name, _ := p.Minted(); replay.NameOfFace(p.Target(), rp.URL) != "" || name != "" && p.Target().FaceURL(name) == rp.URL {
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
					p.File(fleet.SeverityMedium, surfaceDOM,
						fmt.Sprintf("DOM-based XSS (CWE-79) on %s, not confirmed (no render left for a second try): %s in the URL's %s ran in the browser: the canary %s called fleetd's renderer hook when opening %s. Expected the page's scripts to treat URL values as text, never as HTML or code.",
							base, v.what, pl, canaries[pl], probeURL), "", nil)
				case slices.Contains(c.Dialogs, fresh):
					reported[pl] = true
					p.File(fleet.SeverityHigh, surfaceDOM,
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

// secDOMXSSForms submits, at the exercise rung, the non-GET forms the rendering
// crawl found (ZAP's full scan does the same), each text field holding a
// payload with the form's canary and the field's name, and reports a
// field whose payload runs in the page the submission leads to (reflected
// or stored cross-site scripting, CWE-79): the browser opened a dialog
// with exactly that canary and name, and again with a fresh canary. A
// submission answered with HTTP 5xx is reported too. Submissions go
// through the browser's fences (fetch_allow, pacing) and draw on the
// render budget; at most formsMax a run. It returns the forms (method and
// action) it reported.
func secDOMXSSForms(p *replay.Play) (found map[string]bool) {
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
	for _, pf := range replay.First(forms, formsMax) {
		action, method := pf.Form.URL, pf.Form.Method
		canary := domCanary(p, action, method, "form1")
		r, ok := p.Submit(pf.Page, crawl.FormFill{Action: action, Method: method, Text: formText(canary)})
		if !ok || !r.Submitted {
			continue
		}
		leftBy(p, pf, r, canary)
		if r.Status >= 500 {
			p.File(fleet.SeverityMedium, "web",
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
			p.File(fleet.SeverityHigh, surfaceDOM,
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
