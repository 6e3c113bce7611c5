package twobugs

import "testing"

func FuzzCheck(f *testing.F) {
	f.Add([]byte("hello"))
	f.Add([]byte("a-b-c"))
	f.Fuzz(func(t *testing.T, b []byte) {
		Check(b)
	})
}
