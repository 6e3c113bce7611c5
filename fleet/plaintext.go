package fleet

import (
	"strings"
	"unicode"
)

// PlainText makes untrusted text safe for a terminal line: invalid UTF-8
// becomes U+FFFD, control characters (escape sequences included), format
// characters such as bidirectional overrides and zero-width joiners are
// dropped, whitespace runs become one space, and the result is cut to max
// runes (limit 0: no limit) with "…".
func PlainText(s string, limit int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	b.Grow(len(s))
	n, space := 0, false
	for _, r := range s {
		switch {
		case unicode.IsSpace(r):
			space = b.Len() > 0
			continue
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r):
			continue
		}
		if limit > 0 && n >= limit {
			b.WriteString("…")
			break
		}
		if space {
			b.WriteByte(' ')
			n++
			space = false
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}
