package fleet

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The qa/v1 envelope (DESIGN.md §6), exactly:
//
//	qa/v1 source=qa-fuzz sev=high surface=compiler fp=5c1e0a9d3b7f2a10 run=r-1
//	compile panic on `enum E{}` with no variants, expected a clean error.
//	repro: qa_compile {"source":"enum E{}"}
//
// Header (the first line): "qa/v1", then key=value fields separated by runs
// of spaces, tabs or carriage returns. Keys are tokens
// ([a-z0-9][a-z0-9._-]{0,31}), each at most once. A value is everything after
// the first '=' of its field: one or more printable ASCII bytes (0x21-0x7E),
// so it may itself contain '=' (ref=https://x/?a=b) but never whitespace or
// non-ASCII. source, sev and surface are required; source and surface are
// tokens and, like sev, are read case-insensitively and stored lowercase.
// kind, fp, run and ref are optional values kept verbatim; any other key is
// kept in Finding.Extra.
//
// Repro line: the last line that, after leading whitespace, starts with
// "repro: ". It holds a tool name ([A-Za-z0-9_.-]{1,64}), whitespace, and a
// JSON object that runs to the end of the line.
//
// Summary: every other line after the header, trimmed. It may be empty, so
// that header-only records (a resolution with ref=) need no filler text.

// MaxEnvelopeBytes is the most bytes a feedback entry may hold: the
// FeedbackLog contract refuses longer text.
const MaxEnvelopeBytes = 2048

// ErrTooLong is wrapped by Format when the header and repro alone exceed
// MaxEnvelopeBytes (the summary is shortened instead when it is the summary
// that does not fit), and by Parse for text longer than MaxEnvelopeBytes.
var ErrTooLong = errors.New("too long")

const (
	envelopeMagic = "qa/v1"
	reproPrefix   = "repro: "
	ellipsis      = "…" // marks a summary that Format shortened
	maxToolLen    = 64
)

// Header keys with a field of their own in Finding.
const (
	keySource  = "source"
	keySev     = "sev"
	keySurface = "surface"
	keyKind    = "kind"
	keyFP      = "fp"
	keyRun     = "run"
	keyRef     = "ref"
)

const tokenGrammar = "[a-z0-9][a-z0-9._-]{0,31}"

// Format encodes f as qa/v1 text of at most MaxEnvelopeBytes bytes of valid
// UTF-8. It writes the header fields in a fixed order (source, sev, surface,
// kind, fp, run, ref, then Extra as given), the trimmed summary, and the repro
// with its args compacted. A summary that does not fit is cut on a rune
// boundary and ends in "…"; the header and repro are never cut, and when they
// alone do not fit Format returns an error wrapping ErrTooLong.
//
// For a FreeForm finding Format returns the trimmed Summary alone (shortened
// the same way), which must be non-empty, valid UTF-8 and must not start like
// an envelope, or Parse would not read it back as free-form.
//
// Format returns an error naming the field for anything Parse would not read
// back as the same Finding: a missing source, sev or surface, sev "unknown",
// a value that is not printable ASCII, an Extra key that is invalid, duplicated
// or one of the standard keys, a repro whose tool is invalid or whose args are
// not a JSON object, a summary that is not valid UTF-8, and, when Repro is
// nil, a summary line that Parse would take for the repro line.
func Format(f Finding) (string, error) {
	if f.FreeForm {
		return formatFreeForm(f.Summary)
	}
	buf, err := appendHeader(make([]byte, 0, 256), f)
	if err != nil {
		return "", fmt.Errorf("qa/v1 format: %w", err)
	}
	var repro []byte
	if f.Repro != nil {
		if repro, err = formatRepro(*f.Repro); err != nil {
			return "", fmt.Errorf("qa/v1 format: %w", err)
		}
	}
	summary := strings.TrimSpace(f.Summary)
	if !utf8.ValidString(summary) {
		return "", errors.New("qa/v1 format: summary is not valid UTF-8")
	}
	if f.Repro == nil {
		if _, _, ok := findReproLine(summary); ok {
			return "", fmt.Errorf("qa/v1 format: summary has a line starting with %q but Repro is nil", reproPrefix)
		}
	}
	fixed := len(buf)
	if repro != nil {
		fixed += 1 + len(repro)
	}
	if fixed > MaxEnvelopeBytes {
		return "", fmt.Errorf("qa/v1 format: header and repro need %d bytes, max %d: %w", fixed, MaxEnvelopeBytes, ErrTooLong)
	}
	if summary != "" {
		room := MaxEnvelopeBytes - fixed - 1
		var ok bool
		if summary, ok = shorten(summary, room); !ok {
			return "", fmt.Errorf("qa/v1 format: header and repro leave %d bytes, no room for a shortened summary: %w", room, ErrTooLong)
		}
		buf = append(buf, '\n')
		buf = append(buf, summary...)
	}
	if repro != nil {
		buf = append(buf, '\n')
		buf = append(buf, repro...)
	}
	return string(buf), nil
}

