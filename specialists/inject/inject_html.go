package inject

import (
	"slices"
	"sort"
	"strings"

	"github.com/qafleet/fleetd/specialists/replay"
	"golang.org/x/net/html"
)

// This file decides, for the injection rules, where a value lands in an HTML
// page and whether it broke out of that place. It reads pages with
// golang.org/x/net/html's tokenizer (the HTML standard's tokenization, the
// same a browser does before building the tree), plus two small scanners of
// its own: one that reproduces the tokenizer's attribute parsing to learn
// each attribute's quoting and byte span (the tokenizer does not expose
// them; a fuzz test checks the two agree), and a JavaScript lexer that tells
// code from strings, comments and regular expressions.

// htmlCtx is the place in a page a value lands.
type htmlCtx uint8

// The contexts. Findings name them by group (String): element text (text,
// rcdata), quoted attribute (dq, sq), unquoted attribute, URL attribute,
// script (script element, event handler), style, comment.
const (
	ctxText    htmlCtx = iota + 1 // element text
	ctxRCDATA                     // text of title or textarea (entities decoded, no markup)
	ctxComment                    // an HTML comment
	ctxAttrDQ                     // a double-quoted attribute value
	ctxAttrSQ                     // a single-quoted attribute value
	ctxAttrUQ                     // an unquoted attribute value
	ctxURL                        // a URL attribute whose value starts with the token
	ctxHandler                    // an event-handler attribute (JavaScript)
	ctxScript                     // a script element (JavaScript)
	ctxStyle                      // a style element (CSS)
)

// String is the context's group name, as findings say it.
func (c htmlCtx) String() string {
	switch c {
	case ctxText, ctxRCDATA:
		return "element text"
	case ctxComment:
		return "comment"
	case ctxAttrDQ, ctxAttrSQ:
		return "quoted attribute"
	case ctxAttrUQ:
		return "unquoted attribute"
	case ctxURL:
		return "URL attribute"
	case ctxHandler, ctxScript:
		return "script"
	case ctxStyle:
		return "style"
	}
	return "unknown"
}

// landing is one place a token was found.
type landing struct {
	Ctx       htmlCtx
	Tag       string  // the element: the raw-text element holding text, or the tag holding the attribute
	Attr      string  // the attribute, for attribute contexts
	Quote     byte    // the attribute's quote: '"', '\'' or 0 (unquoted)
	JS        jsState // where in JavaScript, for script and handler contexts
	Container int     // index of the token holding it (an element's text, a comment, a tag): unique in the page
}

// key identifies a landing's payload choice: landings with the same key take
// the same payload.
func (l landing) key() string {
	return l.Ctx.String() + "|" + string(rune('0'+l.Ctx)) + "|" + l.Tag + "|" + l.Attr + "|" + string(rune(l.Quote)) + "|" + string(rune('0'+l.JS))
}

// rawTextElements hold text the tokenizer does not read as markup until
// their end tag; title and textarea decode entities (RCDATA).
var rawTextElements = map[string]bool{
	"script": true, "style": true, "title": true, "textarea": true, "xmp": true,
	"iframe": true, "noembed": true, "noframes": true, "noscript": true, "plaintext": true,
}

// urlAttrs hold URLs a browser follows or loads.
var urlAttrs = map[string]bool{
	"href": true, "src": true, "action": true, "formaction": true, "data": true, "poster": true,
	"background": true, "cite": true, "longdesc": true, "codebase": true, "manifest": true,
	"xlink:href": true, "ping": true, "lowsrc": true, "dynsrc": true, "icon": true, "profile": true, "usemap": true,
}

// tok is one token of a page with its byte span.
type tok struct {
	Type   html.TokenType
	Start  int // byte offset of the token's raw text
	End    int
	Name   string     // tag name, lowercased (tags); the raw-text element (its text)
	Attrs  []attrSpan // tags: attributes in source order, duplicates dropped
	Data   string     // text and comments: the decoded data
	Raw    string
	InText bool // a text token inside a raw-text element
}

// attrSpan is one attribute of a tag with its quoting and spans (absolute
// byte offsets into the page).
type attrSpan struct {
	Key        string // lowercased
	Val        string // decoded
	Quote      byte   // '"', '\'' or 0
	KeyStart   int
	ValStart   int // the value's first byte (inside the quotes)
	ValEnd     int
	HasValue   bool
	QuoteClose int // offset of the closing quote; -1 when unquoted or unterminated
}

// maxPage bounds the bytes of a page the analysis reads.
const maxPage = 1 << 20

