package specialists

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/specialists/replay"
)

// surfaceCSP is the surface of Content-Security-Policy violations.
const surfaceCSP fleet.Surface = "csp"

// secBrowserReports reports what the browser itself refused on load:
// Content-Security-Policy violations (the page's own policy blocks what
// the page asks for: a broken page, or an injection the policy caught) and
// mixed content the raw HTML does not show (the static check reads that).
func secBrowserReports(p *replay.Play) {
	for _, rp := range p.Rendered() {
		r := rp.R
		if len(r.CSP) > 0 {
			p.File(fleet.SeverityLow, surfaceCSP,
				fmt.Sprintf("%s breaks its own Content-Security-Policy on load in a browser: %s. Expected a page to need nothing its policy refuses (what it blocks is either broken or injected).",
					replay.DescribePage(rp.Page), quoteList(r.CSP, 3)), "", nil)
		}
		var mixed []string
		for _, m := range r.MixedContent {
			if u := firstURL(m); u != "" && !strings.Contains(replay.Body(rp.Res), u) {
				mixed = append(mixed, m)
			}
		}
		if len(mixed) > 0 {
			p.File(fleet.SeverityMedium, "mixed-content",
				fmt.Sprintf("%s, served over HTTPS, asks in a browser for insecure content its scripts add: %s. Expected every resource of an HTTPS page over HTTPS.",
					replay.DescribePage(rp.Page), quoteList(mixed, 3)), "", nil)
		}
	}
}

var urlIn = regexp.MustCompile(`https?://[^\s'"<>]+`)

// firstURL is the first http(s) URL in s, trimmed of trailing punctuation.
func firstURL(s string) string {
	return strings.TrimRight(urlIn.FindString(s), ".,;:'\")")
}
