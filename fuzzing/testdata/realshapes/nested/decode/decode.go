// Package decode lives in a nested module that vendors its dependency
// (replaced with the parent directory).
package decode

import "example.com/realshapes/record"

// Decode parses b as a record and returns its field count.
func Decode(b []byte) int {
	r, err := record.Parse(b)
	if err != nil {
		return -1
	}
	return len(r)
}
