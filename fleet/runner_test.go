package fleet_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/trajectory"
)

// slowRun runs for d (or until cancelled) and reports how it ended.
func slowRun(d time.Duration, cleanups *int, mu *sync.Mutex) fleet.RunFunc {
	return func(ctx context.Context, specialist, reason string) (fleet.RunResult, error) {
		defer func() { mu.Lock(); *cleanups++; mu.Unlock() }()
		select {
		case <-time.After(d):
			return fleet.RunResult{Outcome: trajectory.OutcomeDone, Totals: trajectory.Totals{Writes: 1, TokensIn: 10}}, nil
		case <-ctx.Done():
			return fleet.RunResult{Outcome: trajectory.OutcomeCancelled}, nil
		}
	}
}

func TestRunnerNoOverlapAndCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		cleanups := 0
		r := fleet.NewRunner(fleet.RunnerConfig{Run: slowRun(time.Minute, &cleanups, &mu), MaxConcurrent: 2})
		done, err := r.Start("fuzz", "cron")
		if err != nil {
			t.Fatal("first start refused")
		}
		if _, err := r.Start("fuzz", "cron"); !errors.Is(err, fleet.ErrRunning) || !strings.Contains(err.Error(), "already running (started ") {
			t.Errorf("overlapping start: %v", err)
		}
		if _, err := r.Start("ux", "cron"); err != nil {
			t.Error("second specialist refused")
		}
		if _, err := r.Start("perf", "cron"); !errors.Is(err, fleet.ErrAtCap) || errors.Is(err, fleet.ErrRunning) || !strings.Contains(err.Error(), "limit of 2") {
			t.Errorf("third concurrent start: %v", err)
		}
		if _, skipped := r.Counts("fuzz"); skipped != 1 {
			t.Errorf("fuzz skips counted %d", skipped)
		}
		d := <-done
		if d.Result.Outcome != trajectory.OutcomeDone {
			t.Errorf("fuzz ended %s", d.Result.Outcome)
		}
		synctest.Wait()
		if _, err := r.Start("fuzz", "cron"); err != nil {
			t.Errorf("fuzz refused after its run ended: %v", err)
		}
		if err := r.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		if cleanups != 3 {
			t.Errorf("%d runs cleaned up, want 3", cleanups)
		}
	})
}

func TestRunnerPausedAndShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		cleanups := 0
		paused := true
		r := fleet.NewRunner(fleet.RunnerConfig{Run: slowRun(time.Hour, &cleanups, &mu), Paused: func() (bool, error) { return paused, nil }})
		if _, err := r.Start("fuzz", "cron"); !errors.Is(err, fleet.ErrPaused) || err.Error() != "paused" {
			t.Errorf("start while paused: %v", err)
		}
		paused = false
		done, err := r.Start("fuzz", "cron")
		if err != nil {
			t.Fatal("start after resume refused")
		}
		// Shutdown cancels the hour-long run and waits for its cleanup.
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := r.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		if d := <-done; d.Result.Outcome != trajectory.OutcomeCancelled || cleanups != 1 || time.Since(start) > time.Second {
			t.Errorf("after shutdown: %+v cleanups %d in %s", d.Result, cleanups, time.Since(start))
		}
		if _, err := r.Start("ux", "cron"); !errors.Is(err, fleet.ErrShuttingDown) {
			t.Errorf("start after shutdown: %v", err)
		}
	})
}

func TestRunnerShutdownDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stuck := make(chan struct{})
		r := fleet.NewRunner(fleet.RunnerConfig{Run: func(ctx context.Context, _, _ string) (fleet.RunResult, error) {
			<-stuck // ignores cancellation
			return fleet.RunResult{}, nil
		}})
		r.Start("fuzz", "cron")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := r.Shutdown(ctx); !errors.Is(err, fleet.ErrShutdownTimeout) || !strings.Contains(err.Error(), "fuzz") {
			t.Errorf("stuck run: %v", err)
		}
		close(stuck)
	})
}

func TestRunnerRecoversPanics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := fleet.NewRunner(fleet.RunnerConfig{Run: func(context.Context, string, string) (fleet.RunResult, error) { panic("boom") }})
		done, _ := r.Start("fuzz", "cron")
		if d := <-done; d.Err == nil || !strings.Contains(d.Err.Error(), "panicked") {
			t.Errorf("panicking run: %+v", d)
		}
	})
}

func TestDailyBudget(t *testing.T) {
	dir := t.TempDir()
	d := fleet.NewDailyBudget(dir, fleet.Budget{MaxWrites: 5, MaxTokens: 100})
	if got := d.Remaining(fleet.Budget{MaxWrites: 20, MaxTokens: 50, MaxTurns: 9}); got.MaxWrites != 5 || got.MaxTokens != 50 || got.MaxTurns != 9 {
		t.Errorf("remaining %+v", got)
	}
	d.Add(fleet.RunResult{Totals: trajectory.Totals{Writes: 3, TokensIn: 60, TokensOut: 40}})
	if err := d.Check(); err == nil || !errors.Is(err, fleet.ErrBudget) {
		t.Errorf("tokens spent: %v", err)
	}
	if u := d.Usage(); u.Writes != 3 || u.Tokens != 100 || u.Runs != 1 || u.Limits.MaxWrites != 5 || u.Date == "" {
		t.Errorf("usage %+v", u)
	}
	// Persisted across restarts.
	d2 := fleet.NewDailyBudget(dir, fleet.Budget{MaxWrites: 5, MaxTokens: 1000})
	if got := d2.Remaining(fleet.Budget{MaxWrites: 20}); got.MaxWrites != 2 {
		t.Errorf("after restart remaining writes %d, want 2", got.MaxWrites)
	}
	r := fleet.NewRunner(fleet.RunnerConfig{Daily: d, Run: func(context.Context, string, string) (fleet.RunResult, error) { return fleet.RunResult{}, nil }})
	if _, err := r.Start("fuzz", "cron"); !errors.Is(err, fleet.ErrBudget) || !strings.Contains(err.Error(), "daily budget exhausted") {
		t.Errorf("start past the daily budget: %v", err)
	}
}

// A refusal for the specialist running or the cap means the fleet is neither
// paused nor over its budget: the triggers hold such a start for a run's end,
// and a start held for a paused fleet would only be dropped at its retry.
func TestRunnerRefusalOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var paused atomic.Bool
		untilShutdown := func(ctx context.Context, _, _ string) (fleet.RunResult, error) {
			<-ctx.Done()
			return fleet.RunResult{}, nil
		}
		r := fleet.NewRunner(fleet.RunnerConfig{Run: untilShutdown, MaxConcurrent: 1, Paused: func() (bool, error) { return paused.Load(), nil }})
		if _, err := r.Start("fuzz", "cron"); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Start("ux", "cron"); !errors.Is(err, fleet.ErrAtCap) {
			t.Errorf("at the cap: %v", err)
		}
		paused.Store(true)
		for _, name := range []string{"fuzz", "ux"} {
			if _, err := r.Start(name, "cron"); !errors.Is(err, fleet.ErrPaused) || errors.Is(err, fleet.ErrRunning) || errors.Is(err, fleet.ErrAtCap) {
				t.Errorf("%s while paused and busy: %v", name, err)
			}
		}
		if err := r.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}
