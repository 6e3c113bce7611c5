package specialists

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/qafleet/fleetd/fleet"
)

// Result fields come from live tools as Go values (int, int64, bool, maps)
// and from run records as JSON values (float64, map[string]any); these
// accessors read both.

// str returns r[k] as a string, "" when absent or not a string.
func str(r fleet.Result, k string) string {
	s, _ := r[k].(string)
	return s
}

// num returns r[k] as a number.
func num(r fleet.Result, k string) (float64, bool) { return toFloat(r[k]) }

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

// integer returns r[k] as an int, 0 when absent.
func integer(r fleet.Result, k string) int {
	f, _ := num(r, k)
	return int(f)
}

// flag returns r[k] as a bool.
func flag(r fleet.Result, k string) bool {
	b, _ := r[k].(bool)
	return b
}

// status is an HTTP result's status code, 0 when the tool got no answer.
func status(r fleet.Result) int { return integer(r, "status") }

// latency is a result's latency_ms.
func latency(r fleet.Result) (float64, bool) { return num(r, "latency_ms") }

// headers returns a qa_fetch result's headers with lowercased names.
func headers(r fleet.Result) map[string]string {
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

// body returns a qa_fetch body or a qa_call reply.
func body(r fleet.Result) string {
	if s, ok := r["body"].(string); ok {
		return s
	}
	return str(r, "reply")
}

// answered reports whether an HTTP tool got an answer (any status).
func answered(r fleet.Result) bool { return r.IsOK() && status(r) > 0 }

// notAllowed reports whether a failed fetch was refused by the allowlist,
// a configuration matter rather than a platform fault.
func notAllowed(r fleet.Result) bool {
	e := r.Err()
	return strings.Contains(e, "not on the fetch allowlist") || strings.Contains(e, "not configured")
}

// clip shortens s to at most n bytes on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n <= len("…") {
		return ""
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// oneLine makes untrusted or multi-line text safe for a finding summary:
// valid UTF-8, control characters and newlines turned into spaces, space
// runs collapsed (so no line can pose as a repro line).
func oneLine(s string) string {
	s = strings.ToValidUTF8(s, "?")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	return strings.Join(strings.Fields(s), " ")
}

// quote renders untrusted text for a summary: one line, secrets redacted,
// at most n bytes, in backquotes.
func quote(s string, n int) string {
	s = clip(oneLine(redactSecrets(s)), n)
	s = strings.ReplaceAll(s, "`", "'")
	return "`" + s + "`"
}

// ms renders a latency.
func ms(f float64) string { return strconv.FormatFloat(math.Round(f), 'f', -1, 64) + " ms" }
