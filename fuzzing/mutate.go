package fuzzing

import (
	"bytes"
	"math/rand/v2"
	"strings"
)

// maxInput bounds a mutant's size: room for deep nesting and long tokens,
// small enough that an input stays cheap to run and to report.
const maxInput = 64 << 10

// Mutator makes mutants. Blind (no dictionary) it does what a byte-level
// havoc stage does: flips, interesting bytes, deletions, insertions,
// duplicated chunks, and splicing with another corpus input. With a
// dictionary it also inserts and replaces harvested tokens, builds runs of
// tags ("tag soup"), splices balanced fragments of the corpus, nests a
// fragment inside a bracket pair or element, wraps spans, repeats openers
// into deep nesting and empties bracket pairs.
type Mutator struct {
	rng  *rand.Rand
	dict *Dictionary // nil: blind
}

// NewMutator returns a mutator drawing from rng; dict nil makes it blind.
func NewMutator(rng *rand.Rand, dict *Dictionary) *Mutator {
	if dict != nil && dict.Len() == 0 {
		dict = nil
	}
	return &Mutator{rng: rng, dict: dict}
}

type mutOp func(m *Mutator, in []byte, pool [][]byte) []byte

var blindOps = []mutOp{
	(*Mutator).flipBit, (*Mutator).interestingByte, (*Mutator).randomByte,
	(*Mutator).deleteSpan, (*Mutator).deleteSpan, (*Mutator).insertBytes,
	(*Mutator).duplicateSpan, (*Mutator).spliceBytes, (*Mutator).crossover,
}

// dictOps are weighted by repetition toward the operators that build
// structure.
var dictOps = []mutOp{
	(*Mutator).insertWord, (*Mutator).replaceWord, (*Mutator).insertPunct, (*Mutator).insertPair,
	(*Mutator).tagSoup, (*Mutator).tagSoup, (*Mutator).insertTag, (*Mutator).insertTag,
	(*Mutator).insertFrag, (*Mutator).insertFrag, (*Mutator).nestFrag, (*Mutator).nestFrag,
	(*Mutator).wrapSpan, (*Mutator).deepNest, (*Mutator).emptyPair, (*Mutator).emptyPair,
	(*Mutator).deleteSpan, (*Mutator).duplicateSpan, (*Mutator).spliceLines, (*Mutator).crossover,
}

// Mutate returns a mutant of in: one to four stacked operators, spliced
// material drawn from pool (the corpus). The result is at most 64 KiB.
func (m *Mutator) Mutate(in []byte, pool [][]byte) []byte {
	out := bytes.Clone(in)
	n := 1 + m.rng.IntN(4)
	for range n {
		var op mutOp
		if m.dict == nil || m.rng.IntN(5) == 0 {
			op = blindOps[m.rng.IntN(len(blindOps))]
		} else {
			op = dictOps[m.rng.IntN(len(dictOps))]
		}
		if next := op(m, out, pool); len(next) <= maxInput {
			out = next
		}
	}
	return out
}

func (m *Mutator) pos(b []byte) int { return m.rng.IntN(len(b) + 1) }

func (m *Mutator) pick(list []string) string { return list[m.rng.IntN(len(list))] }

func insert(b []byte, at int, s []byte) []byte {
	out := make([]byte, 0, len(b)+len(s))
	out = append(out, b[:at]...)
	out = append(out, s...)
	return append(out, b[at:]...)
}

func (m *Mutator) flipBit(b []byte, _ [][]byte) []byte {
	if len(b) == 0 {
		return []byte{byte(m.rng.IntN(256))}
	}
	i := m.rng.IntN(len(b))
	b[i] ^= 1 << m.rng.IntN(8)
	return b
}

var interesting = []byte{0, 0xff, 0x7f, 0x80, '\n', '\r', '\t', ' ', '<', '>', '"', '\'', '\\', '{', '}', '[', ']', '(', ')', ';', ',', '-', '0', '9', '='}

func (m *Mutator) interestingByte(b []byte, _ [][]byte) []byte {
	c := interesting[m.rng.IntN(len(interesting))]
	if len(b) == 0 || m.rng.IntN(2) == 0 {
		return insert(b, m.pos(b), []byte{c})
	}
	b[m.rng.IntN(len(b))] = c
	return b
}

