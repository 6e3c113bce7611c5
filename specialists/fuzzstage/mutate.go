package fuzzstage

import (
	"slices"

	"github.com/qafleet/fleetd/fuzzing"
	"github.com/qafleet/fleetd/specialists/replay"
)

// The compiler playbook's mutator is fuzzing's (NewTextMutator,
// MutateText); the analyses its operators use are memoized here.

// IdentRE and NumberRE find identifiers and numbers in program text: for
// the mutations and perf's inputs that grow.
var (
	IdentRE  = fuzzing.IdentRE
	NumberRE = fuzzing.NumberRE
)

// textAnalyses are the mutator's analyses, memoized.
var textAnalyses = fuzzing.TextAnalyses{Brackets: bracketPairs, Numbers: numberLocs, Conditions: conditions}

// bracketPairs returns the matching (), [] and {} pairs of s as the byte
// offsets of the opening and closing bracket, ordered by the opening one.
// Brackets inside double-quoted strings do not count; a mismatch discards
// the open brackets so far.
// Analyses of a program text, memoized: a replay recomputes the same
// mutants in the same order, so without the cache every turn would redo the
// analyses of all earlier turns. Callers must not modify the results.
var (
	bracketMemo replay.Memo[[][2]int]
	condMemo    replay.Memo[[]fuzzing.Condition]
	numberMemo  replay.Memo[[][]int]
)

func bracketPairs(s string) [][2]int { return bracketMemo.Get(s, fuzzing.BracketPairs) }

func conditions(s string) []fuzzing.Condition { return condMemo.Get(s, fuzzing.Conditions) }

func numberLocs(s string) [][]int {
	return numberMemo.Get(s, func(s string) [][]int { return NumberRE.FindAllStringIndex(s, -1) })
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
		v := c.Apply(s, "true", true)
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
