package fuzzstage

import (
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/qafleet/fleetd/fuzzing"
	"github.com/qafleet/fleetd/specialists/probe"
)

// maxMutant bounds a mutant's size: big enough for deep nesting and long
// identifiers, small enough to stay cheap to compile and to record.
const maxMutant = 32 << 10

// IdentRE and NumberRE find identifiers and numbers in program text: for
// the mutations here and perf's inputs that grow.
var (
	IdentRE  = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)
	NumberRE = regexp.MustCompile(`\b\d+(?:\.\d+)?(?:[eE][+-]?\d+)?\b`)
	condRE   = regexp.MustCompile(`\b(?:if|while|for|until|unless|elif|elsif|when)\b[ \t]*`)
)

// structural are the tokens inserted by the structural mutation.
var structural = []string{"{", "}", "(", ")", "[", "]", ";", ",", `"`, "'", `\`, "\n"}

// boundaries are the values numbers are replaced with: zero (division),
// minus one, the 32- and 64-bit signed overflow points, a float overflow.
var boundaries = []string{"0", "-1", "2147483648", "9223372036854775808", "1e309"}

// mutator makes mutants of seed programs, drawing every choice from rng.
type mutator struct {
	rng    *rand.Rand
	tokens []string // identifiers and keywords seen in the corpus
	lines  []string // non-blank lines of the corpus
}

func newMutator(rng *rand.Rand, corpus []string) *mutator {
	m := &mutator{rng: rng}
	for _, src := range corpus {
		for _, tok := range IdentRE.FindAllString(src, -1) {
			if !slices.Contains(m.tokens, tok) && len(m.tokens) < 512 {
				m.tokens = append(m.tokens, tok)
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

// mutation is one operator.
type mutation struct {
	name string
	fn   func(m *mutator, s string) string
}

// mutations, weighted by repetition: structure-aware operators come up
// more often because they reach deeper into a parser than byte noise.
var mutations = []mutation{
	{"flip", (*mutator).flip},
	{"delete", (*mutator).deleteSpan},
	{"insert-structural", (*mutator).insertStructural},
	{"duplicate-chunk", (*mutator).duplicateChunk},
	{"splice-line", (*mutator).spliceLine},
	{"insert-token", (*mutator).insertToken},
	{"empty-brackets", (*mutator).emptyBrackets},
	{"empty-brackets", (*mutator).emptyBrackets},
	{"empty-brackets", (*mutator).emptyBrackets},
	{"boundary-number", (*mutator).boundaryNumber},
	{"boundary-number", (*mutator).boundaryNumber},
	{"condition-true", (*mutator).conditionTrue},
	{"condition-true", (*mutator).conditionTrue},
	{"long-identifier", (*mutator).longIdentifier},
	{"deep-nesting", (*mutator).deepNesting},
}

// mutate applies one to three operators to s and returns the mutant and
// the operators' names.
func (m *mutator) mutate(s string) (string, []string) {
	n := 1 + m.rng.IntN(3)
	var ops []string
	for range n {
		op := mutations[m.rng.IntN(len(mutations))]
		if t := op.fn(m, s); len(t) <= maxMutant {
			s = t
			ops = append(ops, op.name)
		}
	}
	return s, ops
}

// pos returns a random rune-aligned position in s (0..len(s)).
func (m *mutator) pos(s string) int {
	if s == "" {
		return 0
	}
	i := m.rng.IntN(len(s) + 1)
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i--
	}
	return i
}

func (m *mutator) flip(s string) string {
	if s == "" {
		return structural[m.rng.IntN(len(structural))]
	}
	i := m.pos(s)
	if i == len(s) {
		i = 0
	}
	_, size := utf8.DecodeRuneInString(s[i:])
	const alphabet = "abcxyzAZ019_ +-*/%=<>!&|^~.:?@#$`{}()[];,\"'\\\n\t"
	return s[:i] + string(alphabet[m.rng.IntN(len(alphabet))]) + s[i+size:]
}

func (m *mutator) deleteSpan(s string) string {
	if s == "" {
		return s
	}
	i := m.pos(s)
	j := min(len(s), i+1+m.rng.IntN(16))
	for j < len(s) && !utf8.RuneStart(s[j]) {
		j++
	}
	return s[:i] + s[j:]
}

func (m *mutator) insertStructural(s string) string {
	i := m.pos(s)
	return s[:i] + structural[m.rng.IntN(len(structural))] + s[i:]
}

func (m *mutator) duplicateChunk(s string) string {
	if s == "" {
		return s
	}
	i := m.pos(s)
	j := min(len(s), i+1+m.rng.IntN(64))
	for j < len(s) && !utf8.RuneStart(s[j]) {
		j++
	}
	k := m.pos(s)
	return s[:k] + s[i:j] + s[k:]
}

