package playbook

import (
	"net"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

var (
	mdLink   = regexp.MustCompile(`\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"\n]*")?\s*\)`)
	htmlLink = regexp.MustCompile(`(?i)\b(?:href|src)\s*=\s*(?:"([^"]*)"|'([^']*)')`)
	bareURL  = regexp.MustCompile(`https?://[^\s<>"'\x60\]\[()|\\^]+(?:\([^\s()<>]*\)[^\s<>"'\x60\]\[()|\\^]*)*`)
	// docMethod finds "GET /path", "POST https://…", "`GET https://…`".
	docMethod = regexp.MustCompile(`(?m)\b(GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS)\s+\x60?((?:https?://|/)[^\s\x60"'<>]*)`)
)

// ExtractLinks returns the absolute http(s) URLs text links to, in order of
// first appearance, without fragments: markdown links [x](y), href and src
// attributes, and bare URLs, with relative references resolved against
// base (the URL of the page). mailto:, javascript:, data: and fragment-only
// links are dropped.
func ExtractLinks(base, text string) []string {
	b, err := url.Parse(base)
	if err != nil {
		return nil
	}
	type hit struct {
		at  int
		ref string
	}
	var hits []hit
	for _, m := range mdLink.FindAllStringSubmatchIndex(text, -1) {
		hits = append(hits, hit{m[2], text[m[2]:m[3]]})
	}
	for _, m := range htmlLink.FindAllStringSubmatchIndex(text, -1) {
		if m[2] >= 0 {
			hits = append(hits, hit{m[2], text[m[2]:m[3]]})
		} else {
			hits = append(hits, hit{m[4], text[m[4]:m[5]]})
		}
	}
	for _, m := range bareURL.FindAllStringIndex(text, -1) {
		hits = append(hits, hit{m[0], trimURL(text[m[0]:m[1]])})
	}
	slices.SortStableFunc(hits, func(x, y hit) int { return x.at - y.at })
	var out []string
	for _, h := range hits {
		u := resolve(b, h.ref)
		if u != "" && !slices.Contains(out, u) {
			out = append(out, u)
		}
	}
	return out
}

// trimURL drops punctuation that ends a sentence rather than a URL, and a
// closing bracket the URL did not open.
func trimURL(s string) string {
	for s != "" {
		last := s[len(s)-1]
		switch {
		case strings.IndexByte(".,;:!?'\"*_~", last) >= 0:
			s = s[:len(s)-1]
		case last == ')' && strings.Count(s, "(") < strings.Count(s, ")"):
			s = s[:len(s)-1]
		default:
			return s
		}
	}
	return s
}

// resolve makes ref absolute against base; "" when it is not an http(s) link.
func resolve(base *url.URL, ref string) string {
	ref = strings.TrimSpace(ref)
	if ref == "" || strings.HasPrefix(ref, "#") {
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
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return ""
	}
	u.Fragment, u.RawFragment = "", ""
	return u.String()
}

// Endpoint is an HTTP method and URL a document promises.
type Endpoint struct {
	Method string
	URL    string // absolute
	Line   int
}

// DocEndpoints returns the endpoints text documents as "METHOD /path" or
// "METHOD https://…" (in code spans and code blocks alike), resolved
// against base, in order, each method and URL once.
func DocEndpoints(base, text string) []Endpoint {
	b, err := url.Parse(base)
	if err != nil {
		return nil
	}
	var out []Endpoint
	for _, m := range docMethod.FindAllStringSubmatchIndex(text, -1) {
		method := text[m[2]:m[3]]
		u := resolve(b, trimURL(text[m[4]:m[5]]))
		if u == "" {
			continue
		}
		e := Endpoint{Method: method, URL: u, Line: strings.Count(text[:m[0]], "\n") + 1}
		if !slices.ContainsFunc(out, func(x Endpoint) bool { return x.Method == e.Method && x.URL == e.URL }) {
			out = append(out, e)
		}
	}
	return out
}

var (
	placeholderSeg = regexp.MustCompile(`^(?:\{\{?[^{}]+\}\}?|<[^<>]+>|:[A-Za-z_]\w*|\[[A-Za-z_]\w*\]|[A-Z][A-Z_]+|\.\.\.|…)$`)
	braces         = regexp.MustCompile(`\{\{?[^{}/?&=]*\}\}?|%7B%7B?[^/?&=]*?%7D%7D?|%7B[^/?&=]*?%7D`)
)

// fillPlaceholders replaces template placeholders in a documented URL (a
// path segment or query value written NAME, {name}, {{name}}, <name>,
// :name or [name]) with name. ok is false when the URL has placeholders and
// name is "" (the URL cannot be fetched meaningfully).
func fillPlaceholders(raw, name string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil {
		return raw, false
	}
	changed := false
	sub := func(s string) string {
		if placeholderSeg.MatchString(s) {
			changed = true
			return name
		}
		return s
	}
	segs := strings.Split(u.Path, "/")
	for i, s := range segs {
		segs[i] = sub(s)
	}
	path := strings.Join(segs, "/")
	if braces.MatchString(path) {
		changed = true
		path = braces.ReplaceAllString(path, name)
	}
	q := u.Query()
	for k, vs := range q {
		for i, v := range vs {
			vs[i] = sub(v)
		}
		q[k] = vs
	}
	if changed && name == "" {
		return raw, false
	}
	if !changed {
		return raw, true
	}
	u.Path, u.RawPath = path, ""
	if u.RawQuery != "" {
		u.RawQuery = q.Encode()
	}
	return u.String(), true
}

// allowedURL reports whether raw's host:port matches one of the
// target.fetch_allow patterns, the way qa_fetch decides: an exact
// host[:port] (no port: 80 and 443) or *.suffix for any subdomain.
func allowedURL(patterns []string, raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return false
	}
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	for _, p := range patterns {
		p = strings.ToLower(p)
		ph, pp, err := net.SplitHostPort(p)
		if err != nil {
			ph, pp = p, ""
		}
		ph = strings.Trim(ph, "[]")
		if pp != "" && pp != port || pp == "" && port != "80" && port != "443" {
			continue
		}
		if suffix, ok := strings.CutPrefix(ph, "*."); ok {
			if strings.HasSuffix(host, "."+suffix) {
				return true
			}
			continue
		}
		if host == ph {
			return true
		}
	}
	return false
}

// origin returns scheme://host[:port] of raw, "" if it has none.
func origin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// sameOrigin reports whether a and b share scheme, host and port.
func sameOrigin(a, b string) bool { o := origin(a); return o != "" && o == origin(b) }

// hostOf returns raw's host[:port].
func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return u.Host
}
