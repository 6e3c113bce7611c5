package crawl

import (
	"bufio"
	"encoding/json"
	"html"
	"regexp"
	"slices"
	"strings"
)

var (
	// mdInline is [text](url "title") and ![alt](url).
	mdInline = regexp.MustCompile(`\]\(\s*<?([^)\s>]+)>?(?:\s+(?:"[^"\n]*"|'[^'\n]*'))?\s*\)`)
	// mdRefDef is a reference definition: [label]: url "title".
	mdRefDef = regexp.MustCompile(`(?m)^ {0,3}\[[^\]\n]+\]:\s*<?(\S+?)>?(?:\s|$)`)
	// mdAutolink is <https://...>.
	mdAutolink = regexp.MustCompile(`<(https?://[^\s<>]+)>`)
	// htmlAttr is an href or src attribute inside markdown or text.
	htmlAttr = regexp.MustCompile(`(?i)\b(?:href|src|action)\s*=\s*(?:"([^"]*)"|'([^']*)')`)
	// bareURL is an http(s) URL in running text.
	bareURL = regexp.MustCompile(`https?://[^\s<>"'\x60\]\[()|\\^{}]+(?:\([^\s()<>]*\)[^\s<>"'\x60\]\[()|\\^]*)*(?:\{[^\s{}/]+\}[^\s<>"'\x60\]\[()|\\^]*)*`)
	// codePath is a root-relative path alone in a code span: `/api/items`.
	codePath = regexp.MustCompile("`(/[^\\s`<>\"']*)`")
	// safeMethodPath is "GET /path" or "HEAD /path" anywhere in text.
	safeMethodPath = regexp.MustCompile(`\b(?:GET|HEAD)\s+\x60?((?:https?://|/)[^\s\x60"'<>]*)`)
)

// markdown collects links from markdown or plain text: inline links and
// images, reference definitions, autolinks, HTML attributes, bare URLs,
// root-relative paths in code spans and after GET or HEAD, in order.
func (c *collector) markdown(text string) {
	type hit struct {
		at   int
		ref  string
		kind string
	}
	var hits []hit
	sub := func(re *regexp.Regexp, kind string, trim bool) {
		for _, m := range re.FindAllStringSubmatchIndex(text, -1) {
			for g := 1; g < len(m)/2; g++ {
				if m[2*g] >= 0 {
					ref := text[m[2*g]:m[2*g+1]]
					if trim {
						ref = TrimURL(ref)
					}
					hits = append(hits, hit{m[2*g], ref, kind})
					break
				}
			}
		}
	}
	sub(mdInline, "markdown", false)
	sub(mdRefDef, "markdown", false)
	sub(mdAutolink, "markdown", false)
	sub(htmlAttr, "markdown", false)
	sub(codePath, "code", true)
	sub(safeMethodPath, "code", true)
	for _, m := range bareURL.FindAllStringIndex(text, -1) {
		hits = append(hits, hit{m[0], TrimURL(text[m[0]:m[1]]), "url"})
	}
	// Stable by position: the first mention of a URL decides its kind.
	slices.SortStableFunc(hits, func(x, y hit) int { return x.at - y.at })
	for _, h := range hits {
		c.add(h.ref, h.kind, "")
	}
}