// tokenize splits a page into tokens. It never fails: malformed markup is
// read the way the tokenizer (and a browser) reads it.
func tokenize(body string) []tok { return tokMemo.Get(body, tokenizePage) }

var tokMemo replay.Memo[[]tok]

func tokenizePage(body string) []tok {
	if len(body) > maxPage {
		body = body[:maxPage]
	}
	z := html.NewTokenizer(strings.NewReader(body))
	var out []tok
	off := 0
	rawParent := ""
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			break
		}
		raw := string(z.Raw())
		t := tok{Type: tt, Start: off, End: off + len(raw), Raw: raw}
		off = t.End
		switch tt {
		case html.StartTagToken, html.SelfClosingTagToken:
			tk := z.Token()
			t.Name = tk.Data
			t.Attrs = scanAttrs(raw, t.Start)
			// The tokenizer decodes values; take its decoding when the two
			// scans agree on the attributes (they do unless the tag is cut
			// off by the end of the page).
			if len(tk.Attr) == len(t.Attrs) {
				for i := range t.Attrs {
					if t.Attrs[i].Key == tk.Attr[i].Key {
						t.Attrs[i].Val = tk.Attr[i].Val
					}
				}
			}
			rawParent = ""
			if tt == html.StartTagToken && rawTextElements[t.Name] {
				rawParent = t.Name
			}
		case html.TextToken:
			t.Data = string(z.Text())
			if rawParent != "" {
				t.Name, t.InText = rawParent, true
			}
			rawParent = ""
		case html.CommentToken:
			t.Data = string(z.Text())
			rawParent = ""
		case html.EndTagToken:
			tk := z.Token()
			t.Name = tk.Data
			rawParent = ""
		default:
			rawParent = ""
		}
		out = append(out, t)
	}
	return out
}

func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\f' }

// scanAttrs reads the attributes of a start tag's raw text exactly as the
// x/net/html tokenizer does (readTag, readTagAttrKey, readTagAttrVal), adding
// what it throws away: each value's quoting and span. base is the tag's
// offset in the page. Values are entity-decoded by the caller.
func scanAttrs(raw string, base int) []attrSpan {
	n := len(raw)
	if n < 2 || raw[0] != '<' {
		return nil
	}
	i := 2 // "<" and the tag name's first letter
	for i < n {
		c := raw[i]
		i++
		if isSpace(c) {
			break
		}
		if c == '/' || c == '>' {
			i--
			break
		}
	}
	skip := func() {
		for i < n && isSpace(raw[i]) {
			i++
		}
	}
	skip()
	var out []attrSpan
	seen := map[string]bool{}
	for i < n {
		c := raw[i]
		i++
		if c == '>' {
			break
		}
		i--
		// The key.
		ks := i
		for {
			if i >= n {
				break
			}
			c := raw[i]
			i++
			if c == '=' && ks+1 == i {
				continue // an "=" starting a name is part of it
			}
			if c == '=' || isSpace(c) || c == '/' || c == '>' {
				i--
				break
			}
		}
		ke := i
		a := attrSpan{KeyStart: base + ks, ValStart: base + i, ValEnd: base + i, QuoteClose: -1}
		// The value.
		func() {
			skip()
			if i >= n {
				return
			}
			c := raw[i]
			i++
			if c == '/' {
				return
			}
			if c != '=' {
				i--
				return
			}
			skip()
			if i >= n {
				return
			}
			q := raw[i]
			i++
			switch q {
			case '>':
				i--
				return
			case '"', '\'':
				a.Quote, a.HasValue = q, true
				vs := i
				for {
					if i >= n {
						a.ValStart, a.ValEnd = base+vs, base+i
						return
					}
					c := raw[i]
					i++
					if c == q {
						a.ValStart, a.ValEnd, a.QuoteClose = base+vs, base+i-1, base+i-1
						return
					}
				}
			default:
				a.HasValue = true
				vs := i - 1
				for {
					if i >= n {
						a.ValStart, a.ValEnd = base+vs, base+i
						return
					}
					c := raw[i]
					i++
					if isSpace(c) {
						a.ValStart, a.ValEnd = base+vs, base+i-1
						return
					}
					if c == '>' {
						i--
						a.ValStart, a.ValEnd = base+vs, base+i
						return
					}
				}
			}
		}()
		a.Key = attrKey(raw[ks:ke])
		if ke > ks && !seen[a.Key] {
			seen[a.Key] = true
			a.Val = raw[a.ValStart-base : a.ValEnd-base]
			out = append(out, a)
		}
		skip()
	}
	return out
}

