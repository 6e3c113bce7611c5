package crawl

import (
	"net/url"
	"slices"
	"strings"

	"golang.org/x/net/html"
)

// urlAttrs are the attributes that hold a URL, by element, and the link
// kind each yields.
var urlAttrs = map[string]struct {
	attrs []string
	kind  string
}{
	"a":      {[]string{"href"}, "a"},
	"area":   {[]string{"href"}, "area"},
	"link":   {[]string{"href"}, "link"},
	"script": {[]string{"src"}, "script"},
	"img":    {[]string{"src", "srcset"}, "img"},
	"source": {[]string{"src", "srcset"}, "media"},
	"video":  {[]string{"src", "poster"}, "media"},
	"audio":  {[]string{"src"}, "media"},
	"track":  {[]string{"src"}, "media"},
	"iframe": {[]string{"src"}, "iframe"},
	"frame":  {[]string{"src"}, "iframe"},
	"embed":  {[]string{"src"}, "embed"},
	"object": {[]string{"data"}, "embed"},
	"form":   {[]string{"action"}, "form"},
	"button": {[]string{"formaction"}, "form"},
	"input":  {[]string{"formaction", "src"}, "form"},
	"html":   {[]string{"manifest"}, "link"},
}

// html walks an HTML document's tokens. A base element changes the base of
// every reference after it; inline scripts, inline JSON and style text are
// read as JavaScript, JSON and CSS.
func (c *collector) html(body string) {
	z := html.NewTokenizer(strings.NewReader(body))
	z.SetMaxBuf(4 << 20)
	raw := "" // the raw-text element we are inside: script or style
	scriptType := ""
	baseSet := false
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			return
		case html.TextToken:
			switch raw {
			case "script":
				text := string(z.Text())
				switch {
				case strings.Contains(scriptType, "json"):
					c.json(text)
				case scriptType == "" || strings.Contains(scriptType, "javascript") || scriptType == "module":
					c.js(text, "js")
				}
			case "style":
				c.css(string(z.Text()))
			}
		case html.EndTagToken:
			raw = ""
		case html.StartTagToken, html.SelfClosingTagToken:
			name, hasAttr := z.TagName()
			tag := string(name)
			attrs := map[string]string{}
			for hasAttr {
				var k, v []byte
				k, v, hasAttr = z.TagAttr()
				if _, dup := attrs[string(k)]; !dup {
					attrs[string(k)] = string(v)
				}
			}
			if tt == html.StartTagToken && (tag == "script" || tag == "style") {
				raw = tag
				scriptType = strings.ToLower(strings.TrimSpace(attrs["type"]))
			}
			c.element(tag, attrs, &baseSet)
		}
	}
}

// element collects the references of one start tag.
func (c *collector) element(tag string, attrs map[string]string, baseSet *bool) {
	switch tag {
	case "base":
		// Only the first base element counts (HTML §4.2.3).
		if href, ok := attrs["href"]; ok && !*baseSet {
			*baseSet = true
			if r, err := url.Parse(strings.TrimSpace(href)); err == nil {
				nb := c.base.ResolveReference(r)
				if nb.Scheme == "http" || nb.Scheme == "https" {
					c.base = nb
					c.tried = nil // the same reference now means another URL
				}
			}
		}
		return
	case "meta":
		if strings.EqualFold(strings.TrimSpace(attrs["http-equiv"]), "refresh") {
			if u := refreshURL(attrs["content"]); u != "" {
				c.add(u, "meta-refresh", "")
			}
		}
		return
	}
	if style, ok := attrs["style"]; ok && strings.Contains(style, "url(") {
		c.css(style)
	}
	spec, ok := urlAttrs[tag]
	if !ok {
		return
	}
	method := ""
	if tag == "form" {
		method = strings.ToUpper(strings.TrimSpace(attrs["method"]))
		if method != "POST" && method != "DIALOG" {
			method = "GET"
		}
		if _, has := attrs["action"]; !has {
			// A form without an action submits to its own page.
			c.add(c.base.String(), "form", method)
			return
		}
	}
	if tag == "button" || tag == "input" {
		method = strings.ToUpper(strings.TrimSpace(attrs["formmethod"]))
		if method != "POST" {
			method = "GET"
		}
	}
	kind := spec.kind
	if tag == "link" && slices.Contains(strings.Fields(strings.ToLower(attrs["rel"])), "stylesheet") {
		kind = "stylesheet"
	}
	for _, a := range spec.attrs {
		v, ok := attrs[a]
		if !ok {
			continue
		}
		if a == "srcset" {
			for _, cand := range strings.Split(v, ",") {
				if f := strings.Fields(cand); len(f) > 0 {
					c.add(f[0], kind, "")
				}
			}
			continue
		}
		if tag == "input" && a == "src" {
			c.add(v, "img", "")
			continue
		}
		c.add(v, kind, method)
	}
}

