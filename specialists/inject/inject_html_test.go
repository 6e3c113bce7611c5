package inject

import (
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/net/html"
)

const tk = "qa1b2c3d4e5f"

func TestFindLandings(t *testing.T) {
	for _, tc := range []struct {
		name, page string
		want       []landing
	}{
		{"text", `<h2>Hi ` + tk + `</h2>`, []landing{{Ctx: ctxText, Container: 1}}},
		{"title", `<title>` + tk + `</title>`, []landing{{Ctx: ctxRCDATA, Tag: "title", Container: 1}}},
		{"textarea", `<textarea>a ` + tk + `</textarea>`, []landing{{Ctx: ctxRCDATA, Tag: "textarea", Container: 1}}},
		{"comment", `<!-- ` + tk + ` -->`, []landing{{Ctx: ctxComment, Container: 0}}},
		{"dq attribute", `<img alt="x ` + tk + `">`, []landing{{Ctx: ctxAttrDQ, Tag: "img", Attr: "alt", Quote: '"'}}},
		{"sq attribute", `<span data-x='` + tk + `'>`, []landing{{Ctx: ctxAttrSQ, Tag: "span", Attr: "data-x", Quote: '\''}}},
		{"unquoted attribute", `<div class=card style=color:` + tk + `>`, []landing{{Ctx: ctxAttrUQ, Tag: "div", Attr: "style"}}},
		{"url attribute", `<a href="  ` + tk + `">`, []landing{{Ctx: ctxURL, Tag: "a", Attr: "href", Quote: '"'}}},
		{"url in the middle is a plain attribute", `<a href="/u/` + tk + `">`, []landing{{Ctx: ctxAttrDQ, Tag: "a", Attr: "href", Quote: '"'}}},
		{"entities decoded", `<a title="&#x71;a1b2c3d4e5f">`, []landing{{Ctx: ctxAttrDQ, Tag: "a", Attr: "title", Quote: '"'}}},
		{"handler", `<button onclick="say('` + tk + `')">`, []landing{{Ctx: ctxHandler, Tag: "button", Attr: "onclick", Quote: '"', JS: jsSQ}}},
		{"script string", `<script>var g = "` + tk + `";</script>`, []landing{{Ctx: ctxScript, Tag: "script", JS: jsDQ, Container: 1}}},
		{"script template", "<script>let g = `a ${x} " + tk + "`;</script>", []landing{{Ctx: ctxScript, Tag: "script", JS: jsTemplate, Container: 1}}},
		{"script code", `<script>var n = ` + tk + `;</script>`, []landing{{Ctx: ctxScript, Tag: "script", JS: jsCode, Container: 1}}},
		{"script comment", `<script>// ` + tk + "\nx()</script>", []landing{{Ctx: ctxScript, Tag: "script", JS: jsLineComment, Container: 1}}},
		{"style", `<style>.c{color:` + tk + `}</style>`, []landing{{Ctx: ctxStyle, Tag: "style", Container: 1}}},
		{"case-insensitive", `<p>QA1B2C3D4E5F</p>`, []landing{{Ctx: ctxText, Container: 1}}},
		{"several", `<title>` + tk + `</title><p title="` + tk + `">` + tk + `</p>`, []landing{
			{Ctx: ctxRCDATA, Tag: "title", Container: 1},
			{Ctx: ctxAttrDQ, Tag: "p", Attr: "title", Quote: '"', Container: 3},
			{Ctx: ctxText, Container: 4},
		}},
		{"absent", `<p>qa1b2c3d4e5</p>`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, findLandings(tc.page, tk)); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tc.page, diff)
			}
		})
	}
}

