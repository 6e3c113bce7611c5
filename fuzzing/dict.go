package fuzzing

import (
	"regexp"
	"slices"
	"sort"
	"strings"
)

// Dictionary holds the tokens harvested from a seed corpus: what a
// structure-aware mutation inserts and splices. Markup parsers crash on
// unusual nestings of tags they know, compilers on unusual arrangements of
// their keywords and brackets; blind byte mutation rarely builds either.
type Dictionary struct {
	Words  []string // identifiers and keywords: let, while, href
	Tags   []string // markup tags as written: <a href="/">, </b>, <br/>
	Names  []string // markup element names: template, object, b
	Puncts []string // operator and punctuation runs: ==, ->, ]]
	Pairs  []string // bracket and quote pairs, empty: (), [], {}, <>, "", ''
	Frags  []string // balanced fragments: a bracket pair or an element with its contents
}

// Dictionary limits.
const (
	maxDictEntries = 512
	maxFragBytes   = 256
)

var (
	wordRE  = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_-]{0,31}`)
	tagRE   = regexp.MustCompile(`</?[A-Za-z][A-Za-z0-9:-]{0,31}(?:\s[^<>]{0,80})?/?>`)
	punctRE = regexp.MustCompile("[!-/:-@\\[-`{-~]{1,3}")
)

// Harvest builds a dictionary from seed inputs: the distinct words, tags
// (reduced to their names, open and close), punctuation runs, every bracket
// pair that occurs, and balanced fragments, at most 512 of each, most
// frequent first.
func Harvest(seeds [][]byte) *Dictionary {
	count := func() map[string]int { return map[string]int{} }
	words, tags, names, puncts, pairs, frags := count(), count(), count(), count(), count(), count()
	for _, s := range seeds {
		text := string(s)
		for _, w := range wordRE.FindAllString(text, -1) {
			words[w]++
		}
		for _, t := range tagRE.FindAllString(text, -1) {
			tags[t]++
			// The bare tag too: <a href="x"> -> <a>, so any attribute-free
			// open tag can be spliced.
			if m := tagName.FindStringSubmatch(t); m != nil {
				tags["<"+m[1]+m[2]+">"]++
				names[strings.ToLower(m[2])]++
			}
		}
		for _, p := range punctRE.FindAllString(text, -1) {
			puncts[p]++
		}
		for _, pr := range BracketPairs(text) {
			open, close := text[pr[0]], text[pr[1]]
			pairs[string([]byte{open, close})]++
			if f := text[pr[0] : pr[1]+1]; len(f) <= maxFragBytes {
				frags[f]++
			}
		}
		for _, q := range []string{`""`, `''`, "``"} {
			if slices.Contains(s, q[0]) {
				pairs[q]++
			}
		}
		for _, e := range elementsOf(text) {
			frags[e]++
		}
	}
	return &Dictionary{Words: top(words), Tags: top(tags), Names: top(names), Puncts: top(puncts), Pairs: top(pairs), Frags: top(frags)}
}

var tagName = regexp.MustCompile(`^<(/?)([A-Za-z][A-Za-z0-9:-]*)`)

// top returns the keys of m, most frequent first (ties by value), at most
// maxDictEntries.
func top(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		if m[out[i]] != m[out[j]] {
			return m[out[i]] > m[out[j]]
		}
		return out[i] < out[j]
	})
	if len(out) > maxDictEntries {
		out = out[:maxDictEntries]
	}
	return out
}

// Len is the number of entries.
func (d *Dictionary) Len() int {
	if d == nil {
		return 0
	}
	return len(d.Words) + len(d.Tags) + len(d.Names) + len(d.Puncts) + len(d.Pairs) + len(d.Frags)
}

// Tokens returns every entry of the dictionary but fragments, for an
// AFL++ dictionary file.
func (d *Dictionary) Tokens() []string {
	if d == nil {
		return nil
	}
	var out []string
	for _, l := range [][]string{d.Tags, d.Words, d.Puncts, d.Pairs} {
		out = append(out, l...)
	}
	return out
}

// BracketPairs returns the matching (), [] and {} pairs of s as byte
// offsets of the opening and closing bracket. Brackets inside double-quoted
// strings do not count; a mismatch discards the open brackets so far.
func BracketPairs(s string) [][2]int {
	var pairs [][2]int
	var stack []int
	inStr := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if inStr {
			switch c {
			case '\\':
				i++
			case '"', '\n':
				inStr = false
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
		case '(', '[', '{':
			stack = append(stack, i)
		case ')', ']', '}':
			if len(stack) == 0 {
				continue
			}
			o := stack[len(stack)-1]
			if s[o] != map[byte]byte{')': '(', ']': '[', '}': '{'}[c] {
				stack = stack[:0]
				continue
			}
			stack = stack[:len(stack)-1]
			pairs = append(pairs, [2]int{o, i})
		}
	}
	return pairs
}

var openTag = regexp.MustCompile(`<([A-Za-z][A-Za-z0-9:-]*)[^<>]*>`)

// elementsOf returns markup elements of s, "<x ...>...</x>", up to
// maxFragBytes long: the fragments nesting mutations put inside each other.
func elementsOf(s string) []string {
	var out []string
	for _, loc := range openTag.FindAllStringSubmatchIndex(s, 64) {
		name := s[loc[2]:loc[3]]
		end := loc[1] + maxFragBytes
		if end > len(s) {
			end = len(s)
		}
		closing := "</" + name + ">"
		if i := indexFold(s[loc[1]:end], closing); i >= 0 {
			out = append(out, s[loc[0]:loc[1]+i+len(closing)])
		}
	}
	return out
}

func indexFold(s, sub string) int {
	n := len(sub)
	for i := 0; i+n <= len(s); i++ {
		if equalFoldASCII(s[i:i+n], sub) {
			return i
		}
	}
	return -1
}

func equalFoldASCII(a, b string) bool {
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
