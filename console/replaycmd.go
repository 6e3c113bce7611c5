package console

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/qafleet/fleetd/fleet"
)

// replayCommand is the whole shell command that replays r by hand,
// `fleetd tool call TOOL --args '{...}'`, ready to paste into a POSIX shell:
// the arguments compacted to one line (when they are JSON) and single-quoted,
// a quote inside them written as '\”. The page escapes it for HTML.
func replayCommand(r *fleet.Repro) string {
	if r == nil {
		return ""
	}
	cmd := "fleetd tool call " + shellWord(r.Tool)
	args := bytes.TrimSpace(r.Args)
	if len(args) == 0 {
		return cmd
	}
	var compact bytes.Buffer
	if json.Compact(&compact, args) == nil {
		args = compact.Bytes()
	}
	return cmd + " --args " + shellQuote(string(args))
}

// shellWord leaves a plain word (a tool name) as it is and quotes anything
// else, so a strange name cannot run as shell syntax.
func shellWord(s string) string {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.') {
			return shellQuote(s)
		}
	}
	if s == "" {
		return "''"
	}
	return s
}

// shellQuote single-quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
