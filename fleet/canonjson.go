package fleet

import (
	"bytes"
	"fmt"
	"slices"
	"unicode"
	"unicode/utf8"
)

// maxJSONDepth matches encoding/json, so that this scanner and json.Valid
// agree on every input (Format validates with json.Compact, Parse with this).
const maxJSONDepth = 10000

// jsonScanner is a recursive-descent JSON scanner written for the Parse and
// Fingerprint hot path, where encoding/json's Unmarshal into any costs
// several microseconds per repro. It accepts exactly what encoding/json
// accepts (including invalid UTF-8 inside strings). With emit set it also
// writes the canonical form used by fingerprints to out: object members
// sorted, no insignificant whitespace, strings unescaped where possible,
// lowercased, with whitespace runs collapsed to one space.
type jsonScanner struct {
	src   []byte
	pos   int
	depth int
	emit  bool
	err   error
}

// memberSpan is one canonical "key":value member inside out.
type memberSpan struct{ start, end int }

// jsonValid reports why src is not valid JSON, or nil.
func jsonValid(src []byte) error {
	s := jsonScanner{src: src}
	s.document(nil)
	return s.err
}

// appendCanonicalJSON appends the canonical form of src to dst. ok is false,
// and dst returned unchanged, when src is not valid JSON.
func appendCanonicalJSON(dst, src []byte) (out []byte, ok bool) {
	s := jsonScanner{src: src, emit: true}
	out = s.document(dst)
	if s.err != nil {
		return dst, false
	}
	return out, true
}

func (s *jsonScanner) fail(msg string) {
	if s.err == nil {
		if s.pos >= len(s.src) {
			s.err = fmt.Errorf("unexpected end of JSON (%s)", msg)
		} else if c := s.src[s.pos]; c < utf8.RuneSelf {
			s.err = fmt.Errorf("invalid character %q at byte %d (%s)", rune(c), s.pos, msg)
		} else {
			s.err = fmt.Errorf("invalid byte %#x at byte %d (%s)", c, s.pos, msg)
		}
	}
}

func (s *jsonScanner) document(out []byte) []byte {
	s.skipSpace()
	out = s.value(out)
	if s.err != nil {
		return out
	}
	s.skipSpace()
	if s.pos != len(s.src) {
		s.fail("after top-level value")
	}
	return out
}

