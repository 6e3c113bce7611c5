package specialists

import (
	"net/url"
	"strings"
	"testing"
)

// FuzzDOMURL: whatever page URL the crawl found and whatever payload, the
// DOM XSS probe URL carries the payload intact in the query parameter and
// in the fragment a page's script reads (decodeURIComponent of the hash),
// keeps the page's other parameters, and never panics.
func FuzzDOMURL(f *testing.F) {
	for _, s := range [][2]string{
		{"http://plat.test/u/ada", domPayload("qa0123456789")},
		{"https://plat.test/search?q=x&page=2#top", "<svg onload=alert(1)>"},
		{"http://plat.test/a%20b?x=%zz", "a+b c&d=e#f%"},
		{"http://[::1]:8080/?q=", "\x00\xff'\"`"},
		{"not a url", "x"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, page, payload string) {
		u := domURL(page, map[domPlace]string{{}: payload, {param: "q"}: payload})
		pu, err := url.Parse(page)
		if err != nil {
			if u != "" {
				t.Fatalf("unparsable page %q gave %q", page, u)
			}
			return
		}
		if payload == "" {
			return
		}
		got, err := url.Parse(u)
		if err != nil {
			t.Fatalf("probe URL %q does not parse: %v", u, err)
		}
		if v := got.Query().Get("q"); v != payload {
			t.Fatalf("query q = %q, want %q (url %q)", v, payload, u)
		}
		i := strings.IndexByte(u, '#')
		if i < 0 {
			t.Fatalf("no fragment in %q", u)
		}
		frag, err := url.PathUnescape(u[i+1:])
		if err != nil || frag != payload {
			t.Fatalf("fragment decodes to %q (%v), want %q", frag, err, payload)
		}
		for k, vs := range pu.Query() {
			if k != "q" && got.Query().Get(k) != vs[0] {
				t.Fatalf("parameter %s lost: %q", k, u)
			}
		}
	})
}
