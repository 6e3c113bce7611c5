package specialists

import (
	"fmt"
	"slices"
	"strings"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/specialists/replay"
)

// secHeaders reports, per host, the security headers missing from its
// HTML pages (every crawled HTML page that answered below 400).
func secHeaders(p *replay.Play, pages []replay.Page) {
	type hostInfo struct {
		missing []string
		htmlURL string
	}
	var order []string
	info := map[string]*hostInfo{}
	for _, pg := range pages {
		if !pg.OK() || !isHTML(pg.Res) {
			continue
		}
		h := replay.HostOf(pg.URL)
		hi := info[h]
		if hi == nil {
			hi = &hostInfo{htmlURL: pg.URL}
			info[h] = hi
			order = append(order, h)
		}
		hd := replay.Headers(pg.Res)
		csp := hd["content-security-policy"]
		for _, m := range []struct {
			name    string
			present bool
		}{
			{"Content-Security-Policy", csp != ""},
			{"X-Content-Type-Options", strings.EqualFold(strings.TrimSpace(hd["x-content-type-options"]), "nosniff")},
			{"X-Frame-Options", hd["x-frame-options"] != "" || strings.Contains(strings.ToLower(csp), "frame-ancestors")},
		} {
			if !m.present && !slices.Contains(hi.missing, m.name) {
				hi.missing = append(hi.missing, m.name)
			}
		}
	}
	for _, h := range order {
		hi := info[h]
		if len(hi.missing) > 0 {
			p.File(fleet.SeverityLow, "headers",
				fmt.Sprintf("HTML pages on %s lack security headers: %s (seen on %s). Expected a Content-Security-Policy, X-Content-Type-Options: nosniff and X-Frame-Options (or CSP frame-ancestors) on every HTML response.",
					h, strings.Join(hi.missing, ", "), hi.htmlURL),
				"qa_fetch", map[string]any{"url": hi.htmlURL})
		}
	}
}

// isHTML reports whether a fetch result is an HTML document.
func isHTML(r fleet.Result) bool {
	ct := strings.ToLower(replay.Headers(r)["content-type"])
	if ct == "" {
		ct = strings.ToLower(replay.Str(r, "content_type"))
	}
	return strings.Contains(ct, "html")
}
