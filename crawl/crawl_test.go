package crawl

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLinks(t *testing.T) {
	for _, tc := range []struct {
		name, base, ct, body string
		want                 []Link
	}{
		{
			name: "html elements, base, forms, inline script and json",
			base: "http://h.test/dir/page.html", ct: "text/html; charset=utf-8",
			body: `<!doctype html><html manifest="/app.manifest"><head>
<link rel="stylesheet" href="style.css"><link rel="sitemap" href="/sitemap.xml">
<script src="/static/app.js"></script>
<meta http-equiv="refresh" content="30; URL='/refreshed'">
<style>body { background: url("/img/bg.png") }</style>
</head><body>
<a href="../up.html#frag">up</a> <a href="#top">top</a> <a href="mailto:x@y">m</a> <a href="javascript:void(0)">j</a>
<a href="//h.test/proto-relative">p</a> <A HREF="HTTP://H.TEST:80/Caps">caps</A>
<img src="a.png" srcset="b.png 2x, /c.png 3x"> <iframe src="/embed?x=1"></iframe>
<form method="post" action="/login"><input name=u><button formaction="/alt" formmethod="post">go</button></form>
<form><input name=q></form>
<div style="background-image:url(/img/div.png)"></div>
<script>fetch("/api/items?page=1"); const u = '/api/users/' + id; const t = ` + "`/api/t/${x}`" + `;</script>
<script type="application/json">{"next": "/page/2", "label": "not/a/link"}</script>
<base href="/other/"><a href="after-base">ab</a>
</body></html>`,
			want: []Link{
				{"http://h.test/app.manifest", "link", "GET"},
				{"http://h.test/dir/style.css", "stylesheet", "GET"},
				{"http://h.test/sitemap.xml", "link", "GET"},
				{"http://h.test/static/app.js", "script", "GET"},
				{"http://h.test/refreshed", "meta-refresh", "GET"},
				{"http://h.test/img/bg.png", "css", "GET"},
				{"http://h.test/up.html", "a", "GET"},
				{"http://h.test/proto-relative", "a", "GET"},
				{"http://h.test/Caps", "a", "GET"},
				{"http://h.test/dir/a.png", "img", "GET"},
				{"http://h.test/dir/b.png", "img", "GET"},
				{"http://h.test/c.png", "img", "GET"},
				{"http://h.test/embed?x=1", "iframe", "GET"},
				{"http://h.test/login", "form", "POST"},
				{"http://h.test/alt", "form", "POST"},
				{"http://h.test/dir/page.html", "form", "GET"},
				{"http://h.test/img/div.png", "css", "GET"},
				{"http://h.test/api/items?page=1", "js", "GET"},
				{"http://h.test/api/users/", "js", "GET"},
				{"http://h.test/api/t/", "js", "GET"},
				{"http://h.test/page/2", "json", "GET"},
				{"http://h.test/other/after-base", "a", "GET"},
			},
		},
		{
			name: "markdown in several link styles",
			base: "https://docs.test/guide/index.md", ct: "text/markdown",
			body: "# Guide\n\nSee [the API](api.md \"API\") and [root](/start) or ![logo](../img/logo.svg).\n" +
				"Autolink <https://docs.test/auto>. Bare https://docs.test/bare/page. and (https://docs.test/paren).\n" +
				"[ref]: /reference/defs \"Title\"\n" +
				"Call `GET /api/status` or the path `/api/health`; POST /api/write is not crawled.\n" +
				"    GET https://docs.test/code/block\n" +
				"Off-site: https://other.test/x. <a href=\"/raw-html\">raw</a>\n",
			want: []Link{
				{"https://docs.test/guide/api.md", "markdown", "GET"},
				{"https://docs.test/start", "markdown", "GET"},
				{"https://docs.test/img/logo.svg", "markdown", "GET"},
				{"https://docs.test/auto", "markdown", "GET"},
				{"https://docs.test/bare/page", "url", "GET"},
				{"https://docs.test/paren", "url", "GET"},
				{"https://docs.test/reference/defs", "markdown", "GET"},
				{"https://docs.test/api/status", "code", "GET"},
				{"https://docs.test/api/health", "code", "GET"},
				{"https://docs.test/code/block", "code", "GET"},
				{"https://other.test/x", "url", "GET"},
				{"https://docs.test/raw-html", "markdown", "GET"},
			},
		},
		{
			name: "a javascript bundle",
			base: "http://h.test/static/app.js", ct: "application/javascript",
			body: `var a="https://h.test/api/v1",b='/api/v2/items',c="text/html",d="/usr/lib/x",e="./chunk.1.js",f="/",g="a b",h="\/escaped\/path",i="/\\d+/";` +
				"const t=`/api/orders/${id}/lines`;",
			want: []Link{
				{"https://h.test/api/v1", "js", "GET"},
				{"http://h.test/api/v2/items", "js", "GET"},
				{"http://h.test/static/chunk.1.js", "js", "GET"},
				{"http://h.test/", "js", "GET"},
				{"http://h.test/escaped/path", "js", "GET"},
				{"http://h.test/api/orders/", "js", "GET"},
			},
		},
		{
			name: "a JSON API answer",
			base: "http://h.test/api/items", ct: "application/json",
			body: `{"links":{"self":"https://h.test/api/items","next":"/api/items?page=2"},"items":[{"href":"/api/items/7"},{"name":"a/b"}],"config":"/srv/app/config.yml","n":3}`,
			want: []Link{
				{"http://h.test/api/items/7", "json", "GET"},
				{"http://h.test/api/items?page=2", "json", "GET"},
				{"https://h.test/api/items", "json", "GET"},
			},
		},
		{
			name: "a sitemap",
			base: "http://h.test/sitemap.xml", ct: "application/xml",
			body: `<?xml version="1.0"?><urlset><url><loc> http://h.test/a?x=1&amp;y=2 </loc></url><url><loc>/b</loc></url></urlset>`,
			want: []Link{
				{"http://h.test/a?x=1&y=2", "sitemap", "GET"},
				{"http://h.test/b", "sitemap", "GET"},
			},
		},
		{
			name: "robots.txt",
			base: "http://h.test/robots.txt", ct: "text/plain",
			body: "User-agent: *\nDisallow: /admin/ # keep out\nDisallow: /\nAllow: /public/*.html\nDisallow: /tmp$\nSitemap: http://h.test/sitemap.xml\n",
			want: []Link{
				{"http://h.test/admin/", "robots", "GET"},
				{"http://h.test/public/", "robots", "GET"},
				{"http://h.test/tmp", "robots", "GET"},
				{"http://h.test/sitemap.xml", "sitemap", "GET"},
			},
		},
		{
			name: "css",
			base: "http://h.test/css/site.css", ct: "text/css",
			body: `@import "base.css"; .a { background: url(../img/a.png) } .b { background: url('data:image/png;base64,xx') }`,
			want: []Link{
				{"http://h.test/css/base.css", "css", "GET"},
				{"http://h.test/img/a.png", "css", "GET"},
			},
		},
		{
			name: "text without a content type sniffed as markdown",
			base: "http://h.test/llms.txt", ct: "",
			body: "# Site\n\n- [Docs](/docs): the docs\n",
			want: []Link{{"http://h.test/docs", "markdown", "GET"}},
		},
		{name: "binary", base: "http://h.test/x.bin", ct: "application/octet-stream", body: "\x00\x01https://h.test/nope"},
		{name: "bad base", base: "mailto:x", ct: "text/html", body: `<a href="/x">`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Links(tc.base, tc.ct, tc.body)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Links (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSniff(t *testing.T) {
	for _, tc := range []struct{ url, ct, body, want string }{
		{"http://h/", "text/html", "", KindHTML},
		{"http://h/robots.txt", "text/plain", "", KindRobots},
		{"http://h/a.md", "text/plain", "hello", KindMarkdown},
		{"http://h/llms.txt", "text/plain", "# Title\n", KindMarkdown},
		{"http://h/notes.txt", "text/plain", "plain words", KindText},
		{"http://h/api", "application/problem+json", "{}", KindJSON},
		{"http://h/api", "", `{"a":1}`, KindJSON},
		{"http://h/api", "text/plain", `{"a":`, KindText},
		{"http://h/app.js", "", "var x", KindJS},
		{"http://h/x", "text/javascript; charset=utf-8", "", KindJS},
		{"http://h/s", "application/rss+xml", "", KindXML},
		{"http://h/page", "", "<!DOCTYPE html><p>", KindHTML},
		{"http://h/blob", "image/png", "\x89PNG", KindBinary},
	} {
		if got := Sniff(tc.url, tc.ct, tc.body); got != tc.want {
			t.Errorf("Sniff(%q, %q, %q) = %s, want %s", tc.url, tc.ct, tc.body, got, tc.want)
		}
	}
}

func TestFrontier(t *testing.T) {
	scope := func(u string) bool { return strings.HasPrefix(u, "http://h.test/") }
	f := NewFrontier(scope, 2)
	adds := []struct {
		it   Item
		want bool
	}{
		{Item{URL: "http://h.test/", Kind: "index", Seed: true}, true},
		{Item{URL: "HTTP://H.TEST:80/#x", Kind: "a"}, false}, // the same URL normalized
		{Item{URL: "http://other.test/", Kind: "a"}, false},  // out of scope
		{Item{URL: "http://h.test/items/1", Kind: "a", Depth: 1}, true},
		{Item{URL: "http://h.test/items/2", Kind: "a", Depth: 1}, true},
		{Item{URL: "http://h.test/items/3", Kind: "a", Depth: 1}, false},      // template full
		{Item{URL: "http://h.test/items/4", Kind: "index", Seed: true}, true}, // seeds always fit
		{Item{URL: "http://h.test/docs/a", Kind: "a", Depth: 1}, true},
		{Item{URL: "http://h.test/docs/b", Kind: "a", Depth: 1}, true},
		{Item{URL: "http://h.test/docs/c", Kind: "a", Depth: 1}, true},
		{Item{URL: "::bad", Kind: "a"}, false},
		{Item{URL: "http://h.test/style.css", Kind: "stylesheet", Later: true}, true},
		{Item{URL: "http://h.test/late-page", Kind: "a", Depth: 2}, true},
	}
	for _, a := range adds {
		if got := f.Add(a.it); got != a.want {
			t.Errorf("Add(%q) = %v, want %v", a.it.URL, got, a.want)
		}
	}
	var order []string
	for it, ok := f.Next(); ok; it, ok = f.Next() {
		order = append(order, it.URL)
	}
	want := []string{"http://h.test/", "http://h.test/items/1", "http://h.test/items/2", "http://h.test/items/4", "http://h.test/docs/a", "http://h.test/docs/b", "http://h.test/docs/c", "http://h.test/late-page", "http://h.test/style.css"}
	if diff := cmp.Diff(want, order); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	if out, dropped := f.Stats(); out != 1 || dropped != 1 {
		t.Errorf("Stats = %d outside, %d dropped; want 1, 1", out, dropped)
	}
	if !f.Seen("http://h.test/items/3") || f.Seen("http://h.test/never") {
		t.Error("Seen")
	}
}

func TestTemplate(t *testing.T) {
	for _, tc := range []struct{ a, b string }{
		{"http://h/items/41", "http://h/items/42"},
		{"http://h/items/41?page=1", "http://h/items/9?page=7"},
		{"http://h/tx/0xdeadbeef", "http://h/tx/0x01"},
		{"http://h/u/3fa85f64-5717-4562-b3fc-2c963f66afa6", "http://h/u/00000000-0000-0000-0000-000000000000"},
		{"http://h/p/page-12.html", "http://h/p/page-7.html"},
	} {
		if Template(tc.a) != Template(tc.b) {
			t.Errorf("Template(%s) = %s != Template(%s) = %s", tc.a, Template(tc.a), tc.b, Template(tc.b))
		}
	}
	for _, tc := range []struct{ a, b string }{
		{"http://h/docs/intro", "http://h/docs/api"},
		{"http://h/items?page=1", "http://h/items?sort=1"},
		{"http://h/a", "https://h/a"},
	} {
		if Template(tc.a) == Template(tc.b) {
			t.Errorf("Template(%s) == Template(%s) = %s", tc.a, tc.b, Template(tc.a))
		}
	}
}

func TestFill(t *testing.T) {
	for _, tc := range []struct {
		raw, value, want string
		ok               bool
	}{
		{"http://h/u/{name}", "alice", "http://h/u/alice", true},
		{"http://h/NAME/", "alice", "http://h/alice/", true},
		{"http://h/u/:name/posts", "alice", "http://h/u/alice/posts", true},
		{"http://h/u/<name>", "alice", "http://h/u/alice", true},
		{"http://h/u/{{name}}.json", "alice", "http://h/u/alice.json", true},
		{"http://h/call?target=NAME&message=hi", "alice", "http://h/call?message=hi&target=alice", true},
		{"http://h/plain/path", "alice", "http://h/plain/path", true},
		{"http://h/u/{name}", "", "http://h/u/{name}", false},
		{"http://h/%zz", "alice", "http://h/%zz", false},
	} {
		got, ok := Fill(tc.raw, tc.value)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Fill(%q, %q) = %q, %v; want %q, %v", tc.raw, tc.value, got, ok, tc.want, tc.ok)
		}
	}
	if !HasPlaceholder("http://h/u/{name}") || HasPlaceholder("http://h/u/alice") {
		t.Error("HasPlaceholder")
	}
}

func TestText(t *testing.T) {
	got := Text(`<html><head><style>x{}</style><script>var a="GET /no"</script></head><body>
<h2>Items</h2><p>Send a <code>GET</code> request to <code>/api/items</code>. It returns JSON &amp; more.</p>
<table><tr><th>Method</th><th>Path</th></tr><tr><td>GET</td><td>/api/status</td></tr></table>
<pre>curl https://h.test/api/items
{"items": []}</pre><ul><li>one</li><li>two</li></ul></body></html>`)
	want := "## Items\nSend a `GET` request to `/api/items`. It returns JSON & more.\n| Method | Path |\n| GET | /api/status |\ncurl https://h.test/api/items\n{\"items\": []}\n- one\n- two\n"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Text (-want +got):\n%s", diff)
	}
}