// attrKey normalizes an attribute name as the tokenizer does: ASCII
// letters lowercased, NUL replaced by U+FFFD.
func attrKey(k string) string {
	b := []byte(k)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return strings.ReplaceAll(string(b), "\x00", "\uFFFD")
}

// containsFold reports whether s holds token, ignoring ASCII case (tokens
// are lowercase letters and digits).
func containsFold(s, token string) bool { return indexFold(s, token) >= 0 }

func indexFold(s, token string) int {
	if len(token) == 0 {
		return 0
	}
	for i := 0; i+len(token) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(token)], token) {
			return i
		}
	}
	return -1
}

// findLandings returns every place token lands in body, at most one per
// container and context, in page order.
func findLandings(body, token string) []landing {
	return landingMemo.Get(body+"\x00"+token, func(string) []landing { return landingsOf(body, token) })
}

var landingMemo replay.Memo[[]landing]

func landingsOf(body, token string) []landing {
	var out []landing
	add := func(l landing) {
		if !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	for i, t := range tokenize(body) {
		switch t.Type {
		case html.TextToken:
			if !containsFold(t.Raw, token) {
				continue
			}
			switch {
			case t.InText && (t.Name == "script"):
				for _, st := range jsStatesOf(t.Raw, token) {
					add(landing{Ctx: ctxScript, Tag: "script", JS: st, Container: i})
				}
			case t.InText && t.Name == "style":
				add(landing{Ctx: ctxStyle, Tag: "style", Container: i})
			case t.InText:
				add(landing{Ctx: ctxRCDATA, Tag: t.Name, Container: i})
			default:
				add(landing{Ctx: ctxText, Container: i})
			}
		case html.CommentToken:
			if containsFold(t.Raw, token) {
				add(landing{Ctx: ctxComment, Container: i})
			}
		case html.StartTagToken, html.SelfClosingTagToken:
			for _, a := range t.Attrs {
				if !containsFold(a.Val, token) {
					continue
				}
				l := landing{Tag: t.Name, Attr: a.Key, Quote: a.Quote, Container: i}
				switch {
				case strings.HasPrefix(a.Key, "on"):
					for _, st := range jsStatesOf(a.Val, token) {
						l.Ctx, l.JS = ctxHandler, st
						add(l)
					}
					continue
				case urlAttrs[a.Key] && strings.HasPrefix(strings.ToLower(urlTrim(a.Val)), token):
					l.Ctx = ctxURL
				case a.Quote == '"':
					l.Ctx = ctxAttrDQ
				case a.Quote == '\'':
					l.Ctx = ctxAttrSQ
				default:
					l.Ctx = ctxAttrUQ
				}
				add(l)
			}
		}
	}
	return out
}

// urlTrim drops what a browser's URL parser ignores before the scheme:
// leading C0 controls and spaces, and tabs and newlines anywhere.
func urlTrim(s string) string {
	s = strings.TrimLeftFunc(s, func(r rune) bool { return r <= ' ' })
	return strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' {
			return -1
		}
		return r
	}, s)
}

// jsStatesOf returns the lexer states at each occurrence of token in src.
func jsStatesOf(src, token string) []jsState {
	segs := lexJS(src)
	var out []jsState
	low := strings.ToLower(src)
	for from := 0; ; {
		i := strings.Index(low[from:], token)
		if i < 0 {
			break
		}
		st := jsStateAt(segs, from+i)
		if !slices.Contains(out, st) {
			out = append(out, st)
		}
		from += i + len(token)
	}
	return out
}

// breakout is evidence that a payload carrying token escaped its context.
type breakout struct {
	Kind string // markup, attribute, url, script
	From string // for markup: what it broke out of: text, comment, or the raw-text element (script, style, title, ...)
	What string // a description for the finding
}

// findBreakouts returns the evidence in body that a payload carrying token
// escaped where it was written: an element named token (markup), an
// attribute named token (attribute), a URL attribute whose value runs
// javascript: and holds token (url), or token in JavaScript code position in
// a script element or an event handler (script). Tokens are lowercase
// letters and digits, so none of this can happen by chance.
func findBreakouts(body, token string) []breakout {
	return breakoutMemo.Get(body+"\x00"+token, func(string) []breakout { return breakoutsOf(body, token) })
}

var breakoutMemo replay.Memo[[]breakout]

