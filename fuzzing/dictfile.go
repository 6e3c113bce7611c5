package fuzzing

import (
	"fmt"
	"strconv"
	"strings"
)

// maxDictToken is the longest dictionary entry written: libFuzzer refuses
// a dictionary with an entry over 64 bytes (AFL++ takes 128).
const maxDictToken = 64

// FormatDict writes tokens as an AFL/libFuzzer dictionary: one
// `kw_N="token"` line each, bytes outside printable ASCII and `"` and `\`
// as \xNN. Empty tokens, tokens over maxDictToken bytes and repeats are
// skipped; skipped counts the empty and long ones.
func FormatDict(tokens []string) (text []byte, skipped int) {
	var b strings.Builder
	seen := map[string]bool{}
	n := 0
	for _, t := range tokens {
		if len(t) == 0 || len(t) > maxDictToken {
			skipped++
			continue
		}
		if seen[t] {
			continue
		}
		seen[t] = true
		fmt.Fprintf(&b, "kw_%d=\"", n)
		n++
		for i := 0; i < len(t); i++ {
			c := t[i]
			if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
				fmt.Fprintf(&b, "\\x%02x", c)
			} else {
				b.WriteByte(c)
			}
		}
		b.WriteString("\"\n")
	}
	return []byte(b.String()), skipped
}

// DictError is one dictionary line ParseDict skipped.
type DictError struct {
	Line int
	Err  string
}

func (e DictError) Error() string { return fmt.Sprintf("dictionary line %d: %s", e.Line, e.Err) }

// ParseDict reads a dictionary in AFL/libFuzzer syntax: blank lines and
// `#` comments, and entries `"value"` or `name="value"` (AFL++ also
// `name@level="value"`), the value with \\, \" and \xNN escapes and
// printable ASCII otherwise. A line that is not valid syntax, or whose
// value is empty or over maxDictToken bytes, is skipped and named in bad;
// libFuzzer would refuse the whole file for it. It never panics (fuzzed).
func ParseDict(text []byte) (tokens []string, bad []DictError) {
	for i, line := range strings.Split(string(text), "\n") {
		l := strings.TrimSpace(strings.TrimSuffix(line, "\r"))
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		tok, err := parseDictLine(l)
		if err != "" {
			if len(bad) < 100 {
				bad = append(bad, DictError{Line: i + 1, Err: err})
			}
			continue
		}
		tokens = append(tokens, tok)
	}
	return tokens, bad
}

func parseDictLine(l string) (string, string) {
	q := strings.IndexByte(l, '"')
	if q < 0 {
		return "", "no quoted value"
	}
	if name := l[:q]; name != "" {
		if !strings.HasSuffix(name, "=") {
			return "", "want name=\"value\""
		}
		name = strings.TrimSuffix(name, "=")
		if at := strings.IndexByte(name, '@'); at >= 0 {
			if _, err := strconv.Atoi(name[at+1:]); err != nil {
				return "", "bad @level"
			}
			name = name[:at]
		}
		for _, r := range name {
			if !(r == '_' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9') {
				return "", "bad entry name"
			}
		}
	}
	v := l[q:]
	if len(v) < 2 || v[len(v)-1] != '"' {
		return "", "value not closed by \""
	}
	v = v[1 : len(v)-1]
	var out []byte
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '\\':
			if i+1 >= len(v) {
				return "", "dangling \\"
			}
			switch v[i+1] {
			case '\\', '"':
				out = append(out, v[i+1])
				i++
			case 'x':
				if i+4 > len(v) {
					return "", "short \\x escape"
				}
				n, err := strconv.ParseUint(v[i+2:i+4], 16, 8)
				if err != nil {
					return "", "bad \\x escape"
				}
				out = append(out, byte(n))
				i += 3
			default:
				return "", "unknown escape \\" + string(v[i+1])
			}
		case c == '"':
			return "", "unescaped \" inside the value"
		case c < 0x20 || c >= 0x7f:
			return "", "a byte outside printable ASCII (write it as \\xNN)"
		default:
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return "", "empty value"
	}
	if len(out) > maxDictToken {
		return "", fmt.Sprintf("value longer than %d bytes", maxDictToken)
	}
	return string(out), ""
}
