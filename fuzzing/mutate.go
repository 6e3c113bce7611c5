package fuzzing

import (
	"bytes"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
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
	// Program text (NewTextMutator, MutateText): the corpus's identifiers
	// and lines, and the analyses the operators use.
	idents, lines []string
	text          TextAnalyses
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

// Program text: the compiler playbook's mutations of seed programs
// (specialists/fuzzstage), operators over text that keep to rune
// boundaries, on the same Mutator.

// MaxTextMutant bounds a text mutant's size: big enough for deep nesting and long
// identifiers, small enough to stay cheap to compile and to record.
const MaxTextMutant = 32 << 10

// IdentRE and NumberRE find identifiers and numbers in program text: for
// the mutations here and perf's inputs that grow.
var (
	IdentRE  = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)
	NumberRE = regexp.MustCompile(`\b\d+(?:\.\d+)?(?:[eE][+-]?\d+)?\b`)
	condRE   = regexp.MustCompile(`\b(?:if|while|for|until|unless|elif|elsif|when)\b[ \t]*`)
)

// textStructural are the tokens inserted by the structural mutation.
var textStructural = []string{"{", "}", "(", ")", "[", "]", ";", ",", `"`, "'", `\`, "\n"}

// textBoundaries are the values numbers are replaced with: zero (division),
// minus one, the 32- and 64-bit signed overflow points, a float overflow.
var textBoundaries = []string{"0", "-1", "2147483648", "9223372036854775808", "1e309"}

// NewTextMutator returns a mutator of program text drawing from rng
// (MutateText): its tokens are the corpus's identifiers and keywords (512
// at most), its lines the corpus's non-blank lines (1024 at most); a
// gives the analyses of a text its operators use (nil fields: computed
// each time; the compiler playbook memoizes them across a replay).
func NewTextMutator(rng *rand.Rand, corpus []string, a TextAnalyses) *Mutator {
	m := &Mutator{rng: rng, text: a.orDefaults()}
	for _, src := range corpus {
		for _, tok := range IdentRE.FindAllString(src, -1) {
			if !slices.Contains(m.idents, tok) && len(m.idents) < 512 {
				m.idents = append(m.idents, tok)
			}
		}
		for l := range strings.Lines(src) {
			if strings.TrimSpace(l) != "" && len(m.lines) < 1024 {
				m.lines = append(m.lines, strings.TrimRight(l, "\n")+"\n")
			}
		}
	}
	return m
}

// textOp is one operator on program text.
type textOp struct {
	name string
	fn   func(m *Mutator, s string) string
}

// textOps, weighted by repetition: structure-aware operators come up
// more often because they reach deeper into a parser than byte noise.
var textOps = []textOp{
	{"flip", (*Mutator).textFlip},
	{"delete", (*Mutator).textDeleteSpan},
	{"insert-structural", (*Mutator).textInsertStructural},
	{"duplicate-chunk", (*Mutator).textDuplicateChunk},
	{"splice-line", (*Mutator).textSpliceLine},
	{"insert-token", (*Mutator).textInsertToken},
	{"empty-brackets", (*Mutator).textEmptyBrackets},
	{"empty-brackets", (*Mutator).textEmptyBrackets},
	{"empty-brackets", (*Mutator).textEmptyBrackets},
	{"boundary-number", (*Mutator).textBoundaryNumber},
	{"boundary-number", (*Mutator).textBoundaryNumber},
	{"condition-true", (*Mutator).textConditionTrue},
	{"condition-true", (*Mutator).textConditionTrue},
	{"long-identifier", (*Mutator).textLongIdentifier},
	{"deep-nesting", (*Mutator).textDeepNesting},
}

// MutateText applies one to three program-text operators to s and
// returns the mutant (at most 32 KiB) and the operators' names.
func (m *Mutator) MutateText(s string) (string, []string) {
	n := 1 + m.rng.IntN(3)
	var ops []string
	for range n {
		op := textOps[m.rng.IntN(len(textOps))]
		if t := op.fn(m, s); len(t) <= MaxTextMutant {
			s = t
			ops = append(ops, op.name)
		}
	}
	return s, ops
}

// textPos returns a random rune-aligned position in s (0..len(s)).
func (m *Mutator) textPos(s string) int {
	if s == "" {
		return 0
	}
	i := m.rng.IntN(len(s) + 1)
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i--
	}
	return i
}

func (m *Mutator) textFlip(s string) string {
	if s == "" {
		return textStructural[m.rng.IntN(len(textStructural))]
	}
	i := m.textPos(s)
	if i == len(s) {
		i = 0
	}
	_, size := utf8.DecodeRuneInString(s[i:])
	const alphabet = "abcxyzAZ019_ +-*/%=<>!&|^~.:?@#$`{}()[];,\"'\\\n\t"
	return s[:i] + string(alphabet[m.rng.IntN(len(alphabet))]) + s[i+size:]
}