func formatFreeForm(text string) (string, error) {
	t := strings.TrimSpace(text)
	switch {
	case t == "":
		return "", errors.New("qa/v1 format: free-form text is empty")
	case !utf8.ValidString(t):
		return "", errors.New("qa/v1 format: free-form text is not valid UTF-8")
	case isEnvelope(t):
		return "", fmt.Errorf("qa/v1 format: free-form text starts with %q, Parse would read it as an envelope", envelopeMagic)
	}
	t, _ = shorten(t, MaxEnvelopeBytes) // room is ample for the ellipsis
	return t, nil
}

// shorten returns s if it fits in room bytes, else the longest prefix that
// ends on a rune boundary and fits with the ellipsis, trailing space removed.
// ok is false when not even the ellipsis fits.
func shorten(s string, room int) (string, bool) {
	if len(s) <= room {
		return s, true
	}
	if room < len(ellipsis) {
		return "", false
	}
	n := room - len(ellipsis)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return strings.TrimRightFunc(s[:n], unicode.IsSpace) + ellipsis, true
}

// appendHeader validates f's header fields and appends the header line.
func appendHeader(b []byte, f Finding) ([]byte, error) {
	switch {
	case f.Source == "":
		return nil, errors.New("missing source")
	case !isToken(f.Source):
		return nil, fmt.Errorf("invalid source %q: want a token %s", f.Source, tokenGrammar)
	case f.Severity == "":
		return nil, errors.New("missing sev")
	case f.Severity == SeverityUnknown:
		return nil, fmt.Errorf("sev %q is only for free-form entries", f.Severity)
	case !f.Severity.Valid():
		return nil, fmt.Errorf("invalid sev %q: want one of critical, high, medium, low, info, meta", f.Severity)
	case f.Surface == "":
		return nil, errors.New("missing surface")
	case !f.Surface.Valid():
		return nil, fmt.Errorf("invalid surface %q: want a token %s", f.Surface, tokenGrammar)
	}
	b = append(b, envelopeMagic...)
	b = appendField(b, keySource, f.Source)
	b = appendField(b, keySev, string(f.Severity))
	b = appendField(b, keySurface, string(f.Surface))
	for _, opt := range [...]Field{{keyKind, string(f.Kind)}, {keyFP, f.Fingerprint}, {keyRun, f.Run}, {keyRef, f.Ref}} {
		if opt.Value == "" {
			continue
		}
		if err := checkValue(opt.Key, opt.Value); err != nil {
			return nil, err
		}
		b = appendField(b, opt.Key, opt.Value)
	}
	for i, x := range f.Extra {
		if err := checkKey(x.Key); err != nil {
			return nil, fmt.Errorf("extra: %w", err)
		}
		if isStandardKey(x.Key) {
			return nil, fmt.Errorf("extra key %q: set the Finding field instead", x.Key)
		}
		for _, y := range f.Extra[:i] {
			if y.Key == x.Key {
				return nil, fmt.Errorf("extra: duplicate key %q", x.Key)
			}
		}
		if err := checkValue(x.Key, x.Value); err != nil {
			return nil, fmt.Errorf("extra: %w", err)
		}
		b = appendField(b, x.Key, x.Value)
	}
	return b, nil
}

func appendField(b []byte, key, value string) []byte {
	b = append(b, ' ')
	b = append(b, key...)
	b = append(b, '=')
	return append(b, value...)
}