func TestFindBreakouts(t *testing.T) {
	for _, tc := range []struct {
		name, page string
		want       []breakout
	}{
		{"element", `<h2><` + tk + `></h2>`, []breakout{{Kind: "markup", From: "text", What: "an element <" + tk + ">"}}},
		{"escaped element", `<h2>&lt;` + tk + `&gt;</h2>`, nil},
		{"out of title", `<title></title><` + tk + `></title>`, []breakout{{Kind: "markup", From: "title", What: "an element <" + tk + ">"}}},
		{"inside title stays text", `<title><` + tk + `></title>`, nil},
		{"out of a comment", `<!-- --><` + tk + `> -->`, []breakout{{Kind: "markup", From: "comment", What: "an element <" + tk + ">"}}},
		{"attribute", `<img alt="" ` + tk + `="">`, []breakout{{Kind: "attribute", What: "an attribute " + tk + " on <img>"}}},
		{"escaped quote", `<img alt="&#34; ` + tk + `=&#34;">`, nil},
		{"sq inside dq is data", `<img alt="' ` + tk + `='">`, nil},
		{"javascript url", `<a href=" JaVa&#x09;script:` + tk + `()">`, []breakout{{Kind: "url", What: "a javascript: URL in href of <a>"}}},
		{"http url", `<a href="https://x/` + tk + `">`, nil},
		{"handler code", `<b onclick="say('&#39;-` + tk + `-&#39;')">`, []breakout{{Kind: "script", What: "code in the onclick handler of <b>"}}},
		{"handler string", `<b onclick="say('\'-` + tk + `-\'')">`, nil},
		{"script code", `<script>var g = ""-` + tk + `-"";</script>`, []breakout{{Kind: "script", What: "code in a <script> element"}}},
		{"script escaped quote", `<script>var g = "\"-` + tk + `-\"";</script>`, nil},
		{"out of script", `<script>var g = "</script><` + tk + `>";</script>`, []breakout{{Kind: "markup", From: "script", What: "an element <" + tk + ">"}}},
		{"out of style", `<style>.c{color:</style><` + tk + `>}</style>`, []breakout{{Kind: "markup", From: "style", What: "an element <" + tk + ">"}}},
		{"out of a tag", `<div class=x><` + tk + `>>`, []breakout{{Kind: "markup", From: "text", What: "an element <" + tk + ">"}}},
		{"regex is data", `<script>var r = /-` + tk + `-/;</script>`, nil},
		{"division is code", `<script>var r = a / ` + tk + ` / 2;</script>`, []breakout{{Kind: "script", What: "code in a <script> element"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, findBreakouts(tc.page, tk)); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tc.page, diff)
			}
		})
	}
}

func TestLexJS(t *testing.T) {
	for _, tc := range []struct {
		src  string
		at   string // the probe is the first occurrence of this marker
		want jsState
	}{
		{`a = "x@";`, "@", jsDQ},
		{`a = 'x@';`, "@", jsSQ},
		{`a = "\"@";`, "@", jsDQ},
		{`a = "x"; @`, "@", jsCode},
		{"a = `x ${ b + '@' } y`", "@", jsSQ},
		{"a = `x ${ {k: 1}.k } @`", "@", jsTemplate},
		{"a = `x ${ {k: 1}.k } y` + @", "@", jsCode},
		{"// c\n@", "@", jsCode},
		{"// c @\nx", "@", jsLineComment},
		{"/* @ */", "@", jsBlockComment},
		{"/* x */ @", "@", jsCode},
		{"x = /a[/]@/", "@", jsRegex},
		{"x = a / b / @", "@", jsCode},
		{"return /@/", "@", jsRegex},
		{"f() / @", "@", jsCode},
		{"<!-- @\nx", "@", jsLineComment},
		{"x\n--> @\ny", "@", jsLineComment},
		{"x-->@", "@", jsCode},
		{"a = \"unterminated\n@", "@", jsCode},
	} {
		off := strings.Index(tc.src, tc.at)
		if got := jsStateAt(lexJS(tc.src), off); got != tc.want {
			t.Errorf("%q at %d: %s, want %s", tc.src, off, got, tc.want)
		}
	}
}

// TestScanAttrsAgrees checks the attribute scanner against the tokenizer on
// hand-picked tags; FuzzHTMLContext does it on generated ones.
func TestScanAttrsAgrees(t *testing.T) {
	for _, page := range []string{
		`<a href="x" title='y' data-z=w checked>`,
		`<a =b c= "d" e =f/ g>`,
		`<a b="unterminated`,
		`<img src=x onerror=a() / alt=>`,
		`<x A=1 a=2 B='3'>`,
		`<p/ class="a"/>`,
	} {
		if msg := attrsAgree(page); msg != "" {
			t.Errorf("%s: %s", page, msg)
		}
	}
}

// attrsAgree compares scanAttrs with the tokenizer's attributes, and checks
// each value span is where the tokenizer reads the value: replacing the
// span's bytes with a marker must give that attribute exactly the marker.
// It returns "" when they agree.
func attrsAgree(page string) string {
	toks := tokenizeAll(page)
	for k, t := range toks {
		if t.tt != html.StartTagToken && t.tt != html.SelfClosingTagToken {
			continue
		}
		got := scanAttrs(t.raw, t.start)
		if len(got) != len(t.tok.Attr) {
			return "attribute count " + strconv.Itoa(len(got)) + ", tokenizer " + strconv.Itoa(len(t.tok.Attr))
		}
		for i, a := range got {
			if a.Key != t.tok.Attr[i].Key {
				return "key " + a.Key + ", tokenizer " + t.tok.Attr[i].Key
			}
			if a.QuoteClose >= 0 && page[a.QuoteClose] != a.Quote {
				return "closing quote of " + a.Key + " is not its quote"
			}
			if !a.HasValue || a.ValEnd == len(page) {
				continue // no value, or cut off by the end of the page
			}
			swapped := tokenizeAll(page[:a.ValStart] + "zq" + page[a.ValEnd:])
			if k >= len(swapped) || len(swapped[k].tok.Attr) <= i || swapped[k].tok.Attr[i].Val != "zq" {
				return "the span of " + a.Key + " is not its value"
			}
		}
	}
	return ""
}