func breakoutsOf(body, token string) []breakout {
	var out []breakout
	add := func(b breakout) {
		if !slices.Contains(out, b) {
			out = append(out, b)
		}
	}
	toks := tokenize(body)
	for i, t := range toks {
		switch t.Type {
		case html.StartTagToken, html.SelfClosingTagToken:
			if t.Name == token {
				add(breakout{Kind: "markup", From: markupFrom(toks, i), What: "an element <" + token + ">"})
			}
			for _, a := range t.Attrs {
				if a.Key == token {
					add(breakout{Kind: "attribute", What: "an attribute " + token + " on <" + t.Name + ">"})
				}
				if !containsFold(a.Val, token) {
					continue
				}
				v := strings.ToLower(urlTrim(a.Val))
				if urlAttrs[a.Key] && (strings.HasPrefix(v, "javascript:") || strings.HasPrefix(v, "vbscript:")) {
					add(breakout{Kind: "url", What: "a " + strings.SplitN(v, ":", 2)[0] + ": URL in " + a.Key + " of <" + t.Name + ">"})
				}
				if strings.HasPrefix(a.Key, "on") && slices.Contains(jsStatesOf(a.Val, token), jsCode) {
					add(breakout{Kind: "script", What: "code in the " + a.Key + " handler of <" + t.Name + ">"})
				}
			}
		case html.TextToken:
			if t.InText && t.Name == "script" && containsFold(t.Raw, token) && slices.Contains(jsStatesOf(t.Raw, token), jsCode) {
				add(breakout{Kind: "script", What: "code in a <script> element"})
			}
		}
	}
	return out
}

// markupFrom says what the token before toks[i] shows the new element broke
// out of: a raw-text element it closed (script, style, title, ...), a
// comment, or element text (anything else: text, a tag, an end tag).
func markupFrom(toks []tok, i int) string {
	if i == 0 {
		return "text"
	}
	prev := toks[i-1]
	switch prev.Type {
	case html.EndTagToken:
		if rawTextElements[prev.Name] && i >= 2 && toks[i-2].InText && toks[i-2].Name == prev.Name {
			return prev.Name
		}
		if rawTextElements[prev.Name] && i >= 2 && toks[i-2].Type == html.StartTagToken && toks[i-2].Name == prev.Name {
			return prev.Name // an empty element: the payload began with its end tag
		}
		return "text"
	case html.CommentToken:
		return "comment"
	}
	return "text"
}

// expects reports whether evidence b shows a breakout out of landing l: the
// kind of escape the payload for l's context aims at, found where l is.
func (l landing) expects(b breakout) bool {
	switch l.Ctx {
	case ctxText:
		return b.Kind == "markup" && b.From == "text"
	case ctxRCDATA:
		return b.Kind == "markup" && b.From == l.Tag
	case ctxComment:
		return b.Kind == "markup" && b.From == "comment"
	case ctxAttrDQ, ctxAttrSQ, ctxAttrUQ:
		return b.Kind == "attribute"
	case ctxURL:
		return b.Kind == "url" || b.Kind == "attribute"
	case ctxHandler:
		return b.Kind == "script" && strings.Contains(b.What, "handler")
	case ctxScript:
		return b.Kind == "script" && !strings.Contains(b.What, "handler") || b.Kind == "markup" && b.From == "script"
	case ctxStyle:
		return b.Kind == "markup" && b.From == "style"
	}
	return false
}

// liveHit is a stored value found in a page where it changed the page's
// structure: it became markup, attributes, a script URL or code.
type liveHit struct {
	Ctx    htmlCtx
	Became string // markup, attribute, url, script
	Active bool   // what it became runs script (a script element, a handler, a javascript: URL, code)
	Where  string // the element or attribute it landed in, for the finding
}

// minLiveValue is the shortest stored value the live check judges: a shorter
// one can match the page's own markup by chance.
const minLiveValue = 12

// liveInjection returns where value, a stored field found in body, escapes
// the place it lands: its < starts a tag, its quote closes the attribute or
// the JavaScript string it is in, it closes a comment, script or style
// early, or it is a javascript: URL in a URL attribute. A value that stays
// data where it lands (escaped, or harmless there, like a quote in element
// text) gives nothing. Values shorter than 12 bytes, or without <, ", ' or
// a javascript: scheme, are not judged (nil). When the value is not found
// verbatim, each dangerous character is looked for with the 8 bytes around
// it, to catch a value escaped in part.
func liveInjection(body, value string) []liveHit {
	return liveMemo.Get(body+"\x00"+value, func(string) []liveHit { return liveOf(body, value) })
}