// formatRepro returns the repro line for r, args compacted.
func formatRepro(r Repro) ([]byte, error) {
	if !isTool(r.Tool) {
		return nil, fmt.Errorf("invalid repro tool %q: want [A-Za-z0-9_.-]{1,%d}", r.Tool, maxToolLen)
	}
	line := append(make([]byte, 0, len(reproPrefix)+len(r.Tool)+1+len(r.Args)), reproPrefix...)
	line = append(line, r.Tool...)
	line = append(line, ' ')
	buf := bytes.NewBuffer(line)
	if err := json.Compact(buf, r.Args); err != nil {
		return nil, fmt.Errorf("repro args for %q are not valid JSON: %w", r.Tool, err)
	}
	line = buf.Bytes()
	args := line[len(reproPrefix)+len(r.Tool)+1:]
	if args[0] != '{' {
		return nil, fmt.Errorf("repro args for %q are not a JSON object", r.Tool)
	}
	if !utf8.Valid(args) {
		return nil, fmt.Errorf("repro args for %q are not valid UTF-8", r.Tool)
	}
	return line, nil
}

// Parse reads one feedback entry. It never panics, whatever the input.
//
// Text that, once trimmed, does not start with "qa/v1" followed by a space,
// tab, CR, LF or the end is a free-form entry: FreeForm is true, Severity is
// SeverityUnknown, Summary is the trimmed text, and the error is nil.
//
// Text that starts like an envelope but breaks the format (a missing required
// key, a bad sev or surface, a duplicate key, a bad value, a bad repro line)
// yields the same free-form Finding plus an error that says what was wrong,
// e.g. `qa/v1 header: missing required key "sev"`, so that triage can show
// the entry and flag it. So does text that is not valid UTF-8 (kept as is:
// the contract stores any bytes) or longer than MaxEnvelopeBytes (the error
// wraps ErrTooLong; text can come from elsewhere than the contract, such as
// the outbox).
//
// Parse accepts all that Format writes, and for every Finding f that Format
// accepts, Parse(Format(f)) equals f with the summary trimmed (and shortened
// when Format had to) and the repro args compacted. Strings in the result
// share text's memory unless case-folding or joining the summary needed a
// copy.
func Parse(text string) (Finding, error) {
	return parse(text, nil)
}

// ParseInto is Parse for loops over many entries (triage reads the whole
// log): a repro is parsed into *r, reusing its Args' memory, instead of a new
// allocation, and the Finding's Repro points to r. It is only valid until r
// is used again; copy what must outlive that.
func ParseInto(text string, r *Repro) (Finding, error) {
	return parse(text, r)
}

func parse(text string, r *Repro) (Finding, error) {
	if len(text) > MaxEnvelopeBytes {
		return freeForm(text), fmt.Errorf("feedback text is %d bytes, max %d: %w", len(text), MaxEnvelopeBytes, ErrTooLong)
	}
	if !utf8.ValidString(text) {
		return freeForm(text), errors.New("feedback text is not valid UTF-8")
	}
	t := strings.TrimSpace(text)
	if !isEnvelope(t) {
		return freeForm(t), nil
	}
	f, err := parseEnvelope(t, r)
	if err != nil {
		return freeForm(t), err
	}
	return f, nil
}

func freeForm(text string) Finding {
	return Finding{Severity: SeverityUnknown, Summary: strings.TrimSpace(text), FreeForm: true}
}

// isEnvelope reports whether t starts with the qa/v1 magic as a whole word.
func isEnvelope(t string) bool {
	if !strings.HasPrefix(t, envelopeMagic) {
		return false
	}
	if len(t) == len(envelopeMagic) {
		return true
	}
	switch t[len(envelopeMagic)] {
	case ' ', '\t', '\r', '\n':
		return true
	}
	return false
}