type rawTok struct {
	tt    html.TokenType
	start int
	raw   string
	tok   html.Token
}

func tokenizeAll(page string) []rawTok {
	z := html.NewTokenizer(strings.NewReader(page))
	var out []rawTok
	off := 0
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			return out
		}
		raw := string(z.Raw())
		out = append(out, rawTok{tt: tt, start: off, raw: raw, tok: z.Token()})
		off += len(raw)
	}
}

func TestLiveInjection(t *testing.T) {
	const (
		script  = `Maple syrup <script>alert(document.domain)</script>`
		quote   = `Mo" onmouseover="alert(1)`
		jsQuote = `Say "hi" to everyone`
	)
	for _, tc := range []struct {
		name, page, value string
		want              []liveHit
	}{
		{"script in text", `<h2>` + script + `</h2>`, script, []liveHit{{Ctx: ctxText, Became: "markup", Active: true, Where: "element text"}}},
		{"escaped text", `<h2>` + html.EscapeString(script) + `</h2>`, script, nil},
		{"inert markup", `<p>Tea <b>bold</b> and more</p>`, `Tea <b>bold</b> and more`, []liveHit{{Ctx: ctxText, Became: "markup", Where: "element text"}}},
		{"attribute breakout", `<img alt="` + quote + `" src=x>`, quote, []liveHit{{Ctx: ctxAttrDQ, Became: "attribute", Active: true, Where: "alt of <img>"}}},
		{"escaped attribute", `<img alt="` + html.EscapeString(quote) + `" src=x>`, quote, nil},
		{"a quote in text is harmless", `<p>` + quote + `</p>`, quote, nil},
		{"the other quote is harmless", `<img alt="It's a 'quoted' thing">`, `It's a 'quoted' thing`, nil},
		{"single-quoted breakout", `<span data-p='It's a trap onclick=x()'>`, `It's a trap onclick=x()`, []liveHit{{Ctx: ctxAttrSQ, Became: "attribute", Active: true, Where: "data-p of <span>"}}},
		{"partly escaped", `<img alt="Mo" onmouseover="alert(1) &lt;b&gt;">`, quote + ` <b>`, []liveHit{{Ctx: ctxAttrDQ, Became: "attribute", Active: true, Where: "alt of <img>"}}},
		{"script string", `<script>var g = "` + jsQuote + `";</script>`, jsQuote, []liveHit{{Ctx: ctxScript, Became: "script", Active: true, Where: "a <script> element"}}},
		{"script string escaped", `<script>var g = "Say \"hi\" to everyone";</script>`, jsQuote, nil},
		{"script closed early", `<script>var g = "x</script><img src=x onerror=alert(1)>";</script>`, `x</script><img src=x onerror=alert(1)>`, []liveHit{{Ctx: ctxScript, Became: "markup", Active: true, Where: "a <script> element"}}},
		{"javascript url", `<a href="javascript:alert(document.cookie)">me</a>`, `javascript:alert(document.cookie)`, []liveHit{{Ctx: ctxURL, Became: "url", Active: true, Where: "href of <a>"}}},
		{"javascript text", `<p>javascript:alert(document.cookie)</p>`, `javascript:alert(document.cookie)`, nil},
		{"handler", `<button onclick="say('It&#39;s done; alert(1)//')">`, `It's done; alert(1)//`, []liveHit{{Ctx: ctxHandler, Became: "script", Active: true, Where: "the onclick handler of <button>"}}},
		{"handler escaped", `<button onclick="say('It\x27s done; alert(1)//')">`, `It's done; alert(1)//`, nil},
		{"comment", `<!-- note: done --><img src=x onerror=alert(1)> -->`, `done --><img src=x onerror=alert(1)>`, []liveHit{{Ctx: ctxComment, Became: "markup", Active: true, Where: "a comment"}}},
		{"too short", `<p><b>x</b></p>`, `<b>x</b>`, nil},
		{"nothing dangerous", `<p>plain words here</p>`, `plain words here`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, liveInjection(tc.page, tc.value)); diff != "" {
				t.Errorf("%s in %s (-want +got):\n%s", tc.value, tc.page, diff)
			}
		})
	}
}

func TestGetForms(t *testing.T) {
	page := `<form action="/search"><input name=q value=tea><input type=password name=pw><input type=submit name=go></form>
<form method=post action=/login><input name=user></form>
<form><select name="lang"></select><textarea name=note></textarea></form>
<form method=GET action="https://other.example/find?x=1"><input name=w></form>`
	got := getForms("http://h/p/page?a=b", page)
	want := []string{"http://h/search?q=tea", "http://h/p/page?lang=x&note=x", "https://other.example/find?w=x"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("forms (-want +got):\n%s", diff)
	}
}
