package crawl

import (
	"net/url"
	"path"
	"strings"
)

// Link is one reference found in a body.
type Link struct {
	URL string // absolute http(s), without fragment
	// Kind says where it was found: a, area, link, stylesheet, script,
	// img, media, iframe, embed, form, meta-refresh (HTML); markdown (a markdown link or
	// an HTML attribute in text), url (a bare URL in text), code (a path in
	// a code span or after GET or HEAD); js, json, css, sitemap, robots.
	Kind string
	// Method is the HTTP method the reference implies: GET, or a form's
	// method (POST, ...).
	Method string
}

// Body kinds Sniff tells apart.
const (
	KindHTML     = "html"
	KindMarkdown = "markdown"
	KindText     = "text"
	KindJSON     = "json"
	KindJS       = "js"
	KindCSS      = "css"
	KindXML      = "xml"
	KindRobots   = "robots"
	KindBinary   = "binary"
)

// Sniff decides what kind of body a response holds, from its URL, its
// Content-Type and its first bytes; the declared type wins when it is
// specific, the path extension and the content decide otherwise.
func Sniff(rawURL, contentType, body string) string {
	ct := strings.ToLower(contentType)
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	ct = strings.TrimSpace(ct)
	p := ""
	if u, err := url.Parse(rawURL); err == nil {
		p = strings.ToLower(u.Path)
	}
	switch {
	case path.Base(p) == "robots.txt":
		return KindRobots
	case strings.Contains(ct, "html"):
		return KindHTML
	case strings.Contains(ct, "markdown"):
		return KindMarkdown
	case strings.Contains(ct, "json"):
		return KindJSON
	case strings.Contains(ct, "javascript") || strings.Contains(ct, "ecmascript"):
		return KindJS
	case ct == "text/css":
		return KindCSS
	case strings.HasSuffix(ct, "/xml") || strings.HasSuffix(ct, "+xml"):
		return KindXML
	}
	switch path.Ext(p) {
	case ".md", ".markdown":
		return KindMarkdown
	case ".js", ".mjs", ".cjs":
		return KindJS
	case ".json", ".webmanifest":
		return KindJSON
	case ".css":
		return KindCSS
	case ".xml":
		return KindXML
	case ".html", ".htm":
		return KindHTML
	}
	head := strings.TrimLeft(body[:min(len(body), 512)], " \t\r\n\ufeff")
	lower := strings.ToLower(head)
	switch {
	case strings.HasPrefix(lower, "<!doctype html") || strings.HasPrefix(lower, "<html") || strings.HasPrefix(lower, "<head") || strings.HasPrefix(lower, "<body"):
		return KindHTML
	case strings.HasPrefix(lower, "<?xml") || strings.HasPrefix(lower, "<urlset") || strings.HasPrefix(lower, "<sitemapindex"):
		return KindXML
	case strings.HasPrefix(head, "{") || strings.HasPrefix(head, "["):
		if looksJSON(body) {
			return KindJSON
		}
	case strings.ContainsRune(head, 0):
		return KindBinary
	}
	if strings.HasPrefix(ct, "text/plain") || ct == "" {
		if markdownish(head) {
			return KindMarkdown
		}
		return KindText
	}
	if strings.HasPrefix(ct, "text/") {
		return KindText
	}
	return KindBinary
}

// markdownish reports whether text starts the way markdown usually does.
func markdownish(head string) bool {
	return strings.HasPrefix(head, "# ") || strings.Contains(head, "](") || strings.Contains(head, "\n## ")
}

// Links returns the references in body, a response from base with the given
// Content-Type, in order of first appearance, each URL once (the first
// kind and method seen win). It never fails: what cannot be parsed yields
// fewer links.
func Links(base, contentType, body string) []Link {
	b, err := url.Parse(base)
	if err != nil || (b.Scheme != "http" && b.Scheme != "https") || b.Host == "" {
		return nil
	}
	var c collector
	c.base = b
	switch Sniff(base, contentType, body) {
	case KindHTML:
		c.html(body)
	case KindMarkdown, KindText:
		c.markdown(body)
	case KindJSON:
		c.json(body)
	case KindJS:
		c.js(body, "js")
	case KindCSS:
		c.css(body)
	case KindXML:
		c.sitemap(body)
	case KindRobots:
		c.robots(body)
	}
	return c.out
}

// collector gathers links against a base URL, each URL once.
type collector struct {
	base  *url.URL
	out   []Link
	seen  map[string]bool // resolved URLs
	tried map[string]bool // raw references against the current base
}

func (c *collector) add(ref, kind, method string) {
	// A bundle repeats the same literal many times: resolve each once.
	if c.tried == nil {
		c.tried = map[string]bool{}
	}
	if c.tried[ref] {
		return
	}
	c.tried[ref] = true
	u := Resolve(c.base, ref)
	if u == "" {
		return
	}
	if c.seen == nil {
		c.seen = map[string]bool{}
	}
	if c.seen[u] {
		return
	}
	c.seen[u] = true
	if method == "" {
		method = "GET"
	}
	c.out = append(c.out, Link{URL: u, Kind: kind, Method: method})
}

// maxRef bounds a reference's length: anything longer is data, not a link.
const maxRef = 2048

// Resolve makes ref absolute against base and normalizes it (lowercase
// scheme and host, default port dropped, empty path "/", no fragment). It
// returns "" for anything that is not an http(s) URL: mailto:, javascript:,
// data:, fragment-only references, unparsable or overlong text.
func Resolve(base *url.URL, ref string) string {
	ref = strings.TrimSpace(ref)
	if ref == "" || strings.HasPrefix(ref, "#") || len(ref) > maxRef || strings.ContainsAny(ref, "\x00\r\n\t") {
		return ""
	}
	r, err := url.Parse(ref)
	if err != nil {
		return ""
	}
	if r.Scheme != "" && r.Scheme != "http" && r.Scheme != "https" {
		return ""
	}
	u := base.ResolveReference(r)
	return Normalize(u)
}

// Normalize renders u in the canonical form Resolve returns, "" when it is
// not an absolute http(s) URL.
func Normalize(u *url.URL) string {
	if u == nil {
		return ""
	}
	v := *u
	v.Scheme = strings.ToLower(v.Scheme)
	if v.Scheme != "http" && v.Scheme != "https" || v.Host == "" || v.User != nil || v.Opaque != "" {
		return ""
	}
	host := strings.ToLower(v.Hostname())
	if host == "" {
		return ""
	}
	port := v.Port()
	if port == "80" && v.Scheme == "http" || port == "443" && v.Scheme == "https" {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	v.Host = host
	if port != "" {
		v.Host += ":" + port
	}
	if v.Path == "" {
		v.Path, v.RawPath = "/", ""
	}
	v.Fragment, v.RawFragment = "", ""
	v.ForceQuery = false
	return v.String()
}

// Origin returns scheme://host[:port] of a normalized URL, "" if none.
func Origin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}
