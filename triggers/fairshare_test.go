package triggers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/qafleet/fleetd/fleet"
)

// runnerFleet is a real fleet.Runner behind the Starter contract, as the
// daemon wires it: each specialist's run lasts its given duration, in
// sessions of a second at whose boundaries it ends when asked to yield;
// every run's start is recorded and every end is told to the scheduler.
type runnerFleet struct {
	r     *fleet.Runner
	sched atomic.Pointer[Scheduler]
	t0    time.Time

	mu     sync.Mutex
	starts map[string][]time.Duration // since t0
}

func newRunnerFleet(maxRuns int, runs map[string]time.Duration) *runnerFleet {
	f := &runnerFleet{t0: time.Now(), starts: map[string][]time.Duration{}}
	f.r = fleet.NewRunner(fleet.RunnerConfig{
		MaxConcurrent: maxRuns,
		Run: func(ctx context.Context, name, _ string) (fleet.RunResult, error) {
			for left := runs[name]; left > 0 && !fleet.YieldRequested(ctx); left -= time.Second {
				select {
				case <-time.After(min(left, time.Second)):
				case <-ctx.Done():
					return fleet.RunResult{}, nil
				}
			}
			return fleet.RunResult{}, nil
		},
		OnEvent: func(e fleet.RunnerEvent) {
			switch e.Kind {
			case "started":
				f.mu.Lock()
				f.starts[e.Specialist] = append(f.starts[e.Specialist], e.At.Sub(f.t0))
				f.mu.Unlock()
			case "finished":
				if s := f.sched.Load(); s != nil {
					s.RunEnded(e.Specialist)
				}
			}
		},
	})
	return f
}

func (f *runnerFleet) Start(_ context.Context, name, reason string) (<-chan Outcome, error) {
	done, err := f.r.Start(name, reason)
	if err != nil {
		return nil, err
	}
	out := make(chan Outcome, 1)
	go func() {
		d := <-done
		out <- Outcome{Err: d.Err}
		close(out)
	}()
	return out, nil
}

// yielder is a runnerFleet that is also a Yielder, as the daemon's
// starter is.
type yielder struct{ *runnerFleet }

func (y yielder) Yield(name string) bool { return y.r.Yield(name) }

func (f *runnerFleet) Starts(name string) []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Duration(nil), f.starts[name]...)
}

// schedule makes and starts a scheduler over f; its cleanup stops it, then
// the runner.
func (f *runnerFleet) schedule(t *testing.T, specs ...Spec) *Scheduler {
	t.Helper()
	return f.scheduleWith(t, f, specs...)
}

// scheduleWith is schedule with another Starter over f (yielder).
func (f *runnerFleet) scheduleWith(t *testing.T, st Starter, specs ...Spec) *Scheduler {
	t.Helper()
	s := mustNew(t, Config{Specs: specs, Starter: st, Logger: testLogger(t)})
	f.sched.Store(s)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		s.Stop(ctx)
		f.r.Shutdown(ctx)
	})
	s.Start(t.Context())
	return s
}

// tickWaits returns, for each tick of an every-period schedule from t0 up
// to end, how long it waited for a run: zero when the specialist was
// running at the tick (the tick had nothing to wait for), else the time to
// the first start at or after it. A tick no run served by end waits
// end-tick.
func tickWaits(starts []time.Duration, run, period, end time.Duration) []time.Duration {
	var out []time.Duration
	for tick := period; tick <= end; tick += period {
		wait := end - tick
		for _, st := range starts {
			if st <= tick && st+run > tick {
				wait = 0
				break
			}
			if st >= tick {
				wait = min(wait, st-tick)
				break
			}
		}
		out = append(out, wait)
	}
	return out
}

