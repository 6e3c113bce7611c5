// Package deep is a nested internal package: only record and the packages
// below it may import it.
package deep

// Depth is the deepest nesting of brackets in b.
func Depth(b []byte) int {
	d, m := 0, 0
	for _, c := range b {
		switch c {
		case '[', '{':
			d++
			m = max(m, d)
		case ']', '}':
			d--
		}
	}
	return m
}
