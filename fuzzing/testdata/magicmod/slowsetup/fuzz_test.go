// Package slowsetup's fuzz target spends its setup (the body before
// f.Fuzz) longer than the describe run's bound.
package slowsetup

import (
	"testing"
	"time"
)

func FuzzSlow(f *testing.F) {
	time.Sleep(time.Minute)
	f.Add([]byte("x"))
	f.Fuzz(func(t *testing.T, b []byte) {})
}