// textSpan returns a random rune-aligned span of s of 1 to maxLen bytes
// (s not empty).
func (m *Mutator) textSpan(s string, maxLen int) (int, int) {
	i := m.textPos(s)
	j := min(len(s), i+1+m.rng.IntN(maxLen))
	for j < len(s) && !utf8.RuneStart(s[j]) {
		j++
	}
	return i, j
}

func (m *Mutator) textDeleteSpan(s string) string {
	if s == "" {
		return s
	}
	i, j := m.textSpan(s, 16)
	return s[:i] + s[j:]
}

func (m *Mutator) textInsertStructural(s string) string {
	i := m.textPos(s)
	return s[:i] + textStructural[m.rng.IntN(len(textStructural))] + s[i:]
}

func (m *Mutator) textDuplicateChunk(s string) string {
	if s == "" {
		return s
	}
	i, j := m.textSpan(s, 64)
	k := m.textPos(s)
	return s[:k] + s[i:j] + s[k:]
}

func (m *Mutator) textSpliceLine(s string) string {
	if len(m.lines) == 0 {
		return m.textDuplicateChunk(s)
	}
	l := m.lines[m.rng.IntN(len(m.lines))]
	starts := []int{0}
	for i := range len(s) {
		if s[i] == '\n' {
			starts = append(starts, i+1)
		}
	}
	at := starts[m.rng.IntN(len(starts))]
	return s[:at] + l + s[at:]
}

func (m *Mutator) textInsertToken(s string) string {
	if len(m.idents) == 0 {
		return m.textInsertStructural(s)
	}
	i := m.textPos(s)
	return s[:i] + " " + m.idents[m.rng.IntN(len(m.idents))] + " " + s[i:]
}

func (m *Mutator) textEmptyBrackets(s string) string {
	pairs := m.text.Brackets(s)
	if len(pairs) == 0 {
		return m.textInsertStructural(s)
	}
	pr := pairs[m.rng.IntN(len(pairs))]
	return s[:pr[0]+1] + s[pr[1]:]
}

func (m *Mutator) textBoundaryNumber(s string) string {
	locs := m.text.Numbers(s)
	v := textBoundaries[m.rng.IntN(len(textBoundaries))]
	if len(locs) == 0 {
		i := m.textPos(s)
		return s[:i] + v + s[i:]
	}
	l := locs[m.rng.IntN(len(locs))]
	return s[:l[0]] + v + s[l[1]:]
}

func (m *Mutator) textConditionTrue(s string) string {
	conds := m.text.Conditions(s)
	if len(conds) == 0 {
		return m.textBoundaryNumber(s)
	}
	c := conds[m.rng.IntN(len(conds))]
	lit := "true"
	if m.rng.IntN(4) == 0 {
		lit = "1"
	}
	return c.Apply(s, lit, m.rng.IntN(2) == 0)
}

