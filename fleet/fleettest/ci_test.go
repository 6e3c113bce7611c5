package fleettest

import (
	"runtime"
	"testing"
)

// TestSkipUnlessCI: with CI set the helper fails the test, without it it
// skips; either way nothing after it runs.
func TestSkipUnlessCI(t *testing.T) {
	for _, ci := range []string{"", "true"} {
		t.Setenv("CI", ci)
		rec := &recorder{TB: t}
		done := make(chan struct{})
		go func() { // Fatal and Skip end the goroutine that calls them
			defer close(done)
			SkipUnlessCI(rec, "no tool")
			rec.after = true
		}()
		<-done
		if rec.after || rec.failed != (ci != "") || rec.skipped != (ci == "") {
			t.Errorf("CI=%q: failed %v, skipped %v, ran on %v", ci, rec.failed, rec.skipped, rec.after)
		}
	}
}

// recorder notes Fatal and Skip instead of ending the test.
type recorder struct {
	testing.TB
	failed, skipped, after bool
}

func (r *recorder) Helper()           {}
func (r *recorder) Fatal(args ...any) { r.failed = true; runtime.Goexit() }
func (r *recorder) Skip(args ...any)  { r.skipped = true; runtime.Goexit() }
