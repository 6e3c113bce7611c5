package console

import (
	"fmt"
	"io"
	"strings"

	"golang.org/x/net/html"
)

// unsafeMarkup parses page as a browser would and returns what in it could
// run code: a script element other than the console's own file, an inline
// event handler, a style attribute, a javascript: URL. It also returns the
// page's text, so callers can check a payload arrived as text.
func unsafeMarkup(page string) (problems []string, text string) {
	z := html.NewTokenizer(strings.NewReader(page))
	var tb strings.Builder
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			if z.Err() != io.EOF {
				problems = append(problems, "tokenizer: "+z.Err().Error())
			}
			return problems, tb.String()
		case html.TextToken:
			tb.Write(z.Text())
		case html.StartTagToken, html.SelfClosingTagToken:
			tok := z.Token()
			for _, a := range tok.Attr {
				key := strings.ToLower(a.Key)
				val := strings.ToLower(strings.TrimSpace(a.Val))
				switch {
				case strings.HasPrefix(key, "on"):
					problems = append(problems, fmt.Sprintf("<%s %s=%q>: inline event handler", tok.Data, a.Key, a.Val))
				case key == "style":
					problems = append(problems, fmt.Sprintf("<%s style=%q>: inline style", tok.Data, a.Val))
				case (key == "href" || key == "src" || key == "action" || key == "formaction") && strings.HasPrefix(val, "javascript:"):
					problems = append(problems, fmt.Sprintf("<%s %s=%q>: script URL", tok.Data, a.Key, a.Val))
				}
			}
			if tok.Data == "script" {
				src := ""
				for _, a := range tok.Attr {
					if a.Key == "src" {
						src = a.Val
					}
				}
				if src != "/static/console.js" {
					problems = append(problems, fmt.Sprintf("<script src=%q>", src))
				}
			}
			if tok.Data == "img" || tok.Data == "iframe" || tok.Data == "object" || tok.Data == "embed" {
				problems = append(problems, "<"+tok.Data+"> element")
			}
		}
	}
}
