package docclaims

import (
	"net/url"
	"slices"
	"strings"
	"testing"
)

// FuzzClaims feeds arbitrary docs to the claims parser: it must never
// panic, and every claim must be a known method on an absolute http(s)
// URL, on a line of the text, with a known type and a 2xx status or none.
func FuzzClaims(f *testing.F) {
	f.Add("https://h.test/skill.md", "text/markdown", "## Call\n\n    GET /call?target=NAME\n\nReturns JSON: {\"reply\": \"...\"}.\n")
	f.Add("https://h.test/api", "text/markdown", "| Method | Path | Returns |\n|---|---|---|\n| GET | /x | JSON, 200 |\n")
	f.Add("https://h.test/doc", "text/plain", "curl -X POST https://h.test/a -d '{}'\n$ curl /b\n{\"k\": [...]}\n")
	f.Add("https://h.test/doc.html", "text/html", "<p>Send a <code>GET</code> to <code>/v</code>. It responds with JSON containing <code>`a`</code>.</p>")
	f.Fuzz(func(t *testing.T, doc, ct, text string) {
		lines := strings.Count(text, "\n") + 1
		for _, c := range Claims(doc, ct, text) {
			if !methodCell.MatchString(c.Method) {
				t.Fatalf("claim method %q", c.Method)
			}
			u, err := url.Parse(c.URL)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				t.Fatalf("claim URL %q", c.URL)
			}
			if ct != "text/html" && (c.Line < 1 || c.Line > lines) {
				t.Fatalf("claim line %d of %d", c.Line, lines)
			}
			if !slices.Contains([]string{"", "json", "html", "text", "xml", "markdown"}, c.Type) {
				t.Fatalf("claim type %q", c.Type)
			}
			if c.Status != 0 && (c.Status < 200 || c.Status > 299) {
				t.Fatalf("claim status %d", c.Status)
			}
		}
	})
}
