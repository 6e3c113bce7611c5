package hangseed

import (
	"bytes"
	"testing"
)

func FuzzDepth(f *testing.F) {
	f.Add([]byte(""))
	f.Add([]byte("[1]"))
	f.Add([]byte("[[[]]]"))
	f.Add(bytes.Repeat([]byte("["), 10000))
	f.Add([]byte("[[x"))
	f.Fuzz(func(t *testing.T, b []byte) {
		Depth(b)
	})
}
