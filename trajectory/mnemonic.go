package trajectory

import (
	"crypto/sha256"
	_ "embed"
	"errors"
	"fmt"
	"strings"

	"github.com/qafleet/fleetd/clip"
)

// bip39English is BIP-39's English wordlist, 2048 words in index order
// (bitcoin/bips, bip-0039/english.txt; SHA-256 2f5eed53…24dbda, checked by
// a test).
//
//go:embed bip39_english.txt
var bip39English string

// bip39Index maps each English word to its 11-bit index.
var bip39Index = func() map[string]uint16 {
	words := strings.Fields(bip39English)
	m := make(map[string]uint16, len(words))
	for i, w := range words {
		m[w] = uint16(i)
	}
	return m
}()

// Mnemonic phrase limits: BIP-39 phrases are 12 to 24 words in steps of 3.
const (
	minPhraseWords = 12
	maxPhraseWords = 24
	// maxStray is the most list words a run may hold beside its phrase.
	// Each window tried passes the checksum by chance (a 12-word one once
	// in 16), so few are tried.
	maxStray = 4
	// maxRunWords is the longest run of wordlist words searched for a
	// phrase. A longer run is a word list or prose of common words.
	maxRunWords = maxPhraseWords + maxStray
	// maxSep is the most bytes between two words of a phrase: a space,
	// ", " in a JSON array, "\n 12. " in a numbered list.
	maxSep = 12
	// minPhraseBytes is the shortest text a phrase fits in: 12 words of 3
	// letters and 11 separators.
	minPhraseBytes = minPhraseWords*4 - 1
)

// ErrMnemonicChecksum means words from the wordlist, in a valid count,
// whose checksum is wrong: prose or a typo, not a phrase a wallet made.
var ErrMnemonicChecksum = errors.New("mnemonic: checksum does not match")

// MnemonicEntropy reads words (in any ASCII case) as a BIP-39 English
// phrase and returns the entropy it encodes. The error names what is wrong:
// a count other than 12, 15, 18, 21 or 24, a word not in the list (by
// position), or a checksum that does not match (ErrMnemonicChecksum).
func MnemonicEntropy(words []string) ([]byte, error) {
	n := len(words)
	if n < minPhraseWords || n > maxPhraseWords || n%3 != 0 {
		return nil, fmt.Errorf("mnemonic: %d words, want 12, 15, 18, 21 or 24", n)
	}
	var idx [maxPhraseWords]uint16
	for i, w := range words {
		j, ok := wordIndex(w)
		if !ok {
			return nil, fmt.Errorf("mnemonic: word %d (%q) is not in the BIP-39 English list", i+1, clipWord(w))
		}
		idx[i] = j
	}
	bits, entLen, ok := packPhrase(idx[:n])
	if !ok {
		return nil, ErrMnemonicChecksum
	}
	return append([]byte(nil), bits[:entLen]...), nil
}

// clipWord shortens w for a message (clip.Text at 16 bytes).
func clipWord(w string) string { return clip.Text(w, 16) }

