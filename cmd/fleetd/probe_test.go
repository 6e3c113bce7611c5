package main

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/trajectory"
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

// TestProbeExitHeldNames: a probe whose run's cleanup failed twice (names
// still held after daemon.FinishLeft) exits as infrastructure, done or
// cancelled by a signal, naming what finishes the names; one whose second
// try finished them exits as a plain done. Before, the cleanup's failure
// (in the result, not the run's error) let a done probe exit 0 with its
// names held.
func TestProbeExitHeldNames(t *testing.T) {
	a := specialistCommands{&app{cfg: &Config{}, stdout: io.Discard, stderr: io.Discard}}
	env := &fleetEnv{Control: fleet.NewControl(t.TempDir())}
	done := fleet.RunResult{RunID: "r-1", Outcome: trajectory.OutcomeDone, Summary: "ok; cleanup failed: release: reset"}
	var ee *exitError
	if err := a.probeExit(t.Context(), env, done, nil, 0, true); !errors.As(err, &ee) || ee.code != exitInfra || !strings.Contains(err.Error(), "fleetd reconcile") {
		t.Errorf("done with names held: %v, want exit %d naming fleetd reconcile", err, exitInfra)
	}
	if err := a.probeExit(t.Context(), env, done, nil, 0, false); err != nil {
		t.Errorf("done, cleanup finished on its second try: %v, want exit 0", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	cut := fleet.RunResult{RunID: "r-2", Outcome: trajectory.OutcomeCancelled}
	if err := a.probeExit(ctx, env, cut, nil, 0, true); !errors.As(err, &ee) || ee.code != exitCancelled || !strings.Contains(err.Error(), "still held") {
		t.Errorf("cancelled with names held: %v, want exit %d saying they are held", err, exitCancelled)
	}
	if err := a.probeExit(ctx, env, cut, nil, 0, false); err == nil || !strings.Contains(err.Error(), "names are released") {
		t.Errorf("cancelled and cleaned up: %v, want it to say the names are released", err)
	}
}
