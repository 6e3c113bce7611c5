package specialists

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/specialists/replay"
)

// renderFindings bounds ux's findings from rendered pages per run.
const renderFindings = 8

// surfaceRender is the surface of a page that breaks in the browser.
const surfaceRender fleet.Surface = "render"

// renderedErrors reports the uncaught exceptions of the rendered pages, grouped
// (pageErrors), then, per page, console errors and subresources that
// failed on load. A render has no repro a tool call can replay: the
// summary names the page (or the pages) and what the browser said.
func (u *uxRun) renderedErrors() {
	n := 0
	for _, g := range pageErrors(u.p.Rendered()) {
		if n == renderFindings {
			break
		}
		n++
		var summary string
		if len(g.pages) == 1 {
			summary = fmt.Sprintf("%s throws on load in a browser: uncaught exception %s.", g.where, replay.Quote(g.text, 200))
		} else {
			summary = fmt.Sprintf("%d pages throw the same uncaught exception on load in a browser: %s, on %s.",
				len(g.pages), replay.Quote(g.text, 200), strings.Join(replay.First(g.pages, 4), ", "))
			if len(g.pages) > 4 {
				summary = strings.TrimSuffix(summary, ".") + fmt.Sprintf(" and %d more.", len(g.pages)-4)
			}
		}
		// The state names the error, so the same error is one
		// fingerprint and one row in triage however many pages show it,
		// and whichever pages a run rendered.
		u.p.File(fleet.SeverityMedium, surfaceRender,
			summary+" Expected the page's scripts to run without an uncaught exception (a script that throws leaves the page half built).",
			"", nil, replay.StateArgs{State: "uncaught " + g.key})
	}
	for _, rp := range u.p.Rendered() {
		r := rp.R
		where := replay.DescribePage(rp.Page)
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
			u.p.File(fleet.SeverityLow, surfaceRender,
				fmt.Sprintf("%s loses %d request(s) on load in a browser: %s. Expected every resource and call a page makes on load to succeed.",
					where, len(failed), strings.Join(replay.First(failed, 4), "; ")), "", nil)
		}
		var errs []string
		for _, e := range r.ConsoleErrors {
			if !strings.HasPrefix(e, "Failed to load resource") { // the failed requests above
				errs = append(errs, e)
			}
		}
		if len(errs) > 0 && n < renderFindings {
			n++
			u.p.File(fleet.SeverityLow, surfaceRender,
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
func pageErrors(rendered []replay.RenderedPage) []*pageError {
	var out []*pageError
	byKey := map[string]*pageError{}
	for _, rp := range rendered {
		for _, e := range rp.R.Exceptions {
			k := exceptionKey(e, rp.URL)
			g := byKey[k]
			if g == nil {
				g = &pageError{key: k, text: e, where: replay.DescribePage(rp.Page)}
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
	for _, s := range replay.First(list, n) {
		q = append(q, replay.Quote(s, 200))
	}
	if len(list) > n {
		q = append(q, fmt.Sprintf("and %d more", len(list)-n))
	}
	return strings.Join(q, "; ")
}
