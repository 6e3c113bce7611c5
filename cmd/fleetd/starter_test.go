package main

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/trajectory"
	"github.com/qafleet/fleetd/triggers"
)

// TestStarterMarksBusyRefusals drives the starter over a real runner: the
// runner's "already running" and cap refusals become triggers.ErrRunning
// and ErrAtCap (so an event start waits for the run to end), but not while
// the fleet is paused or the day's budget is spent, and the runner's other
// refusals stay plain. It pins the runner's wording the starter reads.
func TestStarterMarksBusyRefusals(t *testing.T) {
	release := make(chan struct{})
	daily := fleet.NewDailyBudget(t.TempDir(), fleet.Budget{MaxWrites: 1})
	r := fleet.NewRunner(fleet.RunnerConfig{MaxConcurrent: 1, Daily: daily, Run: func(ctx context.Context, _, _ string) (fleet.RunResult, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return fleet.RunResult{}, nil
	}})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		r.Shutdown(ctx)
	})
	var paused atomic.Bool
	s := starter{r: r, paused: func() (bool, error) { return paused.Load(), nil }, daily: daily}
	ctx := t.Context()

	done, err := s.Start(ctx, "ux", "test")
	if err != nil {
		t.Fatalf("first start: %v", err)
	}
	check := func(name string, wantCause error, wantPrefix string) {
		t.Helper()
		_, err := s.Start(ctx, name, "test")
		if err == nil {
			t.Fatalf("%s started", name)
		}
		if wantCause != nil && !errors.Is(err, wantCause) {
			t.Errorf("%s: %q, want %v", name, err, wantCause)
		}
		if wantCause == nil && (errors.Is(err, triggers.ErrRunning) || errors.Is(err, triggers.ErrAtCap)) {
			t.Errorf("%s: %q is busy, want a plain refusal", name, err)
		}
		if got := err.Error(); !strings.HasPrefix(got, wantPrefix) {
			t.Errorf("%s: refusal %q, want it to start with %q", name, got, wantPrefix)
		}
	}
	check("ux", triggers.ErrRunning, "already running (started ")
	check("tri", triggers.ErrAtCap, "fleet-wide limit of 1 concurrent runs reached")

	paused.Store(true)
	check("ux", nil, "already running")
	check("tri", nil, "fleet-wide limit")
	paused.Store(false)

	daily.Add(fleet.RunResult{Totals: trajectory.Totals{Writes: 1}})
	check("ux", nil, "already running")
	check("tri", nil, "fleet-wide limit")

	close(release)
	<-done
	check("tri", nil, "daily ") // the budget refusal itself
	s.node = &nodeState{}       // never checked: down
	check("tri", nil, "the chain node is down")
}
