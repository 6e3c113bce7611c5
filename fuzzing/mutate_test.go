package fuzzing

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestMutateText: the program-text operators keep to rune boundaries (a
// UTF-8 seed gives UTF-8 mutants), stay within MaxTextMutant, name what
// they did, draw every choice from the rng (one seed, one sequence), and
// reach the structure-aware operators: a condition made true, a number at
// a boundary, emptied brackets.
func TestMutateText(t *testing.T) {
	corpus := []string{"fn main() {\n  if x > 1 { print(\"héllo\") }\n  while (y < 3) { y = y + 1 }\n}\n", "let s = [1, 2.5, 3e4];\n"}
	run := func(seed uint64) (outs []string, names map[string]bool) {
		m := NewTextMutator(rand.New(rand.NewPCG(seed, seed)), corpus, TextAnalyses{})
		names = map[string]bool{}
		for i := range 2000 {
			out, ops := m.MutateText(corpus[i%2])
			if !utf8.ValidString(out) || len(out) > MaxTextMutant || len(ops) == 0 || len(ops) > 3 {
				t.Fatalf("mutant %d: valid %v, %d bytes, ops %v", i, utf8.ValidString(out), len(out), ops)
			}
			for _, op := range ops {
				names[op] = true
			}
			outs = append(outs, out)
		}
		return outs, names
	}
	a, names := run(7)
	b, _ := run(7)
	if !slices.Equal(a, b) {
		t.Fatal("one seed gave two sequences of mutants")
	}
	for _, op := range []string{"flip", "delete", "insert-structural", "duplicate-chunk", "splice-line", "insert-token", "empty-brackets", "boundary-number", "condition-true", "long-identifier", "deep-nesting"} {
		if !names[op] {
			t.Errorf("operator %s never ran in 2000 mutants", op)
		}
	}
	found := func(sub string) bool {
		return slices.ContainsFunc(a, func(s string) bool { return strings.Contains(s, sub) })
	}
	if !found("if true") && !found("if 1") || !found("9223372036854775808") || !found("{}") {
		t.Error("no mutant with a condition made true, a boundary number and an emptied pair")
	}
}
