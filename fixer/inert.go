package fixer

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/qafleet/fleetd/clip"
)

// Untrusted text (finding titles, repro arguments, tool output) goes into
// forge-rendered places in one of three inert forms:
//
//   - Inline, for plain-text fields (PR titles, commit messages): one line,
//     no control or bidi characters, and no character a forge turns live in
//     plain text: @ (mentions) and # (issue references, "fixes #1") become
//     their fullwidth forms, "://" is broken.
//   - Code, for an inline code span in Markdown.
//   - Block, for a fenced code block in Markdown.
//
// Inside Markdown code nothing is live (no mentions, HTML, links or issue
// references), so Code and Block only need a delimiter longer than any
// backtick run in the text, so the text cannot close the code early.

// Inline renders s as one line of inert plain text of at most limit bytes.
func Inline(s string, limit int) string {
	var b strings.Builder
	space := false
	for _, r := range s {
		switch {
		case r == utf8.RuneError, isInvisible(r):
			continue
		case unicode.IsSpace(r) || unicode.IsControl(r):
			space = b.Len() > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		switch r {
		case '@':
			b.WriteRune('＠')
		case '#':
			b.WriteRune('＃')
		case '<':
			b.WriteRune('‹')
		case '>':
			b.WriteRune('›')
		default:
			b.WriteRune(r)
		}
	}
	out := strings.ReplaceAll(b.String(), "://", ":⁄⁄")
	return clip.Text(out, limit)
}

// isInvisible reports bidi controls and other format characters that make
// text read differently from what it is.
func isInvisible(r rune) bool {
	return unicode.Is(unicode.Cf, r) || (r >= 0x2028 && r <= 0x2029)
}

// Code renders s as an inline Markdown code span: one line, at most limit
// bytes of text.
func Code(s string, limit int) string {
	s = clip.Text(strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' || r == '\t' {
			return ' '
		}
		if r == utf8.RuneError || unicode.IsControl(r) || isInvisible(r) {
			return -1
		}
		return r
	}, s), limit)
	fence := strings.Repeat("`", longestRun(s, '`')+1)
	if s == "" {
		return "` `"
	}
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return fence + s + fence
}

// Block renders s as a fenced Markdown code block (ending in a newline) of
// at most limit bytes of text, control and bidi characters dropped.
func Block(s string, limit int) string {
	s = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' {
			return r
		}
		if r == utf8.RuneError || unicode.IsControl(r) || isInvisible(r) {
			return -1
		}
		return r
	}, s)
	s = strings.TrimRight(clip.Text(s, limit), "\n")
	fence := strings.Repeat("`", max(3, longestRun(s, '`')+1))
	return fence + "text\n" + s + "\n" + fence + "\n"
}

// longestRun is the length of the longest run of c in s.
func longestRun(s string, c byte) int {
	best, n := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			n++
			best = max(best, n)
		} else {
			n = 0
		}
	}
	return best
}