// refreshURL reads the URL of a meta refresh: "5; url=/next".
func refreshURL(content string) string {
	_, after, ok := strings.Cut(content, ";")
	if !ok {
		return ""
	}
	after = strings.TrimSpace(after)
	if len(after) >= 4 && strings.EqualFold(after[:3], "url") {
		after = strings.TrimSpace(after[3:])
		if rest, ok := strings.CutPrefix(after, "="); ok {
			return strings.Trim(strings.TrimSpace(rest), `"'`)
		}
	}
	return ""
}

// blockTags end a line when they close (or, for br and hr, when they open).
var blockTags = map[string]bool{
	"p": true, "div": true, "li": true, "tr": true, "h1": true, "h2": true, "h3": true, "h4": true, "h5": true, "h6": true,
	"pre": true, "br": true, "hr": true, "table": true, "ul": true, "ol": true, "section": true, "article": true,
	"header": true, "footer": true, "dd": true, "dt": true, "blockquote": true, "main": true, "nav": true, "thead": true, "tbody": true,
}

// Text renders an HTML document as the plain text a reader sees, for
// reading docs written as HTML: one line per block element, table rows as
// "| a | b |", headings prefixed with #, inline code in backquotes as
// markdown writes it, pre text kept as is;
// scripts, styles and comments dropped, entities decoded.
func Text(body string) string {
	z := html.NewTokenizer(strings.NewReader(body))
	z.SetMaxBuf(4 << 20)
	var b strings.Builder
	skip := 0 // inside script or style
	pre := 0  // inside pre: code keeps no backquotes
	newline := func() {
		s := b.String()
		if s != "" && !strings.HasSuffix(s, "\n") {
			b.WriteByte('\n')
		}
	}
	for {
		switch z.Next() {
		case html.ErrorToken:
			return tidyLines(b.String())
		case html.TextToken:
			if skip == 0 {
				b.Write(z.Text())
			}
		case html.StartTagToken, html.SelfClosingTagToken:
			name, _ := z.TagName()
			tag := string(name)
			switch {
			case tag == "script" || tag == "style":
				skip++
			case tag == "code" && pre == 0:
				b.WriteString("`")
			case tag == "tr":
				newline()
				b.WriteString("|")
			case tag == "td" || tag == "th":
				b.WriteString(" ")
			case len(tag) == 2 && tag[0] == 'h' && tag[1] >= '1' && tag[1] <= '6':
				newline()
				b.WriteString(strings.Repeat("#", int(tag[1]-'0')) + " ")
			case tag == "br" || tag == "hr" || tag == "li" || tag == "pre" || tag == "p":
				if tag == "pre" {
					pre++
				}
				newline()
				if tag == "li" {
					b.WriteString("- ")
				}
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			tag := string(name)
			switch {
			case tag == "script" || tag == "style":
				if skip > 0 {
					skip--
				}
			case tag == "td" || tag == "th":
				b.WriteString(" |")
			case tag == "code" && pre == 0:
				b.WriteString("`")
			case blockTags[tag]:
				if tag == "pre" && pre > 0 {
					pre--
				}
				newline()
			}
		}
	}
}

// tidyLines trims trailing space from each line and drops blank lines.
func tidyLines(s string) string {
	var b strings.Builder
	for line := range strings.Lines(s) {
		line = strings.TrimRight(line, " \t\r\n")
		if strings.TrimSpace(line) != "" {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	return b.String()
}
