package seedpass

import (
	"bytes"
	"fmt"
	"testing"
)

func FuzzCheck(f *testing.F) {
	for i := range 600 {
		f.Add([]byte(fmt.Sprintf("seed %d %s", i, bytes.Repeat([]byte{'a'}, i%50))))
	}
	f.Add(append(bytes.Repeat([]byte{'b'}, 400000), '!'))
	f.Fuzz(func(t *testing.T, b []byte) {
		Check(b)
	})
}