// TestFairShareCapOfOne is the case made certain: five specialists,
// one of them continuous, share one run slot. Every tick refused at the cap
// waits and is served in turn, so no specialist waits longer than its
// period plus the longest run, and the continuous one runs between them.
// With ticks dropped at the cap (the old rule) perf's and ux's ticks went
// unserved for minutes.
func TestFairShareCapOfOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		runs := map[string]time.Duration{"smoke": 3 * time.Second, "security": 5 * time.Second, "ux": 4 * time.Second, "perf": 6 * time.Second, "fuzz": 8 * time.Second}
		periods := map[string]time.Duration{"smoke": 20 * time.Second, "security": 30 * time.Second, "ux": 25 * time.Second, "perf": 40 * time.Second}
		longest := 8 * time.Second
		f := newRunnerFleet(1, runs)
		specs := []Spec{{Specialist: "fuzz", Continuous: true}}
		for name, p := range periods {
			specs = append(specs, Spec{Specialist: name, Every: p})
		}
		s := f.scheduleWith(t, yielder{f}, specs...) // as the daemon: continuous runs yield at a session boundary
		const end = 10 * time.Minute
		time.Sleep(end)
		synctest.Wait()
		stats := s.Stats()
		for name, p := range periods {
			starts := f.Starts(name)
			if want := int(end / (p + longest)); len(starts) < want {
				t.Errorf("%s ran %d times in %s, want at least %d", name, len(starts), end, want)
			}
			worst := time.Duration(0)
			for _, w := range tickWaits(starts, runs[name], p, end-p-longest) {
				worst = max(worst, w)
			}
			if worst > p+longest {
				t.Errorf("%s: a tick waited %s, more than its period %s plus the longest run %s", name, worst, p, longest)
			}
			st := stats[name]
			if st.LongestWait > p+longest || st.Starved {
				t.Errorf("%s: longest wait %s, starved %v (%s)", name, st.LongestWait, st.Starved, st.StarvedReason)
			}
			if st.Retried == 0 {
				t.Errorf("%s: no held tick was retried: %+v", name, st)
			}
			t.Logf("%-8s every %-4s %2d runs, longest wait %s", name, p, len(starts), st.LongestWait)
		}
		if n := len(f.Starts("fuzz")); n < 10 || stats["fuzz"].Yielded == 0 {
			t.Errorf("fuzz ran %d times and yielded %d times", n, stats["fuzz"].Yielded)
		}
		t.Logf("fuzz     continuous %d runs, yielded %d times", len(f.Starts("fuzz")), stats["fuzz"].Yielded)
	})
}

// TestContinuousYieldsAtItsRunsEnd: a continuous run holds the only slot
// when perf's tick comes; the tick waits, and when the run ends perf gets
// the slot at once and the continuous specialist runs again only after
// perf, not at its next backoff. (Its Starter cannot ask a run to yield;
// TestContinuousYieldsAtItsSessionBoundary has one that can.)
func TestContinuousYieldsAtItsRunsEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newRunnerFleet(1, map[string]time.Duration{"fuzz": 30 * time.Second, "perf": 5 * time.Second})
		s := f.schedule(t, Spec{Specialist: "fuzz", Continuous: true}, Spec{Specialist: "perf", Every: 40 * time.Second})
		time.Sleep(45 * time.Second)
		synctest.Wait()
		st := s.Stats()["perf"]
		if st.PendingReason != "every" || !st.PendingSince.Equal(f.t0.Add(40*time.Second)) || st.Skipped != 0 {
			t.Errorf("perf at 45 s: %+v, want its tick of 40 s waiting", st)
		}
		time.Sleep(30 * time.Second)
		synctest.Wait()
		// fuzz: 0-30 s, 31-61 s; perf takes the slot at 61 s (it waited
		// 21 s), fuzz runs again once perf's run ended at 66 s.
		if got := f.Starts("perf"); len(got) != 1 || got[0] != 61*time.Second {
			t.Errorf("perf started at %v, want [61s]", got)
		}
		fz := f.Starts("fuzz")
		if len(fz) != 3 || fz[1] != 31*time.Second || fz[2] < 66*time.Second {
			t.Errorf("fuzz started at %v, want 0s, 31s and after 66s", fz)
		}
		st, fst := s.Stats()["perf"], s.Stats()["fuzz"]
		if st.LongestWait != 21*time.Second || st.Retried != 1 || fst.Skipped == 0 {
			t.Errorf("perf %+v; fuzz %+v, want its starts during perf's run refused", st, fst)
		}
	})
}

