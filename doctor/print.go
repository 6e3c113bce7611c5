package doctor

import (
	"fmt"
	"io"
)

// Print writes one line per check, its detail through sanitize, and
// returns how many failed.
func Print(w io.Writer, sanitize func(string) string, cs []Check) (failed int) {
	width := 0
	for _, c := range cs {
		width = max(width, len(c.Name))
	}
	for _, c := range cs {
		mark := "✓"
		switch {
		case c.NotChecked:
			mark = "–"
		case !c.OK && c.Warn:
			mark = "!"
		case !c.OK:
			mark = "✗"
			failed++
		}
		line := fmt.Sprintf("%s %-*s  %s", mark, width, c.Name, sanitize(c.Detail))
		if !c.OK && c.Fix != "" {
			line += " — fix: " + c.Fix
		}
		fmt.Fprintln(w, line)
	}
	return failed
}

// FirstFatalUp is FirstFatal for the daemon, which starts degraded while
// its node is down: a check that failed only because the node did not answer
// is not fatal there. down lists those checks.
func FirstFatalUp(cs []Check) (bad Check, fatal bool, down []Check) {
	for _, c := range cs {
		switch {
		case c.OK || !c.Fatal:
		case c.NodeDown:
			down = append(down, c)
		case !fatal:
			bad, fatal = c, true
		}
	}
	return bad, fatal, down
}

// FirstFatal returns the first failed fatal check.
func FirstFatal(cs []Check) (Check, bool) {
	for _, c := range cs {
		if c.Fatal && !c.OK {
			return c, true
		}
	}
	return Check{}, false
}