func (m *mutator) spliceLine(s string) string {
	if len(m.lines) == 0 {
		return m.duplicateChunk(s)
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

func (m *mutator) insertToken(s string) string {
	if len(m.tokens) == 0 {
		return m.insertStructural(s)
	}
	i := m.pos(s)
	return s[:i] + " " + m.tokens[m.rng.IntN(len(m.tokens))] + " " + s[i:]
}

func (m *mutator) emptyBrackets(s string) string {
	pairs := bracketPairs(s)
	if len(pairs) == 0 {
		return m.insertStructural(s)
	}
	pr := pairs[m.rng.IntN(len(pairs))]
	return s[:pr[0]+1] + s[pr[1]:]
}

func (m *mutator) boundaryNumber(s string) string {
	locs := numberLocs(s)
	v := boundaries[m.rng.IntN(len(boundaries))]
	if len(locs) == 0 {
		i := m.pos(s)
		return s[:i] + v + s[i:]
	}
	l := locs[m.rng.IntN(len(locs))]
	return s[:l[0]] + v + s[l[1]:]
}

func (m *mutator) conditionTrue(s string) string {
	conds := conditions(s)
	if len(conds) == 0 {
		return m.boundaryNumber(s)
	}
	c := conds[m.rng.IntN(len(conds))]
	lit := "true"
	if m.rng.IntN(4) == 0 {
		lit = "1"
	}
	return c.apply(s, lit, m.rng.IntN(2) == 0)
}

func (m *mutator) longIdentifier(s string) string {
	ids := IdentRE.FindAllString(s, -1)
	if len(ids) == 0 {
		return m.insertToken(s)
	}
	id := ids[m.rng.IntN(len(ids))]
	long := strings.Repeat(id, 1+(256+m.rng.IntN(4096))/len(id))
	return replaceWord(s, id, long)
}

func (m *mutator) deepNesting(s string) string {
	depth := 64 << m.rng.IntN(5) // 64 .. 1024
	i := m.pos(s)
	if m.rng.IntN(2) == 0 {
		if locs := numberLocs(s); len(locs) > 0 {
			l := locs[m.rng.IntN(len(locs))]
			return s[:l[0]] + strings.Repeat("(", depth) + s[l[0]:l[1]] + strings.Repeat(")", depth) + s[l[1]:]
		}
		return s[:i] + strings.Repeat("(", depth) + "1" + strings.Repeat(")", depth) + s[i:]
	}
	return s[:i] + strings.Repeat("{", depth) + strings.Repeat("}", depth) + s[i:]
}

// replaceWord replaces whole-word occurrences of old in s.
func replaceWord(s, old, new string) string {
	re := regexp.MustCompile(`\b` + regexp.QuoteMeta(old) + `\b`)
	return re.ReplaceAllLiteralString(s, new)
}

// bracketPairs returns the matching (), [] and {} pairs of s as the byte
// offsets of the opening and closing bracket, ordered by the opening one.
// Brackets inside double-quoted strings do not count; a mismatch discards
// the open brackets so far.
// Analyses of a program text, memoized: a replay recomputes the same
// mutants in the same order, so without the cache every turn would redo the
// analyses of all earlier turns. Callers must not modify the results.
var (
	bracketMemo probe.Memo[[][2]int]
	condMemo    probe.Memo[[]condition]
	numberMemo  probe.Memo[[][]int]
)

func bracketPairs(s string) [][2]int { return bracketMemo.Get(s, fuzzing.BracketPairs) }

func conditions(s string) []condition { return condMemo.Get(s, conditionsOf) }

func numberLocs(s string) [][]int {
	return numberMemo.Get(s, func(s string) [][]int { return NumberRE.FindAllStringIndex(s, -1) })
}

// condition is the expression after a control keyword and the block that
// follows it, as byte offsets.
type condition struct {
	start, end int // the expression (inside parentheses when it has them)
	body       [2]int
	hasBody    bool
}

// conditions finds "if|while|for|... EXPR {" and "KEYWORD (EXPR) {" in s.
func conditionsOf(s string) []condition {
	pairs := bracketPairs(s)
	pairAt := func(open int) (int, bool) {
		for _, pr := range pairs {
			if pr[0] == open {
				return pr[1], true
			}
		}
		return 0, false
	}
	var out []condition
	for _, loc := range condRE.FindAllStringIndex(s, -1) {
		c := condition{start: loc[1]}
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

// apply replaces the condition with lit and, when empty is set, empties
// the block it guards.
func (c condition) apply(s, lit string, empty bool) string {
	if empty && c.hasBody {
		s = s[:c.body[0]+1] + s[c.body[1]:]
	}
	return s[:c.start] + lit + s[c.end:]
}

// emptiedVariants returns s with each bracket pair's contents removed, one
// pair per variant, at most max, skipping pairs already empty.
func emptiedVariants(s string, max int) []string {
	var out []string
	for _, pr := range bracketPairs(s) {
		if pr[1] == pr[0]+1 {
			continue
		}
		v := s[:pr[0]+1] + s[pr[1]:]
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
		if len(out) == max {
			break
		}
	}
	return out
}

// conditionVariants returns s with each condition made constant true and
// the block it guards emptied (a degenerate loop or branch), at most max.
func conditionVariants(s string, max int) []string {
	var out []string
	for _, c := range conditions(s) {
		v := c.apply(s, "true", true)
		if v != s && !slices.Contains(out, v) {
			out = append(out, v)
		}
		if len(out) == max {
			break
		}
	}
	return out
}

// numberVariants returns s with every number replaced by each of vals.
func numberVariants(s string, vals ...string) []string {
	if !NumberRE.MatchString(s) {
		return nil
	}
	var out []string
	for _, v := range vals {
		out = append(out, NumberRE.ReplaceAllLiteralString(s, v))
	}
	return out
}
