package fleettest

import (
	"testing"
	"time"
)

// WaitFor polls cond in real time until it holds, and fails tb when d
// passes first; what names the condition in that failure. It is for state a
// goroutine changes after the event a test saw (a handler leaving once it
// notices a closed connection, a run slot released once the run ended):
// checked at once, such state makes a test flaky under load.
func WaitFor(tb testing.TB, d time.Duration, what string, cond func() bool) {
	tb.Helper()
	for deadline := time.Now().Add(d); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %s waiting for %s", d, what)
		}
	}
}
