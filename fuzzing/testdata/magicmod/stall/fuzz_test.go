package stall

import "testing"

func FuzzDo(f *testing.F) {
	f.Add([]byte("ok"))
	f.Fuzz(func(t *testing.T, b []byte) {
		Do(b)
	})
}
