package trajectory

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
)

// MinSecretLen is the shortest secret Redactor.Add accepts: anything shorter
// would match ordinary text and redact it.
const MinSecretLen = 8

// ErrSecretTooShort is returned by Redactor.Add for a secret shorter than
// MinSecretLen.
var ErrSecretTooShort = errors.New("secret too short to redact safely")

// Redactor replaces secrets with "[REDACTED:<kind>]". It applies the
// package's pattern rules (see the package comment) and, literally, every
// secret registered with Add. The zero value and a nil *Redactor apply the
// pattern rules only. It is safe for concurrent use.
type Redactor struct {
	mu      sync.RWMutex
	secrets []string // exact text, longest first
	hexKeys []string // lowercase hex without 0x, longest first; matched ignoring case
	minLen  int      // shortest registered secret, 0 if none
}

// NewRedactor returns a Redactor that also redacts the given secrets.
func NewRedactor(secrets ...string) (*Redactor, error) {
	r := &Redactor{}
	for _, s := range secrets {
		if err := r.Add(s); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Add registers a secret the runtime knows, such as a throwaway private key
// or an API key, to be redacted wherever it appears, whatever the field.
// A hex secret (with or without 0x) is matched ignoring case and prefix. It
// returns ErrSecretTooShort for secrets shorter than MinSecretLen.
func (r *Redactor) Add(secret string) error {
	if len(secret) < MinSecretLen {
		return fmt.Errorf("add secret of %d bytes: %w", len(secret), ErrSecretTooShort)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(secret)
	if h, ok := hexBody(secret); ok && len(h) >= MinSecretLen {
		r.hexKeys = insertSorted(r.hexKeys, asciiLower(h))
		n = len(h)
	} else {
		r.secrets = insertSorted(r.secrets, secret)
	}
	if r.minLen == 0 || n < r.minLen {
		r.minLen = n
	}
	return nil
}

// hexBody returns s without a 0x prefix when the rest is all hex.
func hexBody(s string) (string, bool) {
	if len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
		s = s[2:]
	}
	for i := 0; i < len(s); i++ {
		if !isHex(s[i]) {
			return "", false
		}
	}
	return s, s != ""
}

// insertSorted returns a new list with s added, longest first, without
// duplicates. It never writes to list: snapshots taken by rules share it.
func insertSorted(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	out := append(slices.Clip(list), s)
	sort.SliceStable(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

var defaultRedactor = &Redactor{}

// Redact returns s with secrets found by the pattern rules replaced by
// "[REDACTED:<kind>]". It is meant for log lines; with no field name to go
// by, a 64-hex value is redacted only when words before it say it is a key.
func Redact(s string) string {
	return defaultRedactor.Redact(s)
}

// Redact is the package Redact plus the secrets registered with Add.
func (r *Redactor) Redact(s string) string {
	out, _ := r.rules().redactString(s, classNeutral)
	return out
}

// rules is a snapshot of a Redactor's secrets, taken once per document.
type rules struct {
	secrets []string
	hexKeys []string
	minLen  int // strings shorter than this cannot match anything
}

func (r *Redactor) rules() rules {
	if r == nil {
		return rules{minLen: minPatternLen}
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	ru := rules{secrets: r.secrets, hexKeys: r.hexKeys, minLen: minPatternLen}
	if r.minLen > 0 && r.minLen < ru.minLen {
		ru.minLen = r.minLen
	}
	return ru
}

// RedactJSON returns data, a JSON document, compacted and with every string
// (object keys included) redacted. Field names give context: see the package
// comment. It fails only if data is not valid JSON.
func (r *Redactor) RedactJSON(data []byte) ([]byte, error) {
	return r.appendJSON(nil, data)
}

// class is what a field name says about its string values.
type class uint8

const (
	classNeutral    class = iota
	classHash             // a digest or identifier: a 64-hex value here is not a key
	classKey              // a key: any 64-hex value in it is redacted
	classCredential       // a credential: the whole value is redacted
)

// credentialNames are field names, lowercased with everything but letters and
// digits removed, whose whole string value is a credential.
var credentialNames = map[string]bool{
	"authorization": true, "proxyauthorization": true, "cookie": true, "setcookie": true,
	"password": true, "passwd": true, "passphrase": true,
	"apikey": true, "xapikey": true, "apitoken": true, "authtoken": true, "xauthtoken": true,
	"accesstoken": true, "refreshtoken": true, "idtoken": true, "sessiontoken": true,
	"clientsecret": true, "secret": true, "secretkey": true,
	"privatekey": true, "privkey": true, "mnemonic": true, "seedphrase": true,
}

// wordClass classifies one word (letters and digits, any case).
func wordClass(w string) class {
	var buf [24]byte
	if len(w) > len(buf) {
		return classNeutral
	}
	for i := 0; i < len(w); i++ {
		c := w[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	switch string(buf[:len(w)]) {
	case "key", "keys", "privkey", "privatekey", "private", "priv", "secret", "secrets",
		"secretkey", "seed", "mnemonic", "pk", "sk", "signingkey", "signerkey",
		"password", "passphrase":
		return classKey
	case "hash", "hashes", "txhash", "tx", "txs", "txid", "txn", "transaction",
		"transactionhash", "blockhash", "block", "sha", "sha256", "sha3", "keccak",
		"keccak256", "digest", "fp", "fingerprint", "checksum", "root", "stateroot",
		"topic", "topics", "commit", "id", "receipt", "codehash", "parenthash":
		return classHash
	}
	return classNeutral
}

// classify says what a field name implies: credential names first, then a
// hash word anywhere in it wins over a key word ("key_hash" is a digest).
func classify(name string) class {
	var norm [32]byte
	n, long := 0, false
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !isAlnum(c) {
			continue
		}
		if n == len(norm) {
			long = true
			break
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		norm[n] = c
		n++
	}
	if !long && credentialNames[string(norm[:n])] {
		return classCredential
	}
	out := classNeutral
	for i := 0; i < len(name); {
		for i < len(name) && !isAlnum(name[i]) {
			i++
		}
		j := i
		for j < len(name) && isAlnum(name[j]) {
			j++
		}
		if j > i {
			switch wordClass(name[i:j]) {
			case classHash:
				return classHash
			case classKey:
				out = classKey
			}
		}
		i = j
	}
	return out
}

// span is a stretch of text to replace with a marker.
type span struct {
	start, end int
	kind       string
}

const markerPrefix = "[REDACTED:"

func marker(kind string) string { return markerPrefix + kind + "]" }

// minPatternLen is the shortest text any pattern rule can match ("bearer "
// and an 8-byte token); shorter strings are skipped unless a literal secret
// or the field name could apply.
const minPatternLen = 15

// redactString redacts s until nothing more changes, so that redacting the
// output again is a no-op (the byte-identical round trip depends on it).
func (r rules) redactString(s string, c class) (string, bool) {
	if c == classCredential {
		if s == "" || isMarker(s) {
			return s, false
		}
		return marker("credential"), true
	}
	changed := false
	for range 4 {
		out, ok := r.redactOnce(s, c)
		if !ok {
			break
		}
		s, changed = out, true
	}
	return s, changed
}

func isMarker(s string) bool {
	if !strings.HasPrefix(s, markerPrefix) || !strings.HasSuffix(s, "]") {
		return false
	}
	for i := len(markerPrefix); i < len(s)-1; i++ {
		if c := s[i]; !('a' <= c && c <= 'z' || c == '_') {
			return false
		}
	}
	return len(s) > len(markerPrefix)+1
}

func (r rules) redactOnce(s string, c class) (string, bool) {
	if len(s) < r.minLen && c != classKey {
		return s, false
	}
	secrets, hexKeys := r.secrets, r.hexKeys
	var spans []span // allocated only when something matches
	for _, sec := range secrets {
		for off := 0; ; {
			i := strings.Index(s[off:], sec)
			if i < 0 {
				break
			}
			spans = append(spans, span{off + i, off + i + len(sec), "registered"})
			off += i + len(sec)
		}
	}
	if len(hexKeys) > 0 {
		lower := asciiLower(s)
		for _, h := range hexKeys {
			for off := 0; ; {
				i := strings.Index(lower[off:], h)
				if i < 0 {
					break
				}
				start := off + i
				if start >= 2 && s[start-2] == '0' && (s[start-1] == 'x' || s[start-1] == 'X') {
					start -= 2
				}
				spans = append(spans, span{start, off + i + len(h), "registered"})
				off += i + len(h)
			}
		}
	}
	spans = scanPatterns(s, c, spans)
	if len(s) >= minPhraseBytes {
		for _, m := range MnemonicSpans(s) {
			spans = append(spans, span{m[0], m[1], "mnemonic"})
		}
	}
	if len(spans) == 0 {
		return s, false
	}
	sort.Slice(spans, func(i, j int) bool {
		if spans[i].start != spans[j].start {
			return spans[i].start < spans[j].start
		}
		return spans[i].end > spans[j].end
	})
	var b strings.Builder
	b.Grow(len(s))
	last := 0
	for i := 0; i < len(spans); {
		sp := spans[i]
		// Merge everything that overlaps this span; the first kind wins.
		j := i + 1
		for j < len(spans) && spans[j].start < sp.end {
			sp.end = max(sp.end, spans[j].end)
			j++
		}
		b.WriteString(s[last:sp.start])
		b.WriteString(marker(sp.kind))
		last = sp.end
		i = j
	}
	b.WriteString(s[last:])
	out := b.String()
	return out, out != s
}

// scanPatterns appends the spans of every pattern rule that matches s. It
// runs in linear time: after a match it resumes past the span, and a
// candidate inside a run that already failed is not scanned again.
func scanPatterns(s string, c class, spans []span) []span {
	failedRun := 0 // end of the last key-character run that matched nothing
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if !patternStart[ch] {
			continue
		}
		boundary := i == 0 || !isWord(s[i-1])
		sp := span{start: -1}
		switch ch {
		case '-':
			if strings.HasPrefix(s[i:], "-----BEGIN ") {
				if end, ok := pemBlock(s, i); ok {
					sp = span{i, end, "pem_private_key"}
				}
			}
		case 'A':
			switch {
			case i >= failedRun && strings.HasPrefix(s[i:], "AIza"):
				if n := runLen(s, i+4, isKeyChar); n >= 35 {
					sp = span{i, i + 4 + n, "google_api_key"}
				} else {
					failedRun = i + 4 + n
				}
			case boundary && strings.HasPrefix(s[i:], "AKIA"):
				if n := runLen(s, i+4, isUpperDigit); n == 16 && !isAlnumAt(s, i+20) {
					sp = span{i, i + 20, "aws_access_key"}
				}
			case boundary && hasPrefixFold(s[i:], "authorization"):
				if a, b, ok := authCredential(s, i+len("authorization")); ok {
					sp = span{a, b, "authorization"}
				}
			}
		case 'a':
			if boundary && hasPrefixFold(s[i:], "authorization") {
				if a, b, ok := authCredential(s, i+len("authorization")); ok {
					sp = span{a, b, "authorization"}
				}
			}
		case 'b', 'B':
			if boundary && hasPrefixFold(s[i:], "bearer") {
				if a, b, ok := bearerToken(s, i+len("bearer")); ok {
					sp = span{a, b, "bearer_token"}
				}
			}
		case 's':
			if boundary && i >= failedRun && strings.HasPrefix(s[i:], "sk-") {
				if n := runLen(s, i+3, isKeyChar); n >= 20 && hasDigit(s[i+3:i+3+n]) {
					sp = span{i, i + 3 + n, "api_key"}
				} else {
					failedRun = i + 3 + n
				}
			}
		case 'g':
			switch {
			case strings.HasPrefix(s[i:], "github_pat_"):
				if n := runLen(s, i+11, isWord); n >= 22 {
					sp = span{i, i + 11 + n, "github_token"}
				}
			case len(s) > i+4 && s[i+1] == 'h' && strings.IndexByte("pousr", s[i+2]) >= 0 && s[i+3] == '_':
				if n := runLen(s, i+4, isAlnum); n >= 36 {
					sp = span{i, i + 4 + n, "github_token"}
				}
			}
		}
		if sp.start >= 0 {
			spans = append(spans, sp)
			i = sp.end - 1
			continue
		}
		if isHex(ch) && boundary {
			start, body := i, i
			if ch == '0' && i+1 < len(s) && (s[i+1] == 'x' || s[i+1] == 'X') {
				body = i + 2
			}
			n := runLen(s, body, isHex)
			if n == 64 && !isWordAt(s, body+n) && hexKeyAt(s, start, body, c) {
				spans = append(spans, span{start, body + n, "private_key"})
			}
			// Inside the run nothing is at a boundary; only its last byte can
			// start a pattern ("0AIza..."). Resume there.
			i = max(i, body+n-2)
		}
	}
	return spans
}

// patternStart marks the bytes a pattern can start with.
var patternStart = func() (t [256]bool) {
	for _, c := range []byte("-AabBsg0123456789abcdefABCDEF") {
		t[c] = true
	}
	return t
}()

// pemBlock returns the end of the PEM private key block starting at i: the
// END line, or the end of s when the block was cut off.
func pemBlock(s string, i int) (int, bool) {
	rest := s[i+len("-----BEGIN "):]
	le := strings.Index(rest[:min(len(rest), 64)], "-----")
	if le < 0 || !strings.Contains(rest[:le], "PRIVATE KEY") {
		return 0, false
	}
	after := i + len("-----BEGIN ") + le + 5
	e := strings.Index(s[after:], "-----END ")
	if e < 0 {
		return len(s), true
	}
	tail := after + e + len("-----END ")
	c := strings.Index(s[tail:], "-----")
	if c < 0 {
		return len(s), true
	}
	return tail + c + 5, true
}

// authCredential finds the credential after "authorization" at p:
// optional quotes, ':' or '=', an optional scheme word, then the credential.
func authCredential(s string, p int) (int, int, bool) {
	p = skip(s, p, " \t\"'")
	if p >= len(s) || (s[p] != ':' && s[p] != '=') {
		return 0, 0, false
	}
	p = skip(s, p+1, " \t\"'")
	if n := runLen(s, p, isLetter); n > 0 && p+n < len(s) && (s[p+n] == ' ' || s[p+n] == '\t') {
		p = skip(s, p+n, " \t")
	}
	if strings.HasPrefix(s[p:], markerPrefix) {
		return 0, 0, false
	}
	e := p
	for e < len(s) && !strings.ContainsRune(" \t\r\n\"',;\\", rune(s[e])) {
		e++
	}
	return p, e, tokenLike(s[p:e])
}

// bearerToken finds a bearer token after the word "bearer" at p.
func bearerToken(s string, p int) (int, int, bool) {
	q := skip(s, p, " \t")
	if q == p {
		return 0, 0, false
	}
	n := runLen(s, q, isTokenChar)
	return q, q + n, tokenLike(s[q : q+n])
}

// tokenLike tells a credential from a word: long, or with a digit or one of
// the punctuation marks tokens carry. "required" and "of" are words.
func tokenLike(tok string) bool {
	return len(tok) >= 24 || len(tok) >= 8 && strings.ContainsAny(tok, "0123456789+/=._~-")
}

// hexKeyAt decides whether the 64 hex digits at body (start: with their
// 0x, if any) in s, a string of field class c, are redacted: always in a
// key field, never in a digest field; in neutral text unless the nearest
// telling word before them names a digest, they are an ABI word (16 or
// more leading zeros: an address or a number, not a random key), or they
// are the whole string with a 0x (a structured chain value: a hash, a
// word). Unlabelled keys in fetched pages are exactly what a leak looks
// like, and the security specialist verifies every such value against the
// chain, so every one it can find is redacted here.
func hexKeyAt(s string, start, body int, c class) bool {
	switch {
	case c == classKey:
		return true
	case c == classHash:
		return false
	}
	switch nearestClass(s, start) {
	case classKey:
		return true
	case classHash:
		return false
	}
	if strings.HasPrefix(s[body:], "0000000000000000") {
		return false
	}
	return !(start == 0 && body+64 == len(s) && body == 2)
}

// keyContext reports whether the nearest telling word before position end
// names a key (nearestClass).
func keyContext(s string, end int) bool { return nearestClass(s, end) == classKey }

// keyContextBytes bounds how far back nearestClass looks.
const keyContextBytes = 96

// nearestClass is the class of the nearest telling word before position
// end, on the same line, at most 6 words and keyContextBytes bytes back:
// classKey, classHash, or classNeutral when there is none. A redaction
// marker counts as one neutral word.
func nearestClass(s string, end int) class {
	p, stop := end, max(0, end-keyContextBytes)
	for words := 0; words < 6 && p > stop; {
		c := s[p-1]
		switch {
		case c == '\n':
			return classNeutral
		case c == ']':
			if m := strings.LastIndex(s[max(stop, p-40):p], markerPrefix); m >= 0 && isMarker(s[max(stop, p-40)+m:p]) {
				p = max(stop, p-40) + m
				words++
			} else {
				p--
			}
		case !isAlnum(c):
			p--
		default:
			q := p
			for q > stop && isAlnum(s[q-1]) {
				q--
			}
			if wc := wordClass(s[q:p]); wc != classNeutral {
				return wc
			}
			words++
			p = q
		}
	}
	return classNeutral
}

func skip(s string, p int, set string) int {
	for p < len(s) && strings.IndexByte(set, s[p]) >= 0 {
		p++
	}
	return p
}

func runLen(s string, p int, ok func(byte) bool) int {
	n := 0
	for p+n < len(s) && ok(s[p+n]) {
		n++
	}
	return n
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

func hasDigit(s string) bool {
	return strings.ContainsAny(s, "0123456789")
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
func isLetter(c byte) bool           { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isAlnum(c byte) bool            { return isLetter(c) || '0' <= c && c <= '9' }
func isWord(c byte) bool             { return isAlnum(c) || c == '_' }
func isKeyChar(c byte) bool          { return isWord(c) || c == '-' }
func isUpperDigit(c byte) bool       { return 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' }
func isTokenChar(c byte) bool        { return isKeyChar(c) || strings.IndexByte(".~+/=", c) >= 0 }
func isWordAt(s string, i int) bool  { return i < len(s) && isWord(s[i]) }
func isAlnumAt(s string, i int) bool { return i < len(s) && isAlnum(s[i]) }

// asciiLower lowercases ASCII letters only, so byte offsets are preserved.
func asciiLower(s string) string {
	i := 0
	for i < len(s) && !('A' <= s[i] && s[i] <= 'Z') {
		i++
	}
	if i == len(s) {
		return s
	}
	b := []byte(s)
	for ; i < len(b); i++ {
		if 'A' <= b[i] && b[i] <= 'Z' {
			b[i] += 'a' - 'A'
		}
	}
	return string(b)
}

// jsonRewriter copies a JSON document, compacting it and redacting strings.
type jsonRewriter struct {
	r     rules
	src   []byte
	pos   int
	depth int
}

var errSyntax = errors.New("invalid JSON")

// appendJSON appends the redacted, compacted form of the JSON document src.
func (r *Redactor) appendJSON(dst, src []byte) ([]byte, error) {
	w := jsonRewriter{r: r.rules(), src: src}
	dst, err := w.value(dst, classNeutral)
	if err != nil {
		return dst, err
	}
	w.space()
	if w.pos != len(src) {
		return dst, w.errorf("data after top-level value")
	}
	return dst, nil
}

func (w *jsonRewriter) errorf(msg string) error {
	return fmt.Errorf("%w at byte %d: %s", errSyntax, w.pos, msg)
}

func (w *jsonRewriter) space() {
	for w.pos < len(w.src) {
		switch w.src[w.pos] {
		case ' ', '\t', '\n', '\r':
			w.pos++
		default:
			return
		}
	}
}

func (w *jsonRewriter) value(dst []byte, c class) ([]byte, error) {
	w.space()
	if w.pos >= len(w.src) {
		return dst, w.errorf("unexpected end")
	}
	switch ch := w.src[w.pos]; {
	case ch == '{':
		return w.object(dst, c)
	case ch == '[':
		return w.array(dst, c)
	case ch == '"':
		raw, esc, err := w.str()
		if err != nil {
			return dst, err
		}
		return w.emitString(dst, raw, esc, c)
	case ch == '-' || '0' <= ch && ch <= '9':
		start := w.pos
		for w.pos < len(w.src) && strings.IndexByte("+-.eE0123456789", w.src[w.pos]) >= 0 {
			w.pos++
		}
		if !isValidNumber(w.src[start:w.pos]) {
			return dst, w.errorf("invalid number")
		}
		return append(dst, w.src[start:w.pos]...), nil
	default:
		for _, lit := range [...]string{"true", "false", "null"} {
			if len(w.src)-w.pos >= len(lit) && string(w.src[w.pos:w.pos+len(lit)]) == lit {
				w.pos += len(lit)
				return append(dst, lit...), nil
			}
		}
		return dst, w.errorf("invalid character")
	}
}

func (w *jsonRewriter) object(dst []byte, c class) ([]byte, error) {
	if w.depth++; w.depth > maxDepth {
		return dst, w.errorf("nested too deep")
	}
	// Keys are text in the parent's context; a credential parent does not
	// wipe its keys, only its string values.
	keyClass := c
	if keyClass == classCredential {
		keyClass = classNeutral
	}
	w.pos++
	dst = append(dst, '{')
	w.space()
	if w.pos < len(w.src) && w.src[w.pos] == '}' {
		w.pos++
		w.depth--
		return append(dst, '}'), nil
	}
	for {
		w.space()
		if w.pos >= len(w.src) || w.src[w.pos] != '"' {
			return dst, w.errorf("want object key")
		}
		raw, esc, err := w.str()
		if err != nil {
			return dst, err
		}
		// The redacted key is the context for the value, so a second pass
		// over the output sees the same context as the first.
		var vc class
		body := raw[1 : len(raw)-1]
		if !esc && len(body) < w.r.minLen && utf8.Valid(body) {
			dst = append(dst, raw...)
			vc = classify(string(body))
		} else {
			k, err := w.decode(raw, esc)
			if err != nil {
				return dst, err
			}
			k2, changed := w.r.redactString(k, keyClass)
			if changed || !utf8.ValidString(k) {
				dst = appendString(dst, k2)
			} else {
				dst = append(dst, raw...)
			}
			vc = classify(k2)
		}
		w.space()
		if w.pos >= len(w.src) || w.src[w.pos] != ':' {
			return dst, w.errorf("want ':'")
		}
		w.pos++
		dst = append(dst, ':')
		if dst, err = w.value(dst, vc); err != nil {
			return dst, err
		}
		w.space()
		if w.pos >= len(w.src) {
			return dst, w.errorf("unexpected end in object")
		}
		switch w.src[w.pos] {
		case ',':
			w.pos++
			dst = append(dst, ',')
		case '}':
			w.pos++
			w.depth--
			return append(dst, '}'), nil
		default:
			return dst, w.errorf("want ',' or '}'")
		}
	}
}

func (w *jsonRewriter) array(dst []byte, c class) ([]byte, error) {
	if w.depth++; w.depth > maxDepth {
		return dst, w.errorf("nested too deep")
	}
	w.pos++
	dst = append(dst, '[')
	w.space()
	if w.pos < len(w.src) && w.src[w.pos] == ']' {
		w.pos++
		w.depth--
		return append(dst, ']'), nil
	}
	for {
		var err error
		if dst, err = w.value(dst, c); err != nil {
			return dst, err
		}
		w.space()
		if w.pos >= len(w.src) {
			return dst, w.errorf("unexpected end in array")
		}
		switch w.src[w.pos] {
		case ',':
			w.pos++
			dst = append(dst, ',')
		case ']':
			w.pos++
			w.depth--
			return append(dst, ']'), nil
		default:
			return dst, w.errorf("want ',' or ']'")
		}
	}
}

// emitString appends the string token raw redacted in context c. An
// unchanged string is copied byte for byte; a changed one, or one holding
// invalid UTF-8, is re-encoded as encoding/json would.
func (w *jsonRewriter) emitString(dst, raw []byte, esc bool, c class) ([]byte, error) {
	body := raw[1 : len(raw)-1]
	if !esc && len(body) < w.r.minLen && c != classCredential && c != classKey && utf8.Valid(body) {
		return append(dst, raw...), nil // too short to hold a secret
	}
	s, err := w.decode(raw, esc)
	if err != nil {
		return dst, err
	}
	s2, changed := w.r.redactString(s, c)
	if changed || !utf8.ValidString(s) {
		return appendString(dst, s2), nil
	}
	return append(dst, raw...), nil
}

// str reads the string token at pos and returns it, quotes included, and
// whether it holds escapes.
func (w *jsonRewriter) str() ([]byte, bool, error) {
	start := w.pos
	w.pos++
	esc := false
	for {
		if w.pos >= len(w.src) {
			return nil, false, w.errorf("unterminated string")
		}
		ch := w.src[w.pos]
		if ch == '"' {
			break
		}
		if ch < 0x20 {
			return nil, false, w.errorf("control character in string")
		}
		if ch == '\\' {
			esc = true
			w.pos++
		}
		w.pos++
	}
	w.pos++
	return w.src[start:w.pos], esc, nil
}

// decode returns the value of the string token raw.
func (w *jsonRewriter) decode(raw []byte, esc bool) (string, error) {
	body := raw[1 : len(raw)-1]
	if !esc {
		return string(body), nil
	}
	s, ok := unescape(body)
	if !ok {
		return "", fmt.Errorf("%w: invalid escape in string %.40q", errSyntax, body)
	}
	return s, nil
}

// unescape decodes a JSON string body as encoding/json does, lone
// surrogates becoming U+FFFD.
func unescape(b []byte) (string, bool) {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); {
		c := b[i]
		if c != '\\' {
			out = append(out, c)
			i++
			continue
		}
		if i+1 >= len(b) {
			return "", false
		}
		switch b[i+1] {
		case '"', '\\', '/':
			out = append(out, b[i+1])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(b[i+2:])
			if !ok {
				return "", false
			}
			i += 6
			if utf16.IsSurrogate(r) {
				if i+1 < len(b) && b[i] == '\\' && b[i+1] == 'u' {
					if r2, ok := hex4(b[i+2:]); ok {
						if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
							out = utf8.AppendRune(out, d)
							i += 6
							continue
						}
					}
				}
				r = utf8.RuneError
			}
			out = utf8.AppendRune(out, r)
			continue
		default:
			return "", false
		}
		i += 2
	}
	return string(out), true
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// appendString appends s as a JSON string exactly as an encoding/json
// Encoder without HTML escaping would, so re-encoding a decoded record
// reproduces it.
func appendString(dst []byte, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return append(dst, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}

// HexKeySpans returns the byte spans [start, end) of the 64-hex values
// (their 0x included) that the pattern rules redact in s read as text of
// no particular field (Redact): every value a reader of s should treat as
// a possible private key. The security specialist verifies exactly these,
// so whatever it can find is redacted in run records.
func HexKeySpans(s string) [][2]int {
	var out [][2]int
	for i := 0; i < len(s); i++ {
		if !isHex(s[i]) || i > 0 && isWord(s[i-1]) {
			continue
		}
		start, body := i, i
		if s[i] == '0' && i+1 < len(s) && (s[i+1] == 'x' || s[i+1] == 'X') {
			body = i + 2
		}
		n := runLen(s, body, isHex)
		if n == 64 && !isWordAt(s, body+n) && hexKeyAt(s, start, body, classNeutral) {
			out = append(out, [2]int{start, body + n})
		}
		i = max(i, body+n-1)
	}
	return out
}