// TestFreedSlotGoesToLongestWaiting: three ticks refused at the cap, at
// 10 s, 15 s and 20 s, are served in that order as the hog's runs end,
// whatever their names, and a tick that comes while others wait queues
// behind them rather than taking a slot that frees meanwhile.
func TestFreedSlotGoesToLongestWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newRunnerFleet(1, map[string]time.Duration{"hog": 32 * time.Second, "c": 4 * time.Second, "b": 4 * time.Second, "a": 4 * time.Second})
		s := f.schedule(t,
			Spec{Specialist: "hog", Every: 8 * time.Second},
			Spec{Specialist: "c", Cron: "@every 10s"},
			Spec{Specialist: "b", Cron: "@every 15s"},
			Spec{Specialist: "a", Cron: "@every 20s"})
		time.Sleep(61 * time.Second)
		synctest.Wait()
		// hog 8-40 s; c waited from 10 s, b from 15 s, a from 20 s.
		first := func(name string) time.Duration {
			if st := f.Starts(name); len(st) > 0 {
				return st[0]
			}
			return -1
		}
		got := []time.Duration{first("c"), first("b"), first("a")}
		want := []time.Duration{40 * time.Second, 44 * time.Second, 48 * time.Second}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("first runs of c, b, a at %v, want %v", got, want)
				break
			}
		}
		if hs := f.Starts("hog"); len(hs) < 2 || hs[1] < 52*time.Second {
			t.Errorf("hog ran at %v: its tick at 48 s took the slot ahead of the waiting starts", hs)
		}
		if w := s.Stats()["a"].LongestWait; w != 28*time.Second {
			t.Errorf("a waited %s, want 28s (20 s to 48 s)", w)
		}
	})
}

// TestStarvedIsShownWithItsReason: perf cannot run while a long run holds
// the only slot; after three of its periods without a run the stats call
// it starved and say why, and a run clears it.
func TestStarvedIsShownWithItsReason(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newRunnerFleet(1, map[string]time.Duration{"hog": 100 * time.Second, "perf": time.Second})
		s := f.schedule(t, Spec{Specialist: "hog", Cron: "@every 5s"}, Spec{Specialist: "perf", Every: 10 * time.Second})
		time.Sleep(29 * time.Second)
		synctest.Wait()
		if st := s.Stats()["perf"]; st.Starved || st.Period != 10*time.Second {
			t.Errorf("perf at 29 s: %+v, want not yet starved", st)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		st := s.Stats()["perf"]
		if !st.Starved || !strings.Contains(st.StarvedReason, "3 periods of 10s") || !strings.Contains(st.StarvedReason, "concurrency cap") || !strings.Contains(st.StarvedReason, "(every)") {
			t.Errorf("perf at 31 s: starved %v, reason %q", st.Starved, st.StarvedReason)
		}
		if hs := s.Stats()["hog"]; hs.Starved || hs.Period != 5*time.Second {
			t.Errorf("hog: %+v", hs)
		}
		time.Sleep(80 * time.Second) // the hog's run ends at 105 s, perf runs
		synctest.Wait()
		if st := s.Stats()["perf"]; st.Starved || st.StarvedReason != "" || len(f.Starts("perf")) == 0 {
			t.Errorf("perf after a run: %+v", st)
		}
	})
}

