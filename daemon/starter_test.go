package daemon

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/trajectory"
	"github.com/qafleet/fleetd/triggers"
)

// TestStarterMarksBusyRefusals drives the starter over a real runner: the
// runner's "already running" and cap refusals are triggers.ErrRunning and
// ErrAtCap (so a start waits for a run to end), but not while the fleet is
// paused or the day's budget is spent (the runner checks those first), and
// the runner's other refusals stay plain.
func TestStarterMarksBusyRefusals(t *testing.T) {
	release := make(chan struct{})
	daily := fleet.NewDailyBudget(t.TempDir(), fleet.Budget{MaxWrites: 1})
	var paused atomic.Bool
	r := fleet.NewRunner(fleet.RunnerConfig{MaxConcurrent: 1, Daily: daily, Paused: func() (bool, error) { return paused.Load(), nil }, Run: func(ctx context.Context, _, _ string) (fleet.RunResult, error) {
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
	s := Starter{Runner: r}
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
		isBusy := wantCause == triggers.ErrRunning || wantCause == triggers.ErrAtCap
		if !isBusy && (errors.Is(err, triggers.ErrRunning) || errors.Is(err, triggers.ErrAtCap)) {
			t.Errorf("%s: %q is busy, want a plain refusal", name, err)
		}
		if got := err.Error(); !strings.HasPrefix(got, wantPrefix) {
			t.Errorf("%s: refusal %q, want it to start with %q", name, got, wantPrefix)
		}
	}
	check("ux", triggers.ErrRunning, "already running (started ")
	check("tri", triggers.ErrAtCap, "fleet-wide limit of 1 concurrent runs reached")

	paused.Store(true)
	check("ux", fleet.ErrPaused, "paused")
	check("tri", fleet.ErrPaused, "paused")
	paused.Store(false)

	daily.Add(fleet.RunResult{Totals: trajectory.Totals{Writes: 1}})
	check("ux", fleet.ErrBudget, "daily budget exhausted")
	check("tri", fleet.ErrBudget, "daily budget exhausted")

	close(release)
	<-done
	check("tri", nil, "daily ") // the budget refusal itself
	s.Node = &Node{}            // never checked: down
	check("tri", nil, "the chain node is down")
}

// TestStarterCountsOnlyNewFindings: the outcome the triggers get (which
// backs a continuous specialist off when it finds nothing new) counts the
// findings a run posted or queued, not the ones the reporter deduplicated:
// a repeat run that files only what is on the log already found nothing new.
func TestStarterCountsOnlyNewFindings(t *testing.T) {
	results := map[string]fleet.RunResult{
		"repeat": {Totals: trajectory.Totals{Findings: 3}, Findings: []fleet.Result{{"status": "deduped"}, {"status": "deduped"}, {"status": "deduped"}}},
		"mixed":  {Totals: trajectory.Totals{Findings: 3}, Findings: []fleet.Result{{"status": "posted"}, {"status": "queued"}, {"status": "deduped"}}},
		"quiet":  {},
	}
	r := fleet.NewRunner(fleet.RunnerConfig{MaxConcurrent: 3, Run: func(_ context.Context, name, _ string) (fleet.RunResult, error) {
		return results[name], nil
	}})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		r.Shutdown(ctx)
	})
	for name, want := range map[string]int{"repeat": 0, "mixed": 2, "quiet": 0} {
		done, err := Starter{Runner: r}.Start(t.Context(), name, "test")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if o := <-done; o.NewFindings != want || o.Err != nil {
			t.Errorf("%s: outcome %+v, want %d new findings", name, o, want)
		}
	}
	if fresh, dup := FindingCounts(results["mixed"]); fresh != 2 || dup != 1 {
		t.Errorf("FindingCounts(mixed) = %d new, %d deduplicated; want 2, 1", fresh, dup)
	}
}

// TestNodeDownWaitsForAStartThatSawItUp: a start that saw the node up is
// accepted (and its "started" event out) before a check can record the
// node down, so whoever sees the node down has seen every start that came
// before, and none after. Before the gate, a start preempted between its
// look at the node and the runner's accepting it started a run after
// /api/status said the node was down (TestDaemonStartsWithTheNodeDown
// failed so in CI).
func TestNodeDownWaitsForAStartThatSawItUp(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var releaseOnce sync.Once
	free := func() { releaseOnce.Do(func() { close(release) }) }
	r := fleet.NewRunner(fleet.RunnerConfig{MaxConcurrent: 2,
		OnEvent: func(e fleet.RunnerEvent) {
			if e.Kind == "started" && e.Specialist == "slow" {
				close(entered)
				<-release // the start is preempted after its look at the node
			}
		},
		Run: func(ctx context.Context, _, _ string) (fleet.RunResult, error) { return fleet.RunResult{}, nil }})
	t.Cleanup(func() {
		free()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		r.Shutdown(ctx)
	})
	var down atomic.Bool
	n := &Node{Ping: func(context.Context) error {
		if down.Load() {
			return errors.New("connection refused")
		}
		return nil
	}}
	if up, _ := n.Check(t.Context()); !up {
		t.Fatal("the node is not up")
	}
	s := Starter{Runner: r, Node: n}
	started := make(chan error, 1)
	go func() {
		_, err := s.Start(t.Context(), "slow", "test")
		started <- err
	}()
	<-entered
	down.Store(true)
	checked := make(chan struct{})
	go func() {
		n.Check(t.Context())
		close(checked)
	}()
	select {
	case <-checked:
		t.Fatal("the node was recorded down while a start that saw it up was still being accepted")
	case <-time.After(300 * time.Millisecond):
	}
	if !n.Up() {
		t.Fatal("the node reads down while a start that saw it up is being accepted")
	}
	free()
	if err := <-started; err != nil {
		t.Fatalf("the start that saw the node up: %v", err)
	}
	<-checked
	if n.Up() {
		t.Fatal("the node still reads up after a failed check")
	}
	if _, err := s.Start(t.Context(), "next", "test"); !errors.Is(err, ErrNodeDown) {
		t.Fatalf("a start after the node went down: %v, want ErrNodeDown", err)
	}
}
