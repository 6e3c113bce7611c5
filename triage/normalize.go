package triage

import (
	"slices"
	"unicode"
	"unicode/utf8"
)

// appendLiterals appends s with its literals replaced by '#'. s is already
// lowercased (fleet.NormalizeRepro and fleet.NormalizeSummary output). A
// word is a maximal run of ASCII letters, digits and non-ASCII bytes; it is
// replaced whole when it is a number (12), 0x-hex (an address, a hash), or
// at least 4 hex digits with at least one decimal digit (5c1e0a9d, a716);
// otherwise each run of digits inside it becomes '#' (qa-r123-4 -> qa-r#-#,
// r-20261122-0412 -> r-#-#, 850ms -> #ms). A 4-byte function selector
// (0x + 8 hex digits) is kept, and so is the selector at the head of ABI
// calldata (selector + 32-byte words): which function a repro calls is part
// of the bug. Everything else is copied, so the code inside a repro
// (enum E{} vs struct S{}) still tells bugs apart.
func appendLiterals[S ~string | ~[]byte](dst []byte, s S) []byte {
	// Only words with a digit change: look for digits and copy the text
	// between such words in bulk.
	last := 0 // s[last:] is not yet copied
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			continue
		}
		ws, we := i, i+1
		for ws > last && wordByte[s[ws-1]] {
			ws--
		}
		for we < len(s) && wordByte[s[we]] {
			we++
		}
		dst = append(dst, s[last:ws]...)
		dst = appendLiteralWord(dst, s[ws:we])
		last, i = we, we-1
	}
	return append(dst, s[last:]...)
}

// wordByte marks the bytes words are made of.
var wordByte = func() (t [256]bool) {
	for c := range t {
		t[c] = isWordByte(byte(c))
	}
	return t
}()

