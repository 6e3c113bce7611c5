package fleet

import (
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Fingerprint returns the identity triage groups findings by: 16 lowercase
// hex digits, the first 64 bits of a SHA-256 over
//
//	surface 0x00 "state" 0x00 f.State()                   when f has a state= (KeyState)
//	surface 0x00 "repro" 0x00 NormalizeRepro(*f.Repro)    else when f has a repro
//	surface 0x00 "summary" 0x00 NormalizeSummary(f.Summary) otherwise
//
// so the same bug reported twice, with its repro JSON written with other
// spacing, case or key order, gets the same fingerprint, and the same repro
// against another surface does not. A crash state names the bug rather
// than one input that shows it, so two inputs crashing the same way have one
// fingerprint (docs/architecture.md, fuzzing). The definition is fixed: a
// change would split every existing group in the log, so tests pin known
// values (findings without state= hash exactly as before it existed).
//
// SHA-256 rather than a faster non-cryptographic hash because the log is
// permissionless and fingerprints drive deduplication: with FNV anyone could
// craft an entry that collides with a real finding and gets it deduplicated
// away; with SHA-256 that takes a 64-bit second preimage.
//
// Fingerprint always computes; it ignores f.Fingerprint (the writer's fp=),
// which is only a claim.
func Fingerprint(f Finding) string {
	bp := hashInputPool.Get().(*[]byte)
	b := append((*bp)[:0], f.Surface...)
	if st := f.State(); st != "" && !f.FreeForm {
		b = append(b, "\x00state\x00"...)
		b = append(b, st...)
	} else if f.Repro != nil {
		b = append(b, "\x00repro\x00"...)
		b = appendNormalizedRepro(b, f.Repro.Tool, f.Repro.Args)
	} else {
		b = append(b, "\x00summary\x00"...)
		b = appendNormalizedSummary(b, f.Summary)
	}
	sum := sha256.Sum256(b)
	if cap(b) <= maxPooledHashInput {
		*bp = b // keep the grown buffer for the next call
		hashInputPool.Put(bp)
	}
	var out [16]byte
	hex.Encode(out[:], sum[:8])
	return string(out[:])
}

// hashInputPool recycles Fingerprint's buffers: the JSON canonicalizer is
// recursive, so escape analysis cannot keep a buffer passed to it on the
// stack, and triage fingerprints every entry of the log.
var hashInputPool = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// maxPooledHashInput keeps one huge summary from pinning its buffer forever.
const maxPooledHashInput = 64 << 10

// NormalizeRepro returns the form of r that fingerprints compare: the tool
// lowercased, a space, and the canonical JSON of the args (object members
// sorted recursively, no insignificant whitespace, strings unescaped where
// possible, everything lowercased, whitespace runs inside strings collapsed
// to one space). Args that are not valid JSON are lowercased with all
// whitespace removed instead, so even a broken repro groups stably.
func NormalizeRepro(r Repro) string {
	return string(appendNormalizedRepro(nil, r.Tool, r.Args))
}

func appendNormalizedRepro(dst []byte, tool string, args []byte) []byte {
	for _, r := range tool {
		dst = utf8.AppendRune(dst, lowerRune(r))
	}
	dst = append(dst, ' ')
	if out, ok := appendCanonicalJSON(dst, args); ok {
		return out
	}
	for i := 0; i < len(args); {
		r, size := utf8.DecodeRune(args[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, args[i])
		case !isSpaceRune(r):
			dst = utf8.AppendRune(dst, lowerRune(r))
		}
		i += size
	}
	return dst
}

// NormalizeSummary returns the form of a summary that fingerprints compare:
// lowercased, whitespace runs collapsed to one space, trimmed, and trailing
// punctuation removed ("Crash!" and "crash" are the same report; a summary
// Format shortened loses its "…" too). Invalid UTF-8 bytes are kept as is.
func NormalizeSummary(s string) string {
	return string(appendNormalizedSummary(nil, s))
}

// summaryCopy marks the bytes that NormalizeSummary keeps unchanged:
// printable ASCII but space and A-Z.
var summaryCopy = func() (t [256]bool) {
	for c := 0x21; c <= 0x7E; c++ {
		t[c] = !('A' <= c && c <= 'Z')
	}
	return t
}()

func appendNormalizedSummary(dst []byte, s string) []byte {
	start := len(dst)
	pendingSpace := false
	for i := 0; i < len(s); {
		c := s[i]
		if summaryCopy[c] {
			// Copy a run of bytes that are their own normal form at once.
			j := i + 1
			for j < len(s) && summaryCopy[s[j]] {
				j++
			}
			if pendingSpace {
				dst = append(dst, ' ')
				pendingSpace = false
			}
			dst = append(dst, s[i:j]...)
			i = j
			continue
		}
		if c < utf8.RuneSelf {
			i++
			if isSpaceRune(rune(c)) {
				pendingSpace = len(dst) > start
				continue
			}
			if pendingSpace {
				dst = append(dst, ' ')
				pendingSpace = false
			}
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			dst = append(dst, c)
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			if pendingSpace {
				dst = append(dst, ' ')
				pendingSpace = false
			}
			dst = append(dst, c)
			i++
			continue
		}
		i += size
		if unicode.IsSpace(r) {
			pendingSpace = len(dst) > start
			continue
		}
		if pendingSpace {
			dst = append(dst, ' ')
			pendingSpace = false
		}
		dst = utf8.AppendRune(dst, unicode.ToLower(r))
	}
	// Strip trailing punctuation; a space it uncovers goes too.
	for len(dst) > start {
		r, size := utf8.DecodeLastRune(dst[start:])
		if r == utf8.RuneError && size == 1 || !unicode.IsPunct(r) && r != ' ' {
			break
		}
		dst = dst[:len(dst)-size]
	}
	return dst
}
