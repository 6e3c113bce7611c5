package main

import (
	"context"
	"testing"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
)

// TestRepeatedProbesPostOnce runs `fleetd probe security` three times in a
// row, as a cron job would (each Main builds its reporter afresh, like a new
// process), and checks every fingerprint reached the log once.
func TestRepeatedProbesPostOnce(t *testing.T) {
	f := newFleetFixture(t, fleet.Observe, nil)
	for i := range 3 {
		if out, stderr, code := run(t, "", "probe", "security", "--config", f.config); code != 0 {
			t.Fatalf("probe %d: exit %d\n%s%s", i+1, code, out, stderr)
		}
	}
	counts := map[string]int{}
	if _, err := f.dn.Log.Scan(context.Background(), 0, func(page []chain.Entry) error {
		for _, e := range page {
			if fd, err := fleet.Parse(e.Text); err == nil && fd.Fingerprint != "" {
				counts[fd.Fingerprint]++
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(counts) == 0 {
		t.Fatal("three security probes posted nothing")
	}
	for fp, n := range counts {
		if n != 1 {
			t.Errorf("fingerprint %s is on the log %d times, want once", fp, n)
		}
	}
	t.Logf("%d distinct findings, each posted once over three probes", len(counts))
}
