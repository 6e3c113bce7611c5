// Package twobugs has two bugs: one that any input longer than the seeds
// reaches, and one behind a five-byte magic. A fuzzer that stops at every
// crash and starts again keeps finding the first.
package twobugs

// Check panics on two kinds of input.
func Check(b []byte) int {
	if len(b) >= 5 && string(b[:5]) == "DEEP!" {
		var m map[string]int
		m[string(b)] = 1 // assignment to entry in nil map
	}
	if len(b) > 5 {
		return []int{1}[len(b)] // index out of range
	}
	return len(b)
}
