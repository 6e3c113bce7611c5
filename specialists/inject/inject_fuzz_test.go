package inject

import (
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// FuzzHTMLContext feeds arbitrary pages to the injection rules' HTML
// analysis: it must never panic, token spans must tile the page, the
// attribute scanner must agree with the tokenizer, the JavaScript lexer's
// runs must be ordered and in bounds, and a landing or breakout may only be
// reported for a token the page holds. The committed corpus is under
// testdata/fuzz/FuzzHTMLContext.
func FuzzHTMLContext(f *testing.F) {
	for _, s := range []string{
		`<h2>` + tk + `</h2><img alt="` + tk + `" title='x' data-y=z>`,
		`<script>var a = "` + tk + `"; /re[/]/.test(b) / 2; ` + "`${" + tk + "}`" + `</script>`,
		`<style>.c{color:` + tk + `}</style><!-- ` + tk + ` --><title>` + tk + `</title>`,
		`<a href=" javascript:` + tk + `()" onclick="f('&#39;-` + tk + `-&#39;')">`,
		`<div class=x ` + tk + `=1><` + tk + `>`,
		`<a =b c= "d" e =f/ g>`, `<p/ class="a"/>`, `<x a="unterminated`, "<script><!--\n--> x</script>",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, page string) {
		toks := tokenizePage(page)
		end := 0
		for i, tk := range toks {
			if tk.Start != end || tk.End < tk.Start || tk.End > len(page) || page[tk.Start:tk.End] != tk.Raw {
				t.Fatalf("token %d spans %d..%d after %d (page %d bytes)", i, tk.Start, tk.End, end, len(page))
			}
			end = tk.End
			for _, a := range tk.Attrs {
				if a.ValStart < tk.Start || a.ValEnd > tk.End || a.ValStart > a.ValEnd {
					t.Fatalf("attribute %q of token %d spans %d..%d outside %d..%d", a.Key, i, a.ValStart, a.ValEnd, tk.Start, tk.End)
				}
			}
			if tk.InText && tk.Name == "script" {
				segs := lexJS(tk.Raw)
				for j := 1; j < len(segs); j++ {
					if segs[j].Start <= segs[j-1].Start || segs[j].Start > len(tk.Raw) || segs[j].State == segs[j-1].State {
						t.Fatalf("lexer runs out of order at %d: %+v", j, segs)
					}
				}
			}
		}
		if len(page) < 4096 { // the check re-tokenizes per attribute
			if msg := attrsAgree(page); msg != "" {
				t.Fatalf("attribute scanner disagrees with the tokenizer: %s", msg)
			}
		}
		low := strings.ToLower(page)
		if !strings.Contains(low, tk) {
			if l := findLandings(page, tk); len(l) != 0 {
				t.Fatalf("landings without the token: %+v", l)
			}
			if b := findBreakouts(page, tk); len(b) != 0 {
				t.Fatalf("breakouts without the token: %+v", b)
			}
		} else {
			findLandings(page, tk)
			findBreakouts(page, tk)
		}
		for _, v := range []string{page, `x" onmouseover="y()`, "</script><script>x()</script>"} {
			for _, h := range liveInjection(page, v) {
				if h.Became == "" || h.Ctx == 0 {
					t.Fatalf("incomplete live hit %+v", h)
				}
			}
		}
		_ = html.UnescapeString(page)
	})
}

// FuzzLexJS: the JavaScript lexer never panics and its runs are ordered,
// in bounds and alternate state.
func FuzzLexJS(f *testing.F) {
	for _, s := range []string{`a = "x\"y"; b = 'z'`, "t = `a ${ {b: `c ${d}`} } e`", "x = a / b / c; r = /[/]\\//g", "<!-- c\n--> d\n/* e */ f // g"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		segs := lexJS(src)
		if len(segs) == 0 || segs[0].Start != 0 {
			t.Fatalf("runs %+v", segs)
		}
		for i := 1; i < len(segs); i++ {
			if segs[i].Start <= segs[i-1].Start || segs[i].Start > len(src) || segs[i].State == segs[i-1].State || segs[i].State > jsRegex {
				t.Fatalf("runs out of order at %d: %+v", i, segs)
			}
		}
		for off := range len(src) + 1 {
			jsStateAt(segs, off)
		}
		if len(src) > 0 {
			escapesJS(src, len(src)/2, len(src)-len(src)/2)
		}
	})
}
