package crawl

import (
	"net/url"
	"testing"
)

// FuzzLinks feeds arbitrary bodies of every kind to Links: it must never
// panic and must return only absolute, normalized http(s) URLs without
// fragments, each once, each with a kind and a method.
func FuzzLinks(f *testing.F) {
	f.Add("http://h.test/", "text/html", `<a href="/x">x</a><script>fetch("/api")</script>`)
	f.Add("http://h.test/doc.md", "text/markdown", "[a](b) <https://h.test/c> `GET /d`")
	f.Add("http://h.test/app.js", "application/javascript", "var a='/x',b=`/y/${z}`")
	f.Add("http://h.test/api", "application/json", `{"a":["/x",{"b":"https://h.test/y"}]}`)
	f.Add("http://h.test/robots.txt", "text/plain", "Disallow: /a*\nSitemap: /s.xml")
	f.Add("http://h.test/s.xml", "application/xml", "<urlset><loc>/a</loc></urlset>")
	f.Add("http://h.test/c.css", "text/css", "@import 'a.css'; x{background:url(/b.png)}")
	f.Fuzz(func(t *testing.T, base, ct, body string) {
		links := Links(base, ct, body)
		seen := map[string]bool{}
		for _, l := range links {
			u, err := url.Parse(l.URL)
			if err != nil {
				t.Fatalf("link %q does not parse: %v", l.URL, err)
			}
			if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" || u.Fragment != "" {
				t.Fatalf("link %q is not an absolute http(s) URL without fragment", l.URL)
			}
			if n := Normalize(u); n != l.URL {
				t.Fatalf("link %q is not normalized (%q)", l.URL, n)
			}
			if seen[l.URL] {
				t.Fatalf("link %q twice", l.URL)
			}
			seen[l.URL] = true
			if l.Kind == "" || l.Method == "" {
				t.Fatalf("link %+v without kind or method", l)
			}
		}
	})
}

// FuzzFill checks Fill and Template on arbitrary URLs: no panic, and a
// filled URL that reports ok parses again.
func FuzzFill(f *testing.F) {
	f.Add("http://h.test/u/{name}?q=NAME", "alice")
	f.Add("http://h.test/:id/<x>/[y]/%7Bz%7D", "")
	f.Fuzz(func(t *testing.T, raw, value string) {
		out, ok := Fill(raw, value)
		if ok {
			if _, err := url.Parse(out); err != nil {
				t.Fatalf("Fill(%q, %q) = %q, which does not parse: %v", raw, value, out, err)
			}
		}
		_ = Template(raw)
	})
}