// parseEnvelope parses t, which isEnvelope accepted; dst, when not nil,
// receives the repro (see ParseInto).
func parseEnvelope(t string, dst *Repro) (Finding, error) {
	header, body, _ := strings.Cut(t, "\n")
	f := Finding{}
	var seen uint8 // bits of the standard keys seen so far
	for i := len(envelopeMagic); i < len(header); {
		if isSep(header[i]) {
			i++
			continue
		}
		// Scan the key as token bytes, then the value as printable ASCII,
		// which validates both in the same pass; any surprise goes to
		// fieldError, which only has to word the error.
		start := i
		for i < len(header) && isTokenByte(header[i]) {
			i++
		}
		key := header[start:i]
		if i == len(header) || header[i] != '=' || !tokenShape(key) {
			return Finding{}, fieldError(header[start:])
		}
		i++
		valueStart := i
		for i < len(header) && isValueByte(header[i]) {
			i++
		}
		value := header[valueStart:i]
		if value == "" || i < len(header) && !isSep(header[i]) {
			return Finding{}, fieldError(header[start:])
		}
		bit := standardKeyBit(key)
		if seen&bit != 0 {
			return Finding{}, fmt.Errorf("qa/v1 header: duplicate key %q", key)
		}
		seen |= bit
		switch bit {
		case bitSource:
			f.Source = strings.ToLower(value) // no copy when already lowercase
			if !isToken(f.Source) {
				return Finding{}, fmt.Errorf("qa/v1 header: invalid source %q: want a token %s", value, tokenGrammar)
			}
		case bitSev:
			sev, err := ParseSeverity(value)
			if err != nil {
				return Finding{}, fmt.Errorf("qa/v1 header: %w", err)
			}
			if sev == SeverityUnknown {
				return Finding{}, fmt.Errorf("qa/v1 header: sev %q is only for free-form entries", value)
			}
			f.Severity = sev
		case bitSurface:
			s, err := ParseSurface(value)
			if err != nil {
				return Finding{}, fmt.Errorf("qa/v1 header: %w", err)
			}
			f.Surface = s
		case bitKind:
			f.Kind = Kind(value)
		case bitFP:
			f.Fingerprint = value
		case bitRun:
			f.Run = value
		case bitRef:
			f.Ref = value
		default:
			for _, x := range f.Extra {
				if x.Key == key {
					return Finding{}, fmt.Errorf("qa/v1 header: duplicate key %q", key)
				}
			}
			f.Extra = append(f.Extra, Field{Key: key, Value: value})
		}
	}
	if seen&bitRequired != bitRequired {
		for _, k := range [...]string{keySource, keySev, keySurface} {
			if seen&standardKeyBit(k) == 0 {
				return Finding{}, fmt.Errorf("qa/v1 header: missing required key %q", k)
			}
		}
	}

	start, end, ok := findReproLine(body)
	if !ok {
		f.Summary = strings.TrimSpace(body)
		return f, nil
	}
	r, err := parseRepro(body[start:end], dst)
	if err != nil {
		return Finding{}, err
	}
	f.Repro = r
	before, after := body[:start], ""
	if end < len(body) {
		after = body[end+1:] // skip the repro line's newline
	}
	if strings.TrimSpace(after) == "" {
		f.Summary = strings.TrimSpace(before)
	} else {
		// Text after the repro line is rare (hand-written entries); keep it.
		f.Summary = strings.TrimSpace(before + after)
	}
	return f, nil
}

// findReproLine returns the bounds of the last line of s that starts with
// "repro: " after leading whitespace, end excluding the newline. Format
// uses it too, so that both agree on what is a repro line.
func findReproLine(s string) (start, end int, ok bool) {
	// Walk lines forward with IndexByte (vectorized), remembering the last
	// repro line; a backwards substring search would hash every byte.
	for i := 0; i <= len(s); {
		lineEnd := strings.IndexByte(s[i:], '\n')
		if lineEnd < 0 {
			lineEnd = len(s)
		} else {
			lineEnd += i
		}
		if isReproLine(s[i:lineEnd]) {
			start, end, ok = i, lineEnd, true
		}
		i = lineEnd + 1
	}
	return start, end, ok
}

func isReproLine(line string) bool {
	if line != "" && line[0] != 'r' {
		line = strings.TrimLeftFunc(line, unicode.IsSpace)
	}
	return strings.HasPrefix(line, reproPrefix)
}

// parseRepro parses a repro line (leading whitespace allowed) into dst, or
// a new Repro when dst is nil.
func parseRepro(line string, dst *Repro) (*Repro, error) {
	rest := strings.TrimLeftFunc(line, unicode.IsSpace)[len(reproPrefix):]
	rest = trimHeaderSpace(rest)
	tool, args := rest, ""
	for i := 0; i < len(rest); i++ {
		if isSep(rest[i]) {
			tool, args = rest[:i], trimHeaderSpace(rest[i:])
			break
		}
	}
	if !isTool(tool) {
		return nil, fmt.Errorf("qa/v1 repro: invalid tool %q: want [A-Za-z0-9_.-]{1,%d}", tool, maxToolLen)
	}
	if args == "" {
		return nil, fmt.Errorf("qa/v1 repro: missing JSON args after tool %q", tool)
	}
	var r *Repro
	if dst != nil {
		dst.Tool, dst.Args = tool, append(dst.Args[:0], args...)
		r = dst
	} else {
		r = newRepro(tool, args)
	}
	if err := jsonValid(r.Args); err != nil {
		return nil, fmt.Errorf("qa/v1 repro: args for %q are not valid JSON: %w", tool, err)
	}
	if args[0] != '{' {
		return nil, fmt.Errorf("qa/v1 repro: args for %q are not a JSON object", tool)
	}
	return r, nil
}