// wordIndex looks w up ignoring ASCII case, without allocating.
func wordIndex(w string) (uint16, bool) {
	if len(w) < 3 || len(w) > 8 {
		return 0, false // the list's words are 3 to 8 letters
	}
	var b [8]byte
	for i := 0; i < len(w); i++ {
		c := w[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b[i] = c
	}
	j, ok := bip39Index[string(b[:len(w)])]
	return j, ok
}

// packPhrase packs the 11-bit indexes (a valid count) into the entropy
// (the first entLen bytes of bits) and checksum bits, and checks the
// checksum: the first len(idx)/3 bits of the entropy's SHA-256.
func packPhrase(idx []uint16) (bits [33]byte, entLen int, ok bool) {
	for i, v := range idx {
		for b := 0; b < 11; b++ {
			if v&(1<<(10-b)) != 0 {
				p := i*11 + b
				bits[p/8] |= 0x80 >> (p % 8)
			}
		}
	}
	cs := len(idx) / 3 // checksum bits
	entLen = (len(idx)*11 - cs) / 8
	sum := sha256.Sum256(bits[:entLen])
	return bits, entLen, bits[entLen]>>(8-cs) == sum[0]>>(8-cs)
}

// MnemonicWords returns the words of a phrase span (a MnemonicSpans
// result; its markup skipped) in lower case: what a wallet joins with single spaces to make
// the seed.
func MnemonicWords(phrase string) []string {
	var out []string
	for i := 0; i < len(phrase); {
		if n := tagLen(phrase, i); n > 0 {
			i += n
			continue
		}
		if !isLetter(phrase[i]) {
			i++
			continue
		}
		n := runLen(phrase, i, isLetter)
		out = append(out, asciiLower(phrase[i:i+n]))
		i += n
	}
	return out
}

// token is a wordlist word found in text.
type token struct {
	start, end int
	idx        uint16
}

// MnemonicSpans returns the byte spans [start, end) of the BIP-39 English
// mnemonic phrases in s: 12, 15, 18, 21 or 24 wordlist words in a row (any
// ASCII case; between two words HTML tags and at most 12 other bytes with
// no letter, ':' or '=', and no digit or underscore next to a word) whose
// checksum matches. A ':' or '=' ends a run: "seed phrase: ..." names the
// phrase, and "seed" and "phrase" are list words. The checksum is what
// separates a phrase from prose: 12 list words in a row with a wrong one
// are not a phrase. A run of list words longer than a phrase by more than
// 4 words (a word list, not a secret) is not searched; in a shorter one
// each phrase-sized window is tried (see phrasesIn), so spans, in order of
// their start, may overlap. Linear in len(s).
func MnemonicSpans(s string) [][2]int {
	var out [][2]int
	var run []token
	flush := func() {
		out = phrasesIn(run, out)
		run = run[:0]
	}
	prevEnd, tags := -1, 0 // tags: bytes of markup since the last word
	label := false         // a ':' or '=' since the last word: what came before is a name
	for i := 0; i < len(s); {
		if n := tagLen(s, i); n > 0 {
			i += n
			tags += n
			continue
		}
		if !isLetter(s[i]) {
			if s[i] == ':' || s[i] == '=' {
				label = true
			}
			i++
			continue
		}
		n := runLen(s, i, isLetter)
		start, end := i, i+n
		i = end
		j, ok := wordIndex(s[start:end])
		if ok && (start > 0 && isWord(s[start-1]) || isWordAt(s, end)) {
			ok = false // part of an identifier or a number: "abandon2", "x_able"
		}
		if !ok {
			if len(run) > 0 {
				flush()
			}
			prevEnd = -1
			continue
		}
		if len(run) > 0 && (start-prevEnd-tags > maxSep || label) {
			flush()
		}
		tags, label = 0, false
		if len(run) <= maxRunWords {
			run = append(run, token{start, end, j})
		} else {
			run = run[:maxRunWords+1] // over the limit: phrasesIn drops it
		}
		prevEnd = end
	}
	flush()
	return out
}

// maxTag is the longest markup tag MnemonicSpans skips.
const maxTag = 120

// tagLen is the length of the HTML tag at i ("<li>", "</span>", "<span
// class=w>"), 0 if there is none: a phrase shown word by word in markup is
// still a phrase, and the crawl reads pages as text.
func tagLen(s string, i int) int {
	if s[i] != '<' || i+2 >= len(s) || !(isLetter(s[i+1]) || s[i+1] == '/') {
		return 0
	}
	for j := i + 1; j < len(s) && j-i < maxTag; j++ {
		switch s[j] {
		case '>':
			return j - i + 1
		case '<', '\n':
			return 0
		}
	}
	return 0
}

// phrasesIn appends the spans of the phrases in one run of list words:
// the whole run when it is one; otherwise every window that is, leaving
// out at most maxStray words of the run (a label such as "wallet seed" is
// list words too). Windows may overlap: which of them is the secret only
// the chain can say, and redaction covers them all.
func phrasesIn(run []token, out [][2]int) [][2]int {
	if len(run) < minPhraseWords || len(run) > maxRunWords {
		return out
	}
	var idx [maxPhraseWords]uint16
	valid := func(i, n int) bool {
		for k := range n {
			idx[k] = run[i+k].idx
		}
		_, _, ok := packPhrase(idx[:n])
		return ok
	}
	if n := len(run); n <= maxPhraseWords && n%3 == 0 && valid(0, n) {
		return append(out, [2]int{run[0].start, run[n-1].end})
	}
	for i := 0; i+minPhraseWords <= len(run); i++ {
		for n := maxPhraseWords; n >= minPhraseWords; n -= 3 {
			if i+n <= len(run) && len(run)-n <= maxStray && valid(i, n) {
				out = append(out, [2]int{run[i].start, run[i+n-1].end})
			}
		}
	}
	return out
}
