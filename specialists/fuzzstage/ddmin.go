package fuzzstage

import "strings"

// Minimize shrinks input while fails(candidate) stays true, by delta
// debugging (Zeller's ddmin) over lines and then over characters. fails is
// the expensive test (one tool call); Minimize never asks it about the
// same candidate twice, nor about the empty string, and asks at most
// maxTests times in all. It returns the smallest failing input found,
// which is input itself when nothing smaller fails, and how many tests it
// ran. input is assumed to fail.
//
// Surrounding whitespace is tried away at the end (one test): character
// ddmin runs out of budget on long inputs before it gets to a trailing
// newline, and "while true {}" and "while true {}\n" are the same repro.
func Minimize(input string, maxTests int, fails func(string) bool) (string, int) {
	// One test is kept back for the whitespace trim.
	m := &minimizer{fails: fails, left: maxTests - 1, tried: map[string]bool{input: true}}
	best := input
	if lines := splitLines(best); len(lines) > 1 {
		best = strings.Join(m.ddmin(lines), "")
	}
	if chars := strings.Split(best, ""); len(chars) > 1 {
		best = strings.Join(m.ddmin(chars), "")
	}
	m.left++
	if t := strings.TrimSpace(best); t != best && t != "" && m.test([]string{t}) {
		best = t
	}
	return best, maxTests - m.left
}

type minimizer struct {
	fails func(string) bool
	left  int
	tried map[string]bool
}

// test runs fails once per distinct candidate; an untried candidate past
// the budget counts as passing.
func (m *minimizer) test(units []string) bool {
	s := strings.Join(units, "")
	if s == "" || m.tried[s] || m.left <= 0 {
		return false
	}
	m.tried[s] = true
	m.left--
	return m.fails(s)
}

// ddmin is the classic algorithm: split into n chunks, try each chunk,
// then each complement; on success restart from the smaller input, else
// double the granularity until it is one unit per chunk.
func (m *minimizer) ddmin(units []string) []string {
	n := 2
	for len(units) >= 2 && m.left > 0 {
		chunks := split(units, n)
		reduced := false
		for _, c := range chunks {
			if m.test(c) {
				units, n, reduced = c, 2, true
				break
			}
		}
		if !reduced && n > 2 {
			for i := range chunks {
				comp := complement(chunks, i)
				if m.test(comp) {
					units, n, reduced = comp, max(n-1, 2), true
					break
				}
			}
		}
		if !reduced {
			if n >= len(units) {
				break
			}
			n = min(2*n, len(units))
		}
	}
	return units
}

func split(units []string, n int) [][]string {
	var out [][]string
	size, rest := len(units)/n, len(units)%n
	start := 0
	for i := range n {
		end := start + size
		if i < rest {
			end++
		}
		if end > start {
			out = append(out, units[start:end])
		}
		start = end
	}
	return out
}

func complement(chunks [][]string, skip int) []string {
	var out []string
	for i, c := range chunks {
		if i != skip {
			out = append(out, c...)
		}
	}
	return out
}

// splitLines splits s into lines that keep their newline.
func splitLines(s string) []string {
	return strings.SplitAfter(strings.TrimSuffix(s, "\n"), "\n")
}
