// Package seedpass is a target with many seeds and a bug only its largest
// seed reaches: a session finds it only when it runs every seed, whole.
package seedpass

import "bytes"

// Check panics on an input of more than 300,000 bytes that ends in '!'.
func Check(b []byte) int {
	if len(b) > 300000 && b[len(b)-1] == '!' {
		panic("seedpass: the largest seed ran whole")
	}
	return bytes.Count(b, []byte{'a'})
}
