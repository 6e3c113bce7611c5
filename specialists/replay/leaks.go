package replay

import (
	"regexp"
	"slices"
	"strings"
)

// Leak is an internal detail shown to a user: an OS error, an absolute
// server path, a stack trace or a database error.
type Leak struct {
	Kind    string // "os error", "file path", "stack trace", "database error"
	Snippet string // the matching text, clipped and with secrets redacted
}

type leakRule struct {
	kind string
	re   *regexp.Regexp
	sub  int // submatch to quote (0: whole match)
}

var leakRules = []leakRule{
	{kind: "stack trace", re: regexp.MustCompile(`goroutine \d+ \[[^\]\n]{1,60}\]:|Traceback \(most recent call last\)|(?m:^panic: .{0,80})|thread '[^'\n]{0,40}' panicked at|Exception in thread "[^"\n]{0,40}"|\bat [\w.$<>]+ \([^()\n]{0,120}\.(?:js|mjs|cjs|ts|go|py|rs|java|kt|rb|php|cs):\d+(?::\d+)?\)|\bat [\w$.]+\([\w$]+\.(?:java|kt|scala):\d+\)|File "[^"\n]{1,120}", line \d+|[\w./-]+\.go:\d+(?: \+0x[0-9a-f]+)?|[\w./-]+\.rs:\d+:\d+|\.php on line \d+`)},
	{kind: "os error", re: regexp.MustCompile(`(?i)no such file or directory|permission denied|\(os error \d+\)|\bENOENT\b|\bEACCES\b|\bEPERM\b|is a directory|not a directory|too many open files|read-only file system`)},
	{kind: "file path", sub: 1, re: regexp.MustCompile(`(?:^|[\s"'(=:>\[,])((?:/(?:home|srv|var|usr|tmp|opt|etc|root|app|Users|private|mnt|proc|run|data|workspace)/)[^\s"'<>)\]]*|[A-Za-z]:\\(?:[^\s\\"'<>]+\\)+[^\s"'<>]*)`)},
	{kind: "database error", re: regexp.MustCompile(`SQLSTATE\[?\w*|syntax error at or near|\bORA-\d{5}\b|sqlite3?\.\w*Error|You have an error in your SQL syntax|pq: [a-z]`)},
}

// ScanLeaks returns the internal details in text, at most three of each
// kind, in rule order. It is meant for error responses and replies: a docs
// page that documents a path is not a leak, so callers choose what to scan.
//
// The result is shared with later calls on the same text: do not modify it.
func ScanLeaks(text string) []Leak { return leakMemo.Get(text, scanLeaks) }

var leakMemo Memo[[]Leak]

func scanLeaks(text string) []Leak {
	var out []Leak
	for _, r := range leakRules {
		n := 0
		for _, m := range r.re.FindAllStringSubmatchIndex(text, -1) {
			s, e := m[0], m[1]
			if r.sub > 0 {
				s, e = m[2*r.sub], m[2*r.sub+1]
			}
			snip := Clip(OneLine(redactSecrets(text[s:e])), 80)
			if snip == "" || slices.ContainsFunc(out, func(l Leak) bool { return l.Snippet == snip }) {
				continue
			}
			out = append(out, Leak{Kind: r.kind, Snippet: snip})
			if n++; n == 3 {
				break
			}
		}
	}
	return out
}

// LeakKinds lists the distinct kinds in leaks, in order.
func LeakKinds(leaks []Leak) []string {
	var kinds []string
	for _, l := range leaks {
		if !slices.Contains(kinds, l.Kind) {
			kinds = append(kinds, l.Kind)
		}
	}
	return kinds
}

// DescribeLeaks renders leaks for a summary: kinds and a few snippets.
func DescribeLeaks(leaks []Leak) string {
	var parts []string
	for i, l := range leaks {
		if i == 4 {
			break
		}
		parts = append(parts, l.Kind+" "+Quote(l.Snippet, 80))
	}
	return strings.Join(parts, ", ")
}

// HasStackTrace reports whether leaks hold a stack trace.
func HasStackTrace(leaks []Leak) bool {
	return slices.ContainsFunc(leaks, func(l Leak) bool { return l.Kind == "stack trace" })
}

// PasswdRE matches the root entry of /etc/passwd: a file no page or reply
// may show (path traversal, an agent reading files).
var PasswdRE = regexp.MustCompile(`(?m)^root:[^:\n]*:0:0:`)