func isWordByte(c byte) bool {
	return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c >= utf8.RuneSelf || 'A' <= c && c <= 'Z'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isHex(c byte) bool { return isDigit(c) || 'a' <= c && c <= 'f' }

// literalWord reports whether w is replaced whole, and whether it has digits.
func literalWord[S ~string | ~[]byte](w S) (whole, digits bool) {
	allDigits, allHex := true, true
	for i := 0; i < len(w); i++ {
		c := w[i]
		if isDigit(c) {
			digits = true
			continue
		}
		allDigits = false
		if !isHex(c) {
			allHex = false
		}
	}
	switch {
	case !digits:
		return false, false
	case allDigits:
		return true, true
	case len(w) > 2 && w[0] == '0' && w[1] == 'x' && isAllHex(w[2:]):
		return true, true
	case allHex && len(w) >= 4:
		return true, true
	}
	return false, true
}

func isAllHex[S ~string | ~[]byte](s S) bool {
	for i := 0; i < len(s); i++ {
		if !isHex(s[i]) {
			return false
		}
	}
	return true
}

func appendLiteralWord[S ~string | ~[]byte](dst []byte, w S) []byte {
	if n := len(w) - 2; n >= 8 && w[0] == '0' && w[1] == 'x' && isAllHex(w[2:]) && (n == 8 || (n-8)%64 == 0) {
		dst = append(dst, w[:10]...) // the selector
		if n > 8 {
			dst = append(dst, '#')
		}
		return dst
	}
	whole, digits := literalWord(w)
	switch {
	case whole:
		return append(dst, '#')
	case !digits:
		return append(dst, w...)
	}
	for i := 0; i < len(w); {
		if isDigit(w[i]) {
			for i < len(w) && isDigit(w[i]) {
				i++
			}
			dst = append(dst, '#')
			continue
		}
		dst = append(dst, w[i])
		i++
	}
	return dst
}

// maxTokens bounds the tokens taken from one summary.
const maxTokens = 48

// tokenize appends the similarity tokens of a summary to dst in the order
// they appear, as 64-bit FNV-1a hashes (tokenSet makes a set of them).
// Words are lowercased, literals are replaced as in appendLiterals (and a
// word that is only a literal is dropped), stopwords are dropped, a small
// table maps common QA synonyms to one word (panics, crashed -> crash;
// outdated, "out of date" -> stale), and a light suffix stemmer folds
// inflections (compiler, compiles, compiled -> compil).
func tokenize(dst []uint64, summary string) []uint64 {
	start := len(dst)
	var word [64]byte
	prev2, prev := uint64(0), uint64(0) // the last two words, for phrases
	for i := 0; i < len(summary) && len(dst)-start < maxTokens; {
		r, size := rune(summary[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(summary[i:])
		}
		if !isTokenRune(r) {
			i += size
			continue
		}
		n := 0
		for i < len(summary) {
			r, size = rune(summary[i]), 1
			if r >= utf8.RuneSelf {
				r, size = utf8.DecodeRuneInString(summary[i:])
			}
			if !isTokenRune(r) {
				break
			}
			if n+utf8.UTFMax <= len(word) {
				n += utf8.EncodeRune(word[n:], unicode.ToLower(r))
			}
			i += size
		}
		w := word[:n]
		if t, ok := token(w); ok {
			dst = append(dst, t)
		}
		// "out of date" is one word: stale (out and date are dropped or
		// kept as they are; stale joins outdated and obsolete).
		h := fnv(w)
		if h == hashDate && prev == hashOf && prev2 == hashOut {
			dst = append(dst, fnv("stale"))
		}
		prev2, prev = prev, h
	}
	return dst
}

// tokenSet appends the tokens of seq to dst sorted and without repeats.
func tokenSet(dst, seq []uint64) []uint64 {
	start := len(dst)
	dst = append(dst, seq...)
	toks := dst[start:]
	slices.Sort(toks)
	return dst[:start+len(slices.Compact(toks))]
}

// substitution reports whether token sequences a and b are one template
// filled in with different specifics: they share a prefix and a suffix (at
// least one token between them) and differ only in the spans between,
// which have no token in common, and each span holds a word at least as
// rare as the shared words are on average (weight gives a token's weight).
// "p95 latency of POST /call above the SLO" and "... POST /publish ..." are
// two bugs however similar they look; "the quickstart link in README" and
// "the quickstart referenced in README" differ in a common word and may be
// one.
func substitution(a, b []uint64, weight func(uint64) float64) bool {
	p := 0
	for p < len(a) && p < len(b) && a[p] == b[p] {
		p++
	}
	s := 0
	for s < len(a)-p && s < len(b)-p && a[len(a)-1-s] == b[len(b)-1-s] {
		s++
	}
	x, y := a[p:len(a)-s], b[p:len(b)-s]
	if p+s == 0 || len(x) == 0 || len(y) == 0 {
		return false
	}
	for _, t := range x {
		if slices.Contains(y, t) {
			return false
		}
	}
	var shared, mx, my float64
	for _, t := range a[:p] {
		shared += weight(t)
	}
	for _, t := range a[len(a)-s:] {
		shared += weight(t)
	}
	shared /= float64(p + s)
	for _, t := range x {
		mx = max(mx, weight(t))
	}
	for _, t := range y {
		my = max(my, weight(t))
	}
	return min(mx, my) >= shared
}

var hashOut, hashOf, hashDate = fnv("out"), fnv("of"), fnv("date")

func isTokenRune(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}

// token turns one lowercased word into a token hash; ok is false for words
// that carry no meaning for similarity.
func token(w []byte) (uint64, bool) {
	whole, digits := literalWord(w)
	if whole {
		return 0, false
	}
	var buf [80]byte
	if digits {
		w = appendLiteralWord(buf[:0], w)
	}
	if stopwords[string(w)] {
		return 0, false
	}
	if syn, ok := synonyms[string(w)]; ok {
		return fnv(syn), true
	}
	st := stem(w)
	if syn, ok := synonyms[string(st)]; ok {
		return fnv(syn), true
	}
	if len(st) < 2 || stopwords[string(st)] {
		return 0, false
	}
	return fnv(st), true
}

// stem strips inflection suffixes while at least 3 bytes remain, repeatedly,
// so that header, headers, compile, compiler and compiled meet.
func stem(w []byte) []byte {
	for range 3 {
		stripped := false
		for _, suf := range [...]string{"ations", "ation", "ions", "ion", "ally", "ing", "ed", "es", "er", "ly", "s", "e"} {
			if len(w) >= len(suf)+3 && string(w[len(w)-len(suf):]) == suf {
				w = w[:len(w)-len(suf)]
				stripped = true
				break
			}
		}
		if !stripped {
			break
		}
	}
	return w
}

func fnv[S ~string | ~[]byte](s S) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

var stopwords = setOf(
	"a", "an", "the", "on", "in", "of", "for", "to", "with", "when", "is", "are",
	"was", "were", "be", "been", "it", "its", "this", "that", "these", "those",
	"and", "or", "but", "by", "at", "as", "from", "into", "than", "then", "not",
	"no", "does", "do", "did", "doesn", "don", "didn", "has", "have", "had",
	"after", "before", "should", "would", "can", "could", "will", "instead", "got",
	"while", "via", "under", "over", "if", "so", "we", "i", "you", "our", "my",
	"there", "here", "which", "what", "who", "any", "all", "some", "also", "just",
	"still", "again", "only", "very", "too", "s", "t", "isn", "aren", "wasn",
	"given", "gets", "get", "being", "same", "one", "up", "out", "about",
	"seen", "see", "sees", "saw", "observed", "found", "noticed", "during", "qa",
)

// synonyms maps words QA reports use interchangeably to one token.
var synonyms = func() map[string]string {
	groups := map[string][]string{
		"crash":  {"panic", "panics", "panicked", "panicking", "crash", "crashes", "crashed", "crashing", "abort", "aborts", "aborted", "segfault", "segfaults", "sigsegv"},
		"hang":   {"hang", "hangs", "hung", "hanging", "freeze", "freezes", "froze", "frozen", "stall", "stalls", "stalled", "timeout", "timeouts", "timed"},
		"fail":   {"error", "errors", "err", "fail", "fails", "failed", "failing", "failure", "failures", "reject", "rejects", "rejected"},
		"leak":   {"leak", "leaks", "leaked", "leaking", "expose", "exposes", "exposed", "reveal", "reveals", "revealed", "disclose", "discloses", "disclosed"},
		"miss":   {"missing", "absent", "lack", "lacks", "lacking", "omit", "omits", "omitted", "without"},
		"slow":   {"slow", "slower", "slowdown", "slowness", "latency", "sluggish"},
		"stale":  {"stale", "outdated", "obsolete"},
		"broken": {"broken", "dead"},
		"wrong":  {"wrong", "incorrect", "bad", "invalid", "mismatch", "mismatched", "inconsistent"},
		"empty":  {"empty", "blank"},
		"accept": {"accept", "accepts", "accepted", "allow", "allows", "allowed", "permit", "permits", "permitted"},
		"return": {"return", "returns", "returned", "give", "gives", "gave", "yield", "yields", "respond", "responds", "responded"},
	}
	m := map[string]string{}
	for to, from := range groups {
		for _, f := range from {
			m[f] = to
		}
	}
	return m
}()

func setOf(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}