// TrimURL drops punctuation that ends a sentence rather than a URL, and a
// closing bracket the URL did not open.
func TrimURL(s string) string {
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

// js collects string literals (double, single or backquoted) that hold a
// URL or a path. It scans by hand rather than by regexp: bundles run to
// megabytes and most literals are not links.
func (c *collector) js(text, kind string) {
	for i := 0; i < len(text); i++ {
		q := text[i]
		if q != '"' && q != '\'' && q != '`' {
			continue
		}
		j, escaped := i+1, false
		for ; j < len(text); j++ {
			ch := text[j]
			if ch == '\\' {
				escaped = true
				j++
				continue
			}
			if ch == q || ch == '\n' && q != '`' {
				break
			}
		}
		if j >= len(text) || text[j] != q {
			i = j
			continue
		}
		lit := text[i+1 : j]
		i = j
		if lit == "" || lit[0] != '/' && lit[0] != '.' && lit[0] != 'h' && lit[0] != '\\' {
			continue
		}
		if q == '`' {
			// A template literal: the part before the first substitution,
			// when that is a path prefix ("/api/items/${id}" -> "/api/items/").
			lit, _, _ = strings.Cut(lit, "${")
		}
		if escaped {
			lit = strings.NewReplacer(`\/`, `/`, `\u002F`, `/`, `\u002f`, `/`).Replace(lit)
		}
		if urlish(lit) {
			c.add(lit, kind, "")
		}
	}
}

// fsRoots are where absolute file system paths start; a string naming one
// is a path on a server's disk, not a link.
var fsRoots = []string{"/home/", "/srv/", "/var/", "/usr/", "/tmp/", "/opt/", "/etc/", "/root/", "/proc/", "/Users/", "/private/", "/mnt/", "/run/", "/bin/", "/sbin/", "/lib/", "/dev/", "/sys/"}

// urlish reports whether a string from a script or a JSON document is a
// URL or a path worth following: an absolute http(s) URL, a
// protocol-relative or root-relative path, or ./ and ../ references; no
// spaces, markup, backslashes or file system roots.
func urlish(s string) bool {
	if s == "" || len(s) > maxRef || strings.ContainsAny(s, " \t\r\n<>\\\"'`*^|") {
		return false
	}
	switch {
	case strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://"):
		return len(s) > len("https://")
	case strings.HasPrefix(s, "//"):
		host, _, _ := strings.Cut(s[2:], "/")
		return host != "" && (strings.Contains(host, ".") || strings.Contains(host, ":"))
	case strings.HasPrefix(s, "./") || strings.HasPrefix(s, "../"):
		return len(s) > 3
	case strings.HasPrefix(s, "/"):
		for _, r := range fsRoots {
			if strings.HasPrefix(s, r) {
				return false
			}
		}
		// "/" alone, or a path whose first character names something.
		if len(s) == 1 {
			return true
		}
		ch := s[1]
		return ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '_' || ch == '.' || ch == '~' || ch == '-' || ch == '?'
	}
	return false
}

// json collects string values that hold a URL or a path. A body that is
// not valid JSON is read as script text.
func (c *collector) json(text string) {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		c.js(text, "json")
		return
	}
	var walk func(v any, depth int)
	walk = func(v any, depth int) {
		if depth > 64 {
			return
		}
		switch x := v.(type) {
		case string:
			if urlish(x) {
				c.add(x, "json", "")
			}
		case []any:
			for _, e := range x {
				walk(e, depth+1)
			}
		case map[string]any:
			// Keys in document order would need a token walk; sorted keys
			// keep the result deterministic.
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				walk(x[k], depth+1)
			}
		}
	}
	walk(v, 0)
}

var (
	cssURL    = regexp.MustCompile(`(?i)url\(\s*(?:"([^"]*)"|'([^']*)'|([^'")\s]+))\s*\)`)
	cssImport = regexp.MustCompile(`(?i)@import\s+(?:"([^"]+)"|'([^']+)')`)
)

// css collects url() and @import references.
func (c *collector) css(text string) {
	for _, re := range []*regexp.Regexp{cssImport, cssURL} {
		for _, m := range re.FindAllStringSubmatch(text, -1) {
			c.add(strings.Join(m[1:], ""), "css", "")
		}
	}
}

var sitemapLoc = regexp.MustCompile(`(?is)<loc>\s*(.*?)\s*</loc>`)

// sitemap collects the loc entries of a sitemap or sitemap index.
func (c *collector) sitemap(text string) {
	for _, m := range sitemapLoc.FindAllStringSubmatch(text, -1) {
		c.add(html.UnescapeString(m[1]), "sitemap", "")
	}
}

// robots collects Sitemap URLs and the paths of Allow and Disallow rules
// (up to their first wildcard): the paths a site names are worth a look.
func (c *collector) robots(text string) {
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		val = strings.TrimSpace(val)
		switch strings.ToLower(strings.TrimSpace(key)) {
		case "sitemap":
			c.add(val, "sitemap", "")
		case "allow", "disallow":
			if i := strings.IndexAny(val, "*$"); i >= 0 {
				val = val[:i]
			}
			if strings.HasPrefix(val, "/") && val != "/" {
				c.add(val, "robots", "")
			}
		}
	}
}

// looksJSON reports whether body parses as one JSON value.
func looksJSON(body string) bool {
	dec := json.NewDecoder(strings.NewReader(body))
	var v any
	return dec.Decode(&v) == nil
}