func (m *Mutator) textLongIdentifier(s string) string {
	ids := IdentRE.FindAllString(s, -1)
	if len(ids) == 0 {
		return m.textInsertToken(s)
	}
	id := ids[m.rng.IntN(len(ids))]
	long := strings.Repeat(id, 1+(256+m.rng.IntN(4096))/len(id))
	return replaceWholeWord(s, id, long)
}

func (m *Mutator) textDeepNesting(s string) string {
	depth := 64 << m.rng.IntN(5) // 64 .. 1024
	i := m.textPos(s)
	if m.rng.IntN(2) == 0 {
		if locs := m.text.Numbers(s); len(locs) > 0 {
			l := locs[m.rng.IntN(len(locs))]
			return s[:l[0]] + strings.Repeat("(", depth) + s[l[0]:l[1]] + strings.Repeat(")", depth) + s[l[1]:]
		}
		return s[:i] + strings.Repeat("(", depth) + "1" + strings.Repeat(")", depth) + s[i:]
	}
	return s[:i] + strings.Repeat("{", depth) + strings.Repeat("}", depth) + s[i:]
}

// TextAnalyses are the analyses of a program text the text operators
// use; a nil field is computed each time (BracketPairs, NumberRE,
// Conditions).
type TextAnalyses struct {
	Brackets   func(string) [][2]int
	Numbers    func(string) [][]int
	Conditions func(string) []Condition
}

func (a TextAnalyses) orDefaults() TextAnalyses {
	if a.Brackets == nil {
		a.Brackets = BracketPairs
	}
	if a.Numbers == nil {
		a.Numbers = func(s string) [][]int { return NumberRE.FindAllStringIndex(s, -1) }
	}
	if a.Conditions == nil {
		a.Conditions = Conditions
	}
	return a
}

// Condition is the expression after a control keyword and the block that
// follows it, as byte offsets.
type Condition struct {
	start, end int // the expression (inside parentheses when it has them)
	body       [2]int
	hasBody    bool
}

// Conditions finds "if|while|for|... EXPR {" and "KEYWORD (EXPR) {" in s.
func Conditions(s string) []Condition {
	pairs := BracketPairs(s)
	pairAt := func(open int) (int, bool) {
		for _, pr := range pairs {
			if pr[0] == open {
				return pr[1], true
			}
		}
		return 0, false
	}
	var out []Condition
	for _, loc := range condRE.FindAllStringIndex(s, -1) {
		c := Condition{start: loc[1]}
		after := -1 // where the guarded block may start
		if c.start < len(s) && s[c.start] == '(' {
			closing, ok := pairAt(c.start)
			if !ok {
				continue
			}
			c.start, c.end, after = c.start+1, closing, closing+1
		} else {
			c.end = c.start
			for c.end < len(s) && s[c.end] != '{' && s[c.end] != '\n' && s[c.end] != ':' {
				c.end++
			}
			after = c.end
			for c.end > c.start && (s[c.end-1] == ' ' || s[c.end-1] == '\t') {
				c.end--
			}
		}
		if c.end <= c.start {
			continue
		}
		for after < len(s) && strings.IndexByte(" \t\r\n", s[after]) >= 0 {
			after++
		}
		if after < len(s) && s[after] == '{' {
			if closing, ok := pairAt(after); ok {
				c.body, c.hasBody = [2]int{after, closing}, true
			}
		}
		out = append(out, c)
	}
	return out
}

// Apply replaces the condition with lit and, when empty is set, empties
// the block it guards.
func (c Condition) Apply(s, lit string, empty bool) string {
	if empty && c.hasBody {
		s = s[:c.body[0]+1] + s[c.body[1]:]
	}
	return s[:c.start] + lit + s[c.end:]
}

// replaceWholeWord replaces whole-word occurrences of old in s.
func replaceWholeWord(s, old, new string) string {
	re := regexp.MustCompile(`\b` + regexp.QuoteMeta(old) + `\b`)
	return re.ReplaceAllLiteralString(s, new)
}
