package crawl

import (
	"fmt"
	"strings"
	"testing"
)

// benchPage is a 60 KB HTML page with 400 links, an inline script and a
// style block, the size of a busy index page.
func benchPage() string {
	var b strings.Builder
	b.WriteString("<!doctype html><html><head><style>.a{background:url(/img/a.png)}</style></head><body>")
	for i := range 400 {
		fmt.Fprintf(&b, `<p>Item %d: <a href="/items/%d?ref=list">open</a> <img src="/img/%d.png" alt=""> lorem ipsum dolor sit amet, consectetur adipiscing elit.</p>`, i, i, i)
	}
	b.WriteString(`<script>const api = "/api/v1"; fetch(api + "/items"); const s = "https://cdn.test/x.js";</script></body></html>`)
	return b.String()
}

func BenchmarkLinksHTML(b *testing.B) {
	page := benchPage()
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	for b.Loop() {
		if len(Links("http://h.test/", "text/html", page)) == 0 {
			b.Fatal("no links")
		}
	}
}

func BenchmarkLinksJS(b *testing.B) {
	var s strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&s, `var v%d="/api/r%d",w%d='text %d',x%d=%d;`, i, i%50, i, i, i, i)
	}
	js := s.String()
	b.SetBytes(int64(len(js)))
	b.ReportAllocs()
	for b.Loop() {
		if len(Links("http://h.test/app.js", "application/javascript", js)) == 0 {
			b.Fatal("no links")
		}
	}
}
