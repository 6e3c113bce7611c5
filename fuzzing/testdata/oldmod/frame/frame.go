// Package frame reads a length-prefixed frame, in a module whose go.mod
// says go 1.12 (as many older libraries' still do): the libFuzzer build
// of its own fuzz target must raise the language version of its copy.
package frame

import "errors"

// Read returns the payload of a one-byte-length frame.
func Read(b []byte) ([]byte, error) {
	if len(b) == 0 {
		return nil, errors.New("frame: empty")
	}
	n := int(b[0])
	if len(b)-1 < n {
		return nil, errors.New("frame: short")
	}
	return b[1 : 1+n], nil
}