var liveMemo replay.Memo[[]liveHit]

func hasScriptScheme(v string) bool {
	v = strings.ToLower(urlTrim(v))
	return strings.HasPrefix(v, "javascript:") || strings.HasPrefix(v, "vbscript:")
}

func liveOf(body, value string) []liveHit {
	if len(value) < minLiveValue || !strings.ContainsAny(value, `<"'`) && !hasScriptScheme(value) {
		return nil
	}
	if len(body) > maxPage {
		body = body[:maxPage]
	}
	toks := tokenize(body)
	var out []liveHit
	add := func(h liveHit) {
		if !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	found := false
	for _, o := range indexAll(body, value, 4) {
		found = true
		if h, ok := liveAt(toks, body, o, len(value)); ok {
			add(h)
		}
	}
	if !found {
		for i := 0; i < len(value); i++ {
			if c := value[i]; c != '<' && c != '"' && c != '\'' {
				continue
			}
			// 17 bytes around it, shifted inwards at the value's ends.
			fe := min(len(value), max(0, i-8)+17)
			fs := max(0, fe-17)
			if fe-fs < minLiveValue {
				continue
			}
			for _, o := range indexAll(body, value[fs:fe], 4) {
				if h, ok := liveChar(toks, body, o+i-fs, o+fe-fs); ok {
					add(h)
				}
			}
		}
	}
	// Event handlers decode entities before the JavaScript runs: an
	// HTML-escaped quote still closes a JavaScript string there.
	for _, t := range toks {
		for _, a := range t.Attrs {
			if !strings.HasPrefix(a.Key, "on") {
				continue
			}
			i := strings.Index(a.Val, value)
			if i < 0 {
				continue
			}
			if escapesJS(a.Val, i, len(value)) {
				add(liveHit{Ctx: ctxHandler, Became: "script", Active: true, Where: "the " + a.Key + " handler of <" + t.Name + ">"})
			}
		}
	}
	return out
}

func indexAll(s, sub string, limit int) []int {
	var out []int
	for from := 0; len(out) < limit; {
		i := strings.Index(s[from:], sub)
		if i < 0 {
			break
		}
		out = append(out, from+i)
		from += i + 1
	}
	return out
}

// tokAt returns the index of the token holding byte off, -1 if none.
func tokAt(toks []tok, off int) int {
	i := sort.Search(len(toks), func(i int) bool { return toks[i].End > off })
	if i < len(toks) && toks[i].Start <= off {
		return i
	}
	return -1
}

// escapesJS reports whether src[i:i+n] leaves the JavaScript state it
// starts in: a value starting in code is code; one starting in a string or
// comment escapes when some byte of it is code.
func escapesJS(src string, i, n int) bool {
	segs := lexJS(src)
	st := jsStateAt(segs, i)
	if st == jsCode {
		return true
	}
	for _, s := range segs {
		if s.Start > i && s.Start < i+n && s.State == jsCode {
			return true
		}
	}
	return false
}

// liveAt judges value found verbatim at body[o:o+n].
func liveAt(toks []tok, body string, o, n int) (liveHit, bool) {
	k := tokAt(toks, o)
	if k < 0 {
		return liveHit{}, false
	}
	t := toks[k]
	end := o + n
	switch t.Type {
	case html.TextToken:
		ctx, where := ctxText, "element text"
		switch {
		case t.InText && t.Name == "script":
			ctx, where = ctxScript, "a <script> element"
			if escapesJS(t.Raw, o-t.Start, min(n, t.End-o)) {
				return liveHit{Ctx: ctx, Became: "script", Active: true, Where: where}, true
			}
		case t.InText && t.Name == "style":
			ctx, where = ctxStyle, "a <style> element"
		case t.InText:
			ctx, where = ctxRCDATA, "<"+t.Name+">"
		}
		if end > t.End {
			return liveHit{Ctx: ctx, Became: "markup", Active: activeIn(toks, k+1, end), Where: where}, true
		}
	case html.CommentToken:
		if end > t.End {
			return liveHit{Ctx: ctxComment, Became: "markup", Active: activeIn(toks, k+1, end), Where: "a comment"}, true
		}
	case html.StartTagToken, html.SelfClosingTagToken:
		for _, a := range t.Attrs {
			if o < a.ValStart || o >= a.ValEnd && !(o == a.ValStart && a.ValStart == a.ValEnd) {
				continue
			}
			ctx := ctxAttrUQ
			switch a.Quote {
			case '"':
				ctx = ctxAttrDQ
			case '\'':
				ctx = ctxAttrSQ
			}
			where := a.Key + " of <" + t.Name + ">"
			if end > a.ValEnd {
				return liveHit{Ctx: ctx, Became: "attribute", Active: activeAttrsIn(t, a.ValEnd, end) || activeIn(toks, k+1, end), Where: where}, true
			}
			if urlAttrs[a.Key] && strings.TrimLeftFunc(body[a.ValStart:o], func(r rune) bool { return r <= ' ' }) == "" && hasScriptScheme(body[o:end]) {
				return liveHit{Ctx: ctxURL, Became: "url", Active: true, Where: where}, true
			}
			return liveHit{}, false
		}
		// Not inside any value: the value is part of the tag's own markup.
		return liveHit{Ctx: ctxAttrUQ, Became: "attribute", Active: activeAttrsIn(t, o, end), Where: "<" + t.Name + ">"}, true
	}
	return liveHit{}, false
}

// liveChar judges one dangerous character of a stored value found (with
// the bytes around it) at body[x]; fragEnd is where the found fragment ends.
func liveChar(toks []tok, body string, x, fragEnd int) (liveHit, bool) {
	k := tokAt(toks, x)
	if k < 0 {
		return liveHit{}, false
	}
	t := toks[k]
	switch t.Type {
	case html.StartTagToken, html.SelfClosingTagToken, html.EndTagToken, html.CommentToken:
		if x == t.Start && body[x] == '<' {
			ctx, where := ctxText, "element text"
			if k > 0 && toks[k-1].InText {
				ctx, where = map[string]htmlCtx{"script": ctxScript, "style": ctxStyle}[toks[k-1].Name], "<"+toks[k-1].Name+">"
				if ctx == 0 {
					ctx = ctxRCDATA
				}
			}
			return liveHit{Ctx: ctx, Became: "markup", Active: activeIn(toks, k, fragEnd), Where: where}, true
		}
		for _, a := range t.Attrs {
			if a.QuoteClose == x && body[x] == a.Quote {
				ctx := ctxAttrDQ
				if a.Quote == '\'' {
					ctx = ctxAttrSQ
				}
				return liveHit{Ctx: ctx, Became: "attribute", Active: activeAttrsIn(t, x, fragEnd), Where: a.Key + " of <" + t.Name + ">"}, true
			}
		}
	case html.TextToken:
		if t.InText && t.Name == "script" {
			rel := x - t.Start
			segs := lexJS(t.Raw)
			before, after := jsStateAt(segs, rel-1), jsStateAt(segs, rel+1)
			if rel > 0 && before != jsCode && after == jsCode {
				return liveHit{Ctx: ctxScript, Became: "script", Active: true, Where: "a <script> element"}, true
			}
		}
	}
	return liveHit{}, false
}

// activeTags run script or load active content when they appear.
var activeTags = map[string]bool{
	"script": true, "iframe": true, "frame": true, "frameset": true, "object": true, "embed": true,
	"applet": true, "base": true, "svg": true, "math": true, "portal": true,
}

// activeIn reports whether tokens from index k that start before end hold
// active content: an active element, an event handler, a script URL, a
// srcdoc, or a meta refresh.
func activeIn(toks []tok, k, end int) bool {
	for ; k < len(toks) && toks[k].Start < end; k++ {
		t := toks[k]
		if t.Type != html.StartTagToken && t.Type != html.SelfClosingTagToken {
			continue
		}
		if activeTags[t.Name] || activeAttrsIn(t, t.Start, t.End) {
			return true
		}
		if t.Name == "meta" {
			for _, a := range t.Attrs {
				if a.Key == "http-equiv" && strings.EqualFold(a.Val, "refresh") {
					return true
				}
			}
		}
	}
	return false
}

// activeAttrsIn reports whether t has an attribute starting in [from, end)
// that runs script: an event handler, a javascript: or vbscript: URL, a
// srcdoc, or a style with expression() or a script URL.
func activeAttrsIn(t tok, from, end int) bool {
	for _, a := range t.Attrs {
		if a.KeyStart < from || a.KeyStart >= end {
			continue
		}
		low := strings.ToLower(a.Val)
		switch {
		case strings.HasPrefix(a.Key, "on"), a.Key == "srcdoc":
			return true
		case urlAttrs[a.Key] && hasScriptScheme(a.Val):
			return true
		case a.Key == "style" && (strings.Contains(low, "expression(") || strings.Contains(low, "javascript:")):
			return true
		}
	}
	return false
}
