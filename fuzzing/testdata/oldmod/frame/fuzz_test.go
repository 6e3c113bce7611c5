package frame

import (
	"testing"
	"testing/synctest"
)

// FuzzRead wraps its body in synctest.Test, so the libFuzzer build
// compiles both stand-ins (testing and testing/synctest) at the raised
// language version.
func FuzzRead(f *testing.F) {
	f.Add([]byte("\x03abc"))
	f.Fuzz(func(t *testing.T, b []byte) {
		synctest.Test(t, func(t *testing.T) {
			if p, err := Read(b); err == nil && len(p) > len(b) {
				t.Fatalf("payload %d bytes from a %d-byte frame", len(p), len(b))
			}
		})
	})
}
