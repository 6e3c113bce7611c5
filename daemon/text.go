package daemon

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Dash is s, or "-" when s is empty.
func Dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Sanitize makes untrusted log text safe for a terminal: control characters
// (escape sequences included) become U+FFFD.
func Sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return '\uFFFD'
		}
		return r
	}, s)
}

// Clip shortens s to at most n runes.
func Clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// FindingLine renders qa_report arguments for narration: severity, surface
// and the first line of the summary.
func FindingLine(args []byte) string {
	var a struct{ Severity, Surface, Summary string }
	if json.Unmarshal(args, &a) != nil {
		return "(unreadable report arguments)"
	}
	summary := a.Summary
	if i := strings.IndexByte(summary, '\n'); i >= 0 {
		summary = summary[:i]
	}
	return fmt.Sprintf("%s %s: %s", a.Severity, a.Surface, Clip(summary, 140))
}
