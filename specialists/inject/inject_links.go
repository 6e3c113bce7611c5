package inject

import (
	"strings"

	"github.com/qafleet/fleetd/crawl"
	"github.com/qafleet/fleetd/docclaims"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/specialists/replay"
)

// The injection rules' view of links and documented endpoints, over the
// crawler's parsers (package crawl) and the docs contract (package contract).

// looksHTML reports whether a fetch result is HTML: declared so, or an
// undeclared body that starts with markup (user content is served either way).
func looksHTML(r fleet.Result) bool {
	ct := strings.ToLower(replay.Str(r, "content_type"))
	if ct == "" {
		ct = strings.ToLower(replay.Headers(r)["content-type"])
	}
	if strings.Contains(ct, "html") {
		return true
	}
	return ct == "" && strings.HasPrefix(strings.TrimSpace(replay.Body(r)), "<")
}

// extractLinks returns the absolute URLs a body at base refers to.
func extractLinks(base, text string) []string {
	var out []string
	for _, l := range crawl.Links(base, "", text) {
		out = append(out, l.URL)
	}
	return out
}

// endpoint is a documented method and URL.
type endpoint struct{ Method, URL string }

// docEndpoints returns the endpoints a doc at base promises.
func docEndpoints(base, text string) []endpoint {
	var out []endpoint
	for _, c := range docclaims.Claims(base, "", text) {
		out = append(out, endpoint{Method: c.Method, URL: c.URL})
	}
	return out
}

// fillPlaceholders fills a URL template's placeholder ({name}, NAME, ...)
// with name; ok is false when it cannot be filled.
func fillPlaceholders(raw, name string) (string, bool) { return crawl.Fill(raw, name) }

// sameOrigin reports whether two URLs share scheme, host and port.
func sameOrigin(a, b string) bool { o := replay.Origin(a); return o != "" && o == replay.Origin(b) }
