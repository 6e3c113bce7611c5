// Package hangseed hangs on one of its own seeds: 10,000 '[' (as
// jsonparser's Delete is quadratic on unclosed arrays), and on nothing
// shorter.
package hangseed

// Depth counts the leading '[' of b; on 10,000 or more of them it never
// returns.
func Depth(b []byte) int {
	n := 0
	for n < len(b) && b[n] == '[' {
		n++
	}
	for x := n; n >= 10000; x = (x + n) % 7919 {
		if x < 0 {
			return x
		}
	}
	return n
}
