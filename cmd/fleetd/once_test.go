package main

import (
	"strings"
	"testing"
)

// TestOnceKeepsProbeAlias: `fleetd once` is the command that runs one
// specialist now; its old name, probe, still runs it, with a warning naming
// the new one.
func TestOnceKeepsProbeAlias(t *testing.T) {
	cfg := writeConfig(t, "data_dir: state\n")
	const warning = `the command "probe" is deprecated: use "once"`
	for _, name := range []string{"once", "probe"} {
		_, stderr, code := run(t, "", name, "no-such-specialist", "--config", cfg)
		if code != exitConfig || !strings.Contains(stderr, "no-such-specialist") {
			t.Errorf("%s: exit %d, stderr %q; want %d naming the specialist", name, code, stderr, exitConfig)
		}
		if got := strings.Contains(stderr, warning); got != (name == "probe") {
			t.Errorf("%s: warned %v, stderr %q", name, got, stderr)
		}
	}
}