func (m *Mutator) randomByte(b []byte, _ [][]byte) []byte {
	if len(b) == 0 {
		return []byte{byte(m.rng.IntN(256))}
	}
	b[m.rng.IntN(len(b))] = byte(m.rng.IntN(256))
	return b
}

func (m *Mutator) span(b []byte, maxLen int) (int, int) {
	i := m.rng.IntN(len(b))
	return i, min(len(b), i+1+m.rng.IntN(maxLen))
}

func (m *Mutator) deleteSpan(b []byte, _ [][]byte) []byte {
	if len(b) == 0 {
		return b
	}
	i, j := m.span(b, 32)
	return append(b[:i], b[j:]...)
}

func (m *Mutator) insertBytes(b []byte, _ [][]byte) []byte {
	n := 1 + m.rng.IntN(8)
	s := make([]byte, n)
	for i := range s {
		s[i] = byte(m.rng.IntN(256))
	}
	return insert(b, m.pos(b), s)
}

func (m *Mutator) duplicateSpan(b []byte, _ [][]byte) []byte {
	if len(b) == 0 {
		return b
	}
	i, j := m.span(b, 64)
	return insert(b, m.pos(b), bytes.Clone(b[i:j]))
}

// other returns a random corpus input other than nothing.
func (m *Mutator) other(pool [][]byte) []byte {
	if len(pool) == 0 {
		return nil
	}
	return pool[m.rng.IntN(len(pool))]
}

func (m *Mutator) spliceBytes(b []byte, pool [][]byte) []byte {
	o := m.other(pool)
	if len(o) == 0 {
		return m.duplicateSpan(b, pool)
	}
	i, j := m.span(o, 128)
	return insert(b, m.pos(b), bytes.Clone(o[i:j]))
}

func (m *Mutator) crossover(b []byte, pool [][]byte) []byte {
	o := m.other(pool)
	if len(o) == 0 {
		return b
	}
	cut, cut2 := m.pos(b), m.pos(o)
	return append(bytes.Clone(b[:cut]), o[cut2:]...)
}

func (m *Mutator) insertWord(b []byte, _ [][]byte) []byte {
	if len(m.dict.Words) == 0 {
		return m.insertPunct(b, nil)
	}
	sep := []string{" ", "", "\n", "."}[m.rng.IntN(4)]
	return insert(b, m.pos(b), []byte(sep+m.pick(m.dict.Words)+sep))
}

func (m *Mutator) replaceWord(b []byte, _ [][]byte) []byte {
	locs := wordRE.FindAllIndex(b, 256)
	if len(locs) == 0 || len(m.dict.Words) == 0 {
		return m.insertWord(b, nil)
	}
	l := locs[m.rng.IntN(len(locs))]
	return append(append(bytes.Clone(b[:l[0]]), m.pick(m.dict.Words)...), b[l[1]:]...)
}

func (m *Mutator) insertPunct(b []byte, _ [][]byte) []byte {
	if len(m.dict.Puncts) == 0 {
		return m.interestingByte(b, nil)
	}
	return insert(b, m.pos(b), []byte(m.pick(m.dict.Puncts)))
}

func (m *Mutator) insertPair(b []byte, _ [][]byte) []byte {
	if len(m.dict.Pairs) == 0 {
		return m.insertPunct(b, nil)
	}
	return insert(b, m.pos(b), []byte(m.pick(m.dict.Pairs)))
}

// tag returns a tag to insert: mostly a bare open tag of a known element
// (each element equally likely, however often the corpus uses it), now and
// then a closing one or a tag as the corpus wrote it, attributes and all.
func (m *Mutator) tag() string {
	switch r := m.rng.IntN(8); {
	case len(m.dict.Names) > 0 && r < 5:
		return "<" + m.pick(m.dict.Names) + ">"
	case len(m.dict.Names) > 0 && r < 6:
		return "</" + m.pick(m.dict.Names) + ">"
	}
	return m.pick(m.dict.Tags)
}

func (m *Mutator) insertTag(b []byte, _ [][]byte) []byte {
	if len(m.dict.Tags) == 0 {
		return m.insertFrag(b, nil)
	}
	return insert(b, m.pos(b), []byte(m.tag()))
}