// TestContinuousYieldsAtItsSessionBoundary: with a Starter that can ask a
// run to yield (the daemon's), perf's tick at 40 s has the continuous run
// end at its next session boundary (41 s) instead of at 61 s; perf runs
// 41-46 s and the continuous specialist starts again once it is done.
func TestContinuousYieldsAtItsSessionBoundary(t *testing.T) {
	// fuzz's sessions end on the half second, so its boundaries never
	// fall on perf's tick (cron ticks whole seconds): which of the two
	// goes first at one instant is not the policy's to say.
	synctest.Test(t, func(t *testing.T) {
		f := newRunnerFleet(1, map[string]time.Duration{"fuzz": 30*time.Second + 500*time.Millisecond, "perf": 5 * time.Second})
		s := f.scheduleWith(t, yielder{f}, Spec{Specialist: "fuzz", Continuous: true}, Spec{Specialist: "perf", Every: 40 * time.Second})
		time.Sleep(50 * time.Second)
		synctest.Wait()
		if got := f.Starts("perf"); len(got) != 1 || got[0] != 40*time.Second+500*time.Millisecond {
			t.Errorf("perf started at %v, want [40.5s]", got)
		}
		fz := f.Starts("fuzz")
		if len(fz) != 3 || fz[1] != 31*time.Second+500*time.Millisecond || fz[2] < 45*time.Second+500*time.Millisecond {
			t.Errorf("fuzz started at %v, want 0s, 31.5s and after 45.5s", fz)
		}
		st, fst := s.Stats()["perf"], s.Stats()["fuzz"]
		if st.LongestWait != 500*time.Millisecond || fst.Yielded == 0 {
			t.Errorf("perf waited %s, fuzz yielded %d times", st.LongestWait, fst.Yielded)
		}
	})
}

// TestRunNowGoesAheadButNeverPastTheCap is the manual start's policy (Run
// now in the package doc): while perf's tick waits for a slot, an
// operator's run of ux takes a slot that is free at once and names perf as
// the start it went ahead of; perf keeps its place. At the cap the manual
// start is refused with the cap's reason and is not held.
func TestRunNowGoesAheadButNeverPastTheCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var atCap atomic.Bool
		atCap.Store(true)
		f := newFakeStarter()
		f.run = func(string, string) (<-chan Outcome, error) {
			if atCap.Load() {
				return nil, fmt.Errorf("fleet-wide limit reached: %w", ErrAtCap)
			}
			return finished(Outcome{}), nil
		}
		s := mustNew(t, Config{Specs: []Spec{{Specialist: "perf", Every: 10 * time.Second}, {Specialist: "ux"}}, Starter: f, Logger: testLogger(t)})
		s.Start(t.Context())
		t.Cleanup(func() { s.Stop(context.Background()) })
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if st := s.Stats()["perf"]; st.PendingReason == "" {
			t.Fatalf("perf's tick refused at the cap is not waiting: %+v", st)
		}

		// At the cap: refused, with the cap's reason, and not held.
		started, why, ahead := s.FireAhead(t.Context(), "ux", "console: alice")
		if started || !strings.Contains(why, "fleet-wide limit") || ahead != nil {
			t.Errorf("run now at the cap: started %v, why %q, ahead %v; want refused with the cap's reason", started, why, ahead)
		}
		if st := s.Stats()["ux"]; st.PendingReason != "" || st.Pending != 0 {
			t.Errorf("a manual start refused at the cap was held: %+v", st)
		}

		// A slot is free while perf still waits for one: the manual start
		// takes it at once and says whom it went ahead of.
		atCap.Store(false)
		started, why, ahead = s.FireAhead(t.Context(), "ux", "console: alice")
		if !started || why != "" || !slices.Equal(ahead, []string{"perf"}) {
			t.Errorf("run now with a free slot: started %v, why %q, ahead %v; want started ahead of [perf]", started, why, ahead)
		}
		if st := s.Stats()["perf"]; st.PendingReason == "" {
			t.Errorf("perf lost its place to the manual start: %+v", st)
		}
		// perf takes the next slot that frees.
		s.RunEnded("ux")
		synctest.Wait()
		if got := f.Started("perf"); len(got) != 1 {
			t.Errorf("perf's waiting start after the next run ended: started %v", got)
		}
	})
}
