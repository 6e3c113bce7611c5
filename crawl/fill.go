package crawl

import (
	"net/url"
	"regexp"
	"strings"
)

var (
	placeholderSeg = regexp.MustCompile(`^(?:\{\{?[^{}]+\}\}?|<[^<>]+>|:[A-Za-z_]\w*|\[[A-Za-z_]\w*\]|[A-Z][A-Z_]+|\.\.\.|…)$`)
	braces         = regexp.MustCompile(`\{\{?[^{}/?&=]*\}\}?|%7B%7B?[^/?&=]*?%7D%7D?|%7B[^/?&=]*?%7D`)
)

// HasPlaceholder reports whether a documented URL holds a template
// placeholder Fill would replace.
func HasPlaceholder(raw string) bool {
	_, changed, ok := fill(raw, "x")
	return ok && changed
}

// Fill replaces template placeholders in a documented URL (a path segment
// or query value written NAME, {name}, {{name}}, <name>, :name or [name],
// or braces inside a segment) with value. ok is false when the URL has
// placeholders and value is "" (it cannot be fetched meaningfully) or when
// raw does not parse.
func Fill(raw, value string) (string, bool) {
	out, changed, ok := fill(raw, value)
	if !ok || changed && value == "" {
		return raw, false
	}
	return out, true
}

func fill(raw, value string) (string, bool, bool) {
	u, err := url.Parse(raw)
	if err != nil {
		return raw, false, false
	}
	changed := false
	sub := func(s string) string {
		if placeholderSeg.MatchString(s) {
			changed = true
			return value
		}
		return s
	}
	segs := strings.Split(u.Path, "/")
	for i, s := range segs {
		segs[i] = sub(s)
	}
	p := strings.Join(segs, "/")
	if braces.MatchString(p) {
		changed = true
		p = braces.ReplaceAllString(p, value)
	}
	q := u.Query()
	for k, vs := range q {
		for i, v := range vs {
			vs[i] = sub(v)
		}
		q[k] = vs
	}
	if !changed {
		return raw, false, true
	}
	u.Path, u.RawPath = p, ""
	if u.RawQuery != "" {
		u.RawQuery = q.Encode()
	}
	return u.String(), true, true
}
