package fleettest

import (
	"os"
	"testing"
)

// SkipUnlessCI skips tb for why, or fails it when the environment sets CI
// (.ci/run sets it and installs every tool a test needs: node and the
// pinned solc, Chromium, bubblewrap, clang, afl++), so that no CI run
// passes by skipping.
func SkipUnlessCI(tb testing.TB, why string) {
	tb.Helper()
	if os.Getenv("CI") != "" {
		tb.Fatal(why)
	}
	tb.Skip(why)
}
