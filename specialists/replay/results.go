package replay

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"github.com/qafleet/fleetd/clip"
	"github.com/qafleet/fleetd/fleet"
)

// Result fields come from live tools as Go values (int, int64, bool, maps)
// and from run records as JSON values (float64, map[string]any); these
// accessors read both.

// Str returns r[k] as a string, "" when absent or not a string.
func Str(r fleet.Result, k string) string {
	s, _ := r[k].(string)
	return s
}

// Strs returns r[k] as strings: a []string from a live tool, the strings
// of a []any from a run record; nil otherwise.
func Strs(r fleet.Result, k string) []string {
	switch v := r[k].(type) {
	case []string:
		return v
	case []any:
		var out []string
		for _, x := range v {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// Num returns r[k] as a number.
func Num(r fleet.Result, k string) (float64, bool) { return toFloat(r[k]) }

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case int8:
		return float64(x), true
	case int16:
		return float64(x), true
	case int32:
		return float64(x), true
	case int64:
		return float64(x), true
	case uint:
		return float64(x), true
	case uint8:
		return float64(x), true
	case uint16:
		return float64(x), true
	case uint32:
		return float64(x), true
	case uint64:
		return float64(x), true
	case float32:
		return float64(x), true
	case float64:
		return x, !math.IsNaN(x)
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case string:
		f, err := strconv.ParseFloat(x, 64)
		return f, err == nil
	}
	return 0, false
}

// Int returns r[k] as an int, 0 when absent.
func Int(r fleet.Result, k string) int {
	f, _ := Num(r, k)
	return int(f)
}

// Flag returns r[k] as a bool.
func Flag(r fleet.Result, k string) bool {
	b, _ := r[k].(bool)
	return b
}

// Status is an HTTP result's status code, 0 when the tool got no answer.
func Status(r fleet.Result) int { return Int(r, "status") }

// Latency is a result's latency_ms.
func Latency(r fleet.Result) (float64, bool) { return Num(r, "latency_ms") }

// Headers returns a qa_fetch result's headers with lowercased names.
func Headers(r fleet.Result) map[string]string {
	out := map[string]string{}
	switch h := r["headers"].(type) {
	case map[string]any:
		for k, v := range h {
			out[strings.ToLower(k)] = fmt.Sprint(v)
		}
	case map[string]string:
		for k, v := range h {
			out[strings.ToLower(k)] = v
		}
	}
	return out
}

// Body returns a qa_fetch body or a qa_call reply.
func Body(r fleet.Result) string {
	if s, ok := r["body"].(string); ok {
		return s
	}
	return Str(r, "reply")
}

// Answered reports whether an HTTP tool got an answer (any status).
func Answered(r fleet.Result) bool { return r.IsOK() && Status(r) > 0 }

// NotAllowed reports whether a failed fetch was refused by the allowlist,
// a configuration matter rather than a platform fault.
func NotAllowed(r fleet.Result) bool {
	e := r.Err()
	return strings.Contains(e, "not on the fetch allowlist") || strings.Contains(e, "not configured")
}

// Clip shortens s to at most n bytes, the mark of the cut included, on a
// rune boundary (clip.Within; the checks call it by this name).
func Clip(s string, n int) string { return clip.Within(s, n) }

// OneLine makes untrusted or multi-line text safe for a finding summary:
// valid UTF-8, control characters and newlines turned into spaces, space
// runs collapsed (so no line can pose as a repro line).
func OneLine(s string) string {
	s = strings.ToValidUTF8(s, "?")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	return strings.Join(strings.Fields(s), " ")
}

// Quote renders untrusted text for a summary: one line, secrets redacted,
// at most n bytes, in backquotes.
func Quote(s string, n int) string {
	s = Clip(OneLine(redactSecrets(s)), n)
	s = strings.ReplaceAll(s, "`", "'")
	return "`" + s + "`"
}

// Millis renders a latency.
func Millis(f float64) string { return strconv.FormatFloat(math.Round(f), 'f', -1, 64) + " ms" }

// SignalText is ", signal NAME" for a result ended by a signal, else "":
// for summaries of compiles and fuzz runs.
func SignalText(r fleet.Result) string {
	if s := Str(r, "signal"); s != "" {
		return ", signal " + s
	}
	return ""
}

// First returns at most n elements of s.
func First[T any](s []T, n int) []T {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// SigNoise matches numbers and hex addresses, blanked where a message
// becomes a signature (crash lines, leak snippets).
var SigNoise = regexp.MustCompile(`0x[0-9a-fA-F]+|\d+`)