// newRepro returns a Repro holding a copy of args. Typical args are short,
// so Repro and args share one allocation: Parse is on triage's hot path.
func newRepro(tool, args string) *Repro {
	const inline = 64
	if len(args) > inline {
		return &Repro{Tool: tool, Args: []byte(args)}
	}
	box := new(struct {
		r   Repro
		buf [inline]byte
	})
	n := copy(box.buf[:], args)
	box.r = Repro{Tool: tool, Args: box.buf[:n:n]}
	return &box.r
}

// trimHeaderSpace trims the bytes that separate header fields.
func trimHeaderSpace(s string) string {
	for s != "" && isSep(s[0]) {
		s = s[1:]
	}
	for s != "" && isSep(s[len(s)-1]) {
		s = s[:len(s)-1]
	}
	return s
}

func isSep(c byte) bool { return c == ' ' || c == '\t' || c == '\r' }

// isValueByte reports whether c is printable ASCII but space (0x21-0x7E).
func isValueByte(c byte) bool { return c-0x21 <= 0x7E-0x21 }

var tokenBytes = func() (t [256]bool) {
	for c := range t {
		t[c] = isLowerAlnum(byte(c)) || c == '.' || c == '-'
	}
	return t
}()

func isTokenByte(c byte) bool { return tokenBytes[c] }

// tokenShape checks what isToken checks beyond the bytes being token bytes.
func tokenShape(s string) bool {
	return len(s) > 0 && len(s) <= maxTokenLen && isLowerAlnum(s[0])
}

// fieldError says what is wrong with the header field at the start of rest.
func fieldError(rest string) error {
	field := rest
	for i := 0; i < len(rest); i++ {
		if isSep(rest[i]) {
			field = rest[:i]
			break
		}
	}
	key, value, ok := strings.Cut(field, "=")
	if !ok {
		return fmt.Errorf("qa/v1 header: field %q is not key=value", field)
	}
	if err := checkKey(key); err != nil {
		return fmt.Errorf("qa/v1 header: %w", err)
	}
	return fmt.Errorf("qa/v1 header: %w", checkValue(key, value))
}

// checkKey reports a header key that is not a token.
func checkKey(key string) error {
	if !isToken(key) {
		return fmt.Errorf("invalid key %q: want a token %s", key, tokenGrammar)
	}
	return nil
}

// checkValue reports a header value that is empty or not printable ASCII.
func checkValue(key, value string) error {
	if value == "" {
		return fmt.Errorf("empty value for key %q", key)
	}
	for i := 0; i < len(value); i++ {
		if !isValueByte(value[i]) {
			r, _ := utf8.DecodeRuneInString(value[i:])
			return fmt.Errorf("value of %q has %q at byte %d: want printable ASCII without spaces", key, r, i)
		}
	}
	return nil
}

// Bits for the standard keys, to dispatch on and to catch duplicates and
// missing required keys with one word of state.
const (
	bitSource uint8 = 1 << iota
	bitSev
	bitSurface
	bitKind
	bitFP
	bitRun
	bitRef

	bitRequired = bitSource | bitSev | bitSurface
)

// standardKeyBit returns the bit of a standard key, 0 for others.
func standardKeyBit(key string) uint8 {
	switch key {
	case keySource:
		return bitSource
	case keySev:
		return bitSev
	case keySurface:
		return bitSurface
	case keyKind:
		return bitKind
	case keyFP:
		return bitFP
	case keyRun:
		return bitRun
	case keyRef:
		return bitRef
	}
	return 0
}

func isStandardKey(key string) bool { return standardKeyBit(key) != 0 }

// isTool reports whether s matches [A-Za-z0-9_.-]{1,64}.
func isTool(s string) bool {
	if len(s) == 0 || len(s) > maxToolLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}