func (s *jsonScanner) skipSpace() {
	for s.pos < len(s.src) {
		switch s.src[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

func (s *jsonScanner) value(out []byte) []byte {
	if s.pos >= len(s.src) {
		s.fail("looking for a value")
		return out
	}
	switch c := s.src[s.pos]; {
	case c == '{':
		return s.object(out)
	case c == '[':
		return s.array(out)
	case c == '"':
		return s.str(out)
	case c == '-' || '0' <= c && c <= '9':
		return s.number(out)
	case c == 't':
		return s.literal(out, "true")
	case c == 'f':
		return s.literal(out, "false")
	case c == 'n':
		return s.literal(out, "null")
	}
	s.fail("looking for a value")
	return out
}

func (s *jsonScanner) literal(out []byte, word string) []byte {
	for i := 0; i < len(word); i++ {
		if s.pos >= len(s.src) || s.src[s.pos] != word[i] {
			s.fail("in literal " + word)
			return out
		}
		s.pos++
	}
	if s.emit {
		out = append(out, word...)
	}
	return out
}

func (s *jsonScanner) number(out []byte) []byte {
	start := s.pos
	if s.src[s.pos] == '-' {
		s.pos++
	}
	switch {
	case s.pos < len(s.src) && s.src[s.pos] == '0':
		s.pos++
	case s.pos < len(s.src) && '1' <= s.src[s.pos] && s.src[s.pos] <= '9':
		s.digits()
	default:
		s.fail("in number")
		return out
	}
	if s.pos < len(s.src) && s.src[s.pos] == '.' {
		s.pos++
		if !s.digits() {
			s.fail("after decimal point in number")
			return out
		}
	}
	if s.pos < len(s.src) && (s.src[s.pos] == 'e' || s.src[s.pos] == 'E') {
		s.pos++
		if s.pos < len(s.src) && (s.src[s.pos] == '+' || s.src[s.pos] == '-') {
			s.pos++
		}
		if !s.digits() {
			s.fail("in exponent of number")
			return out
		}
	}
	if s.emit {
		for _, c := range s.src[start:s.pos] {
			if c == 'E' {
				c = 'e'
			}
			out = append(out, c)
		}
	}
	return out
}

// digits consumes [0-9]* and reports whether it consumed any.
func (s *jsonScanner) digits() bool {
	start := s.pos
	for s.pos < len(s.src) && '0' <= s.src[s.pos] && s.src[s.pos] <= '9' {
		s.pos++
	}
	return s.pos > start
}

func (s *jsonScanner) enter() bool {
	s.depth++
	if s.depth > maxJSONDepth {
		s.fail("nesting too deep")
		return false
	}
	return true
}

// next consumes sep or end after an element, reporting whether the
// container goes on; on anything else it records an error.
func (s *jsonScanner) next(out []byte, end byte, what string) ([]byte, bool) {
	s.skipSpace()
	if s.pos < len(s.src) {
		switch s.src[s.pos] {
		case ',':
			s.pos++
			if s.emit {
				out = append(out, ',')
			}
			return out, true
		case end:
			s.pos++
			return out, false
		}
	}
	s.fail(what)
	return out, false
}

func (s *jsonScanner) array(out []byte) []byte {
	if !s.enter() {
		return out
	}
	s.pos++ // [
	if s.emit {
		out = append(out, '[')
	}
	s.skipSpace()
	if s.pos < len(s.src) && s.src[s.pos] == ']' {
		s.pos++
	} else {
		for more := true; more && s.err == nil; {
			s.skipSpace()
			if out = s.value(out); s.err != nil {
				return out
			}
			out, more = s.next(out, ']', "after array element")
		}
		if s.err != nil {
			return out
		}
	}
	if s.emit {
		out = append(out, ']')
	}
	s.depth--
	return out
}

func (s *jsonScanner) object(out []byte) []byte {
	if !s.enter() {
		return out
	}
	s.pos++ // {
	var spanBuf [8]memberSpan
	spans := spanBuf[:0]
	if s.emit {
		out = append(out, '{')
	}
	s.skipSpace()
	if s.pos < len(s.src) && s.src[s.pos] == '}' {
		s.pos++
	} else {
		for more := true; more; {
			s.skipSpace()
			if s.pos >= len(s.src) || s.src[s.pos] != '"' {
				s.fail("looking for an object key")
				return out
			}
			start := len(out)
			if out = s.str(out); s.err != nil {
				return out
			}
			s.skipSpace()
			if s.pos >= len(s.src) || s.src[s.pos] != ':' {
				s.fail("after object key")
				return out
			}
			s.pos++
			if s.emit {
				out = append(out, ':')
			}
			s.skipSpace()
			if out = s.value(out); s.err != nil {
				return out
			}
			if s.emit {
				spans = append(spans, memberSpan{start, len(out)})
			}
			if out, more = s.next(out, '}', "after object member"); s.err != nil {
				return out
			}
		}
	}
	if s.emit {
		out = sortMembers(out, spans)
		out = append(out, '}')
	}
	s.depth--
	return out
}

// sortMembers reorders the members in out by their canonical bytes. Sorting
// whole members (not only keys) gives a total order even when lowercasing
// made two keys equal, so the result never depends on the input order.
func sortMembers(out []byte, spans []memberSpan) []byte {
	cmp := func(a, b memberSpan) int { return bytes.Compare(out[a.start:a.end], out[b.start:b.end]) }
	if len(spans) < 2 || slices.IsSortedFunc(spans, cmp) {
		return out
	}
	base := spans[0].start
	region := slices.Clone(out[base:])
	slices.SortFunc(spans, cmp)
	out = out[:base]
	for i, sp := range spans {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, region[sp.start-base:sp.end-base]...)
	}
	return out
}

// Byte classes inside JSON strings, for the fast paths of str.
const (
	strSkip = 1 << iota // needs no attention when validating: >= 0x20, not '"' or '\\'
	strCopy             // is its own canonical form: printable ASCII but space, '"', '\\', A-Z
)

var strClass = func() (t [256]uint8) {
	for c := 0x20; c < 0x100; c++ {
		if c != '"' && c != '\\' {
			t[c] = strSkip
			if c > ' ' && c < 0x7F && !('A' <= c && c <= 'Z') {
				t[c] |= strCopy
			}
		}
	}
	return t
}()

// str scans a string. In emit mode it writes the canonical form: escapes
// decoded, runes lowercased, whitespace runs collapsed to one space, and
// only '"', '\\' and control characters escaped.
func (s *jsonScanner) str(out []byte) []byte {
	s.pos++ // "
	if !s.emit {
		for {
			for s.pos < len(s.src) && strClass[s.src[s.pos]]&strSkip != 0 {
				s.pos++
			}
			switch {
			case s.pos >= len(s.src):
				s.fail("in string")
				return out
			case s.src[s.pos] == '"':
				s.pos++
				return out
			case s.src[s.pos] == '\\':
				if s.escape(); s.err != nil {
					return out
				}
			default:
				s.fail("control character in string")
				return out
			}
		}
	}
	out = append(out, '"')
	inSpace := false
	for {
		if run := s.pos; run < len(s.src) && strClass[s.src[run]]&strCopy != 0 {
			for s.pos++; s.pos < len(s.src) && strClass[s.src[s.pos]]&strCopy != 0; s.pos++ {
			}
			out = append(out, s.src[run:s.pos]...)
			inSpace = false
		}
		if s.pos >= len(s.src) {
			s.fail("in string")
			return out
		}
		c := s.src[s.pos]
		var r rune
		switch {
		case c == '"':
			s.pos++
			return append(out, '"')
		case c < 0x20:
			s.fail("control character in string")
			return out
		case c == '\\':
			if r = s.escape(); s.err != nil {
				return out
			}
		case c < utf8.RuneSelf:
			s.pos++
			r = rune(c)
		default:
			var size int
			r, size = utf8.DecodeRune(s.src[s.pos:])
			if r == utf8.RuneError && size == 1 {
				// Invalid UTF-8 is valid JSON to encoding/json; keep the byte.
				out = append(out, c)
				inSpace = false
				s.pos++
				continue
			}
			s.pos += size
		}
		if isSpaceRune(r) {
			if !inSpace {
				out = append(out, ' ')
			}
			inSpace = true
			continue
		}
		inSpace = false
		out = appendJSONRune(out, lowerRune(r))
	}
}

// escape decodes the escape sequence at s.pos, which is a backslash.
func (s *jsonScanner) escape() rune {
	s.pos++
	if s.pos >= len(s.src) {
		s.fail("in string escape")
		return 0
	}
	c := s.src[s.pos]
	s.pos++
	switch c {
	case '"', '\\', '/':
		return rune(c)
	case 'b':
		return '\b'
	case 'f':
		return '\f'
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	case 'u':
		r := s.hex4()
		if s.err != nil {
			return 0
		}
		if 0xD800 <= r && r < 0xDC00 {
			// A high surrogate combines with a following low one; alone it
			// decodes to U+FFFD, as in encoding/json.
			if s.pos+6 <= len(s.src) && s.src[s.pos] == '\\' && s.src[s.pos+1] == 'u' {
				save := s.pos
				s.pos += 2
				lo := s.hex4()
				if s.err != nil {
					return 0
				}
				if 0xDC00 <= lo && lo < 0xE000 {
					return (r-0xD800)<<10 | (lo - 0xDC00) + 0x10000
				}
				s.pos = save
			}
			return utf8.RuneError
		}
		if 0xDC00 <= r && r < 0xE000 {
			return utf8.RuneError
		}
		return r
	}
	s.pos--
	s.fail("in string escape")
	return 0
}

func (s *jsonScanner) hex4() rune {
	var r rune
	for range 4 {
		if s.pos >= len(s.src) {
			s.fail("in \\u escape")
			return 0
		}
		c := s.src[s.pos]
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			s.fail("in \\u escape")
			return 0
		}
		r = r<<4 | rune(c)
		s.pos++
	}
	return r
}

func appendJSONRune(dst []byte, r rune) []byte {
	switch {
	case r == '"' || r == '\\':
		return append(dst, '\\', byte(r))
	case r < 0x20:
		const hexDigits = "0123456789abcdef"
		return append(dst, '\\', 'u', '0', '0', hexDigits[r>>4], hexDigits[r&0xF])
	case r < utf8.RuneSelf:
		return append(dst, byte(r))
	}
	return utf8.AppendRune(dst, r)
}

// lowerRune is unicode.ToLower with an ASCII fast path.
func lowerRune(r rune) rune {
	if r < utf8.RuneSelf {
		if 'A' <= r && r <= 'Z' {
			r += 'a' - 'A'
		}
		return r
	}
	return unicode.ToLower(r)
}

// isSpaceRune is unicode.IsSpace with an ASCII fast path.
func isSpaceRune(r rune) bool {
	if r < utf8.RuneSelf {
		return r == ' ' || '\t' <= r && r <= '\r'
	}
	return unicode.IsSpace(r)
}