// tagSoup inserts two to six tags in a row: unusual nestings of known
// elements are where markup parsers' state machines break.
func (m *Mutator) tagSoup(b []byte, _ [][]byte) []byte {
	if len(m.dict.Tags) == 0 {
		return m.insertFrag(b, nil)
	}
	var s strings.Builder
	for range 2 + m.rng.IntN(5) {
		s.WriteString(m.tag())
	}
	return insert(b, m.pos(b), []byte(s.String()))
}

func (m *Mutator) insertFrag(b []byte, pool [][]byte) []byte {
	if len(m.dict.Frags) == 0 {
		return m.spliceBytes(b, pool)
	}
	return insert(b, m.pos(b), []byte(m.pick(m.dict.Frags)))
}

// nestFrag puts a corpus fragment just inside one of b's bracket pairs or
// elements, nesting known structure one level deeper.
func (m *Mutator) nestFrag(b []byte, pool [][]byte) []byte {
	if len(m.dict.Frags) == 0 {
		return m.spliceBytes(b, pool)
	}
	f := []byte(m.pick(m.dict.Frags))
	if pairs := BracketPairs(string(b)); len(pairs) > 0 && m.rng.IntN(2) == 0 {
		p := pairs[m.rng.IntN(len(pairs))]
		return insert(b, p[0]+1, f)
	}
	if locs := openTag.FindAllIndex(b, 64); len(locs) > 0 {
		l := locs[m.rng.IntN(len(locs))]
		return insert(b, l[1], f)
	}
	return insert(b, m.pos(b), f)
}

func (m *Mutator) wrapSpan(b []byte, _ [][]byte) []byte {
	if len(b) == 0 {
		return m.insertPair(b, nil)
	}
	i, j := m.span(b, 64)
	open, close := "(", ")"
	switch {
	case len(m.dict.Tags) > 0 && m.rng.IntN(2) == 0:
		t := m.pick(m.dict.Tags)
		if mm := tagName.FindStringSubmatch(t); mm != nil {
			open, close = "<"+mm[2]+">", "</"+mm[2]+">"
		}
	case len(m.dict.Pairs) > 0:
		p := m.pick(m.dict.Pairs)
		open, close = p[:1], p[1:]
	}
	out := make([]byte, 0, len(b)+len(open)+len(close))
	out = append(out, b[:i]...)
	out = append(out, open...)
	out = append(out, b[i:j]...)
	out = append(out, close...)
	return append(out, b[j:]...)
}

// deepNest repeats an opener (a bracket or an open tag) 16 to 1024 times,
// with the matching closers after it half of the time.
func (m *Mutator) deepNest(b []byte, _ [][]byte) []byte {
	open, close := "(", ")"
	if len(m.dict.Tags) > 0 && m.rng.IntN(2) == 0 {
		if mm := tagName.FindStringSubmatch(m.pick(m.dict.Tags)); mm != nil {
			open, close = "<"+mm[2]+">", "</"+mm[2]+">"
		}
	} else if len(m.dict.Pairs) > 0 {
		p := m.pick(m.dict.Pairs)
		open, close = p[:1], p[1:]
	}
	n := 16 << m.rng.IntN(7)
	s := strings.Repeat(open, n)
	if m.rng.IntN(2) == 0 {
		s += strings.Repeat(close, n)
	}
	return insert(b, m.pos(b), []byte(s))
}

func (m *Mutator) emptyPair(b []byte, _ [][]byte) []byte {
	pairs := BracketPairs(string(b))
	if len(pairs) == 0 {
		return m.deleteSpan(b, nil)
	}
	p := pairs[m.rng.IntN(len(pairs))]
	return append(bytes.Clone(b[:p[0]+1]), b[p[1]:]...)
}

func (m *Mutator) spliceLines(b []byte, pool [][]byte) []byte {
	o := m.other(pool)
	if len(o) == 0 {
		return m.duplicateSpan(b, pool)
	}
	lines := bytes.SplitAfter(o, []byte("\n"))
	l := lines[m.rng.IntN(len(lines))]
	at, p := 0, m.pos(b)
	if idx := bytes.IndexByte(b[p:], '\n'); idx >= 0 {
		at = p + idx + 1
	}
	return insert(b, at, l)
}
