// Package clip shortens text for messages, summaries and tables: one
// helper where fleetd had a dozen (issue 34). It imports nothing of
// fleetd's, so every layer may use it.
package clip

import "unicode/utf8"

// Ellipsis marks text that was cut.
const Ellipsis = "…"

// Text returns s when it is at most n bytes long; otherwise its first n
// bytes or fewer, cut at a rune boundary so valid UTF-8 stays valid,
// followed by Ellipsis. The result is at most n+len(Ellipsis) bytes. A
// negative n is taken as 0.
func Text(s string, n int) string {
	n = max(n, 0)
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + Ellipsis
}

// Within returns s cut to at most n bytes with the ellipsis included, for
// a fixed budget (a finding's summary, a column). n shorter than the
// ellipsis yields "" for any s longer than n.
func Within(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n < len(Ellipsis) {
		return ""
	}
	return Text(s, n-len(Ellipsis))
}
