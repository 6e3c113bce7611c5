package triggers

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// ats returns the instants of calls, as offsets from the start.
func ats(calls []call) []time.Duration {
	var out []time.Duration
	for _, c := range calls {
		out = append(out, c.At)
	}
	return out
}

func secs(ss ...int) []time.Duration {
	var out []time.Duration
	for _, s := range ss {
		out = append(out, time.Duration(s)*time.Second)
	}
	return out
}

func TestCronWithSecondsFiresOnTheTenSeconds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The bubble starts at 2000-01-01 00:00:00 UTC, so the start is
		// itself on a tick, which cron never fires (next is strictly later).
		f := newFakeStarter()
		s := mustNew(t, Config{Specs: []Spec{{Specialist: "smoke", Cron: "*/10 * * * * *"}}, Starter: f, Logger: testLogger(t)})
		s.Start(t.Context())
		synctest.Wait()
		if got, want := s.Stats()["smoke"].NextRun, f.t0.Add(10*time.Second); !got.Equal(want) {
			t.Errorf("NextRun = %v, want %v", got, want)
		}
		time.Sleep(65 * time.Second)
		synctest.Wait()
		if diff := cmp.Diff(secs(10, 20, 30, 40, 50, 60), ats(f.Calls("smoke"))); diff != "" {
			t.Errorf("fire instants (-want +got):\n%s", diff)
		}
		st := s.Stats()["smoke"]
		if st.Fired != 6 || st.Started != 6 || st.Skipped != 0 || st.LastReason != "cron" {
			t.Errorf("stats = %+v", st)
		}
	})
}

func TestCronFiveFieldsAndDescriptors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeStarter()
		s := mustNew(t, Config{Specs: []Spec{
			{Specialist: "minutely", Cron: "* * * * *"},
			{Specialist: "hourly", Cron: "@hourly"},
		}, Starter: f})
		s.Start(t.Context())
		time.Sleep(2*time.Hour + time.Second)
		synctest.Wait()
		if n := len(f.Calls("minutely")); n != 120 {
			t.Errorf("minutely fired %d times in 2h, want 120", n)
		}
		if diff := cmp.Diff([]time.Duration{time.Hour, 2 * time.Hour}, ats(f.Calls("hourly"))); diff != "" {
			t.Errorf("hourly (-want +got):\n%s", diff)
		}
	})
}

func TestEveryAndAtEvery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeStarter()
		s := mustNew(t, Config{Specs: []Spec{
			{Specialist: "desc", Cron: "@every 30s"},
			{Specialist: "every", Every: 30 * time.Second},
		}, Starter: f})
		time.Sleep(7 * time.Second) // Every's grid starts at Start, not on the minute
		f.t0 = time.Now()
		s.Start(t.Context())
		time.Sleep(2*time.Minute + time.Second)
		synctest.Wait()
		if diff := cmp.Diff(secs(30, 60, 90, 120), ats(f.Calls("every"))); diff != "" {
			t.Errorf("every (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(secs(30, 60, 90, 120), ats(f.Calls("desc"))); diff != "" {
			t.Errorf("@every (-want +got):\n%s", diff)
		}
		if r := f.Reasons("every")[0]; r != "every" {
			t.Errorf("reason %q, want every", r)
		}
	})
}

func TestTickDuringARunIsSkippedAndCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeStarter()
		f.run = overlapStarter(f, 25*time.Second)
		s := mustNew(t, Config{Specs: []Spec{{Specialist: "fuzz", Every: 10 * time.Second}}, Starter: f})
		s.Start(t.Context())
		time.Sleep(61 * time.Second)
		synctest.Wait()
		var started []bool
		for _, c := range f.Calls("fuzz") {
			started = append(started, c.Started)
		}
		// Runs start at 10 s and 40 s and last 25 s: the ticks between are refused.
		if diff := cmp.Diff([]bool{true, false, false, true, false, false}, started); diff != "" {
			t.Errorf("started per tick (-want +got):\n%s", diff)
		}
		st := s.Stats()["fuzz"]
		want := Stats{Fired: 6, Started: 2, Skipped: 4, LastSkip: "already running", LastReason: "every", LastFired: st.LastFired, NextRun: f.t0.Add(70 * time.Second),
			LastStarted: f.t0.Add(40 * time.Second), Period: 10 * time.Second}
		if diff := cmp.Diff(want, st); diff != "" {
			t.Errorf("stats (-want +got):\n%s", diff)
		}
	})
}

func TestTickWhileStartBlocksIsDroppedAndCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// A Start call that takes 15 s (a slow runner) overlaps the next
		// 10 s tick: cron's SkipIfStillRunning drops it, and it is counted.
		f := newFakeStarter()
		f.run = func(string, string) (<-chan Outcome, error) {
			time.Sleep(15 * time.Second)
			return finished(Outcome{}), nil
		}
		s := mustNew(t, Config{Specs: []Spec{{Specialist: "perf", Every: 10 * time.Second}}, Starter: f})
		s.Start(t.Context())
		time.Sleep(41 * time.Second)
		synctest.Wait()
		// Ticks at 10 (returns at 25), 20 dropped, 30 (returns at 45), 40 dropped.
		st := s.Stats()["perf"]
		if st.Started != 1 || st.Skipped != 2 || st.Fired != 3 || st.LastSkip != "previous tick still starting" {
			t.Errorf("stats = %+v", st)
		}
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if st := s.Stats()["perf"]; st.Started != 2 {
			t.Errorf("started = %d, want 2", st.Started)
		}
	})
}

func TestContinuousBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeStarter()
		// F = new findings, E = failed, Q = nothing new.
		script := []Outcome{{NewFindings: 1}, {NewFindings: 2}, {NewFindings: 1}, {NewFindings: 1}, {NewFindings: 5}, {}, {NewFindings: 1}, {Err: errors.New("platform down")}, {}}
		var mu sync.Mutex
		f.run = func(string, string) (<-chan Outcome, error) {
			mu.Lock()
			defer mu.Unlock()
			o := Outcome{}
			if len(script) > 0 {
				o, script = script[0], script[1:]
			}
			return finished(o), nil
		}
		s := mustNew(t, Config{Specs: []Spec{{Specialist: "sec", Continuous: true}}, Starter: f, Backoff: Backoff{Min: time.Second, Max: 8 * time.Second}})
		s.Start(t.Context())
		// Waits after each run: F1 F2 F4 F8 F8(capped) Q1 F2 E4 Q1.
		waits := secs(1, 2, 4, 8, 8, 1, 2, 4, 1)
		var want []time.Duration
		var at time.Duration
		want = append(want, 0)
		for _, w := range waits {
			at += w
			want = append(want, at)
		}
		time.Sleep(at + 500*time.Millisecond)
		synctest.Wait()
		if st := s.Stats()["sec"]; !st.NextRun.Equal(f.t0.Add(at + time.Second)) {
			t.Errorf("NextRun = %v, want %v", st.NextRun, f.t0.Add(at+time.Second))
		}
		if diff := cmp.Diff(want, ats(f.Calls("sec"))); diff != "" {
			t.Errorf("run starts (-want +got):\n%s", diff)
		}
		if r := f.Reasons("sec")[0]; r != "continuous" {
			t.Errorf("reason %q", r)
		}
	})
}

func TestContinuousWaitsForTheRunAndRetriesRefusals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeStarter()
		var mu sync.Mutex
		n := 0
		f.run = func(string, string) (<-chan Outcome, error) {
			mu.Lock()
			defer mu.Unlock()
			n++
			if n <= 2 {
				return nil, Busy(ErrAtCap, "fleet-wide cap reached")
			}
			done := make(chan Outcome, 1)
			time.AfterFunc(30*time.Second, func() { done <- Outcome{}; close(done) })
			return done, nil
		}
		s := mustNew(t, Config{Specs: []Spec{{Specialist: "ux", Continuous: true}}, Starter: f, Backoff: Backoff{Min: 2 * time.Second}})
		s.Start(t.Context())
		time.Sleep(40 * time.Second)
		synctest.Wait()
		// Refused at 0 and 2, started at 4, ran 30 s, waited Min: 36.
		if diff := cmp.Diff(secs(0, 2, 4, 36), ats(f.Calls("ux"))); diff != "" {
			t.Errorf("attempts (-want +got):\n%s", diff)
		}
		st := s.Stats()["ux"]
		if st.Skipped != 2 || st.Started != 2 || st.LastSkip != "fleet-wide cap reached" {
			t.Errorf("stats = %+v", st)
		}
	})
}

func TestBackoffNext(t *testing.T) {
	b := Backoff{Min: time.Second, Max: 10 * time.Minute}
	found, quiet, failed := Outcome{NewFindings: 1}, Outcome{}, Outcome{Err: errors.New("x")}
	prev := time.Duration(0)
	var got []time.Duration
	for range 12 {
		prev = b.next(prev, found)
		got = append(got, prev)
	}
	want := secs(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 600, 600)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if d := b.next(600*time.Second, quiet); d != time.Second {
		t.Errorf("quiet after max: %s", d)
	}
	if d := b.next(4*time.Second, failed); d != 8*time.Second {
		t.Errorf("failed: %s", d)
	}
}

func TestStopDrainsAndIsBoundedByCtx(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeStarter()
		s, err := New(Config{Specs: []Spec{{Specialist: "a", Every: time.Second}, {Specialist: "b", Continuous: true}}, Starter: f})
		if err != nil {
			t.Fatal(err)
		}
		s.Start(t.Context())
		time.Sleep(10 * time.Second)
		// The ticks due at 10 s wake with this goroutine: let them record
		// their calls first, or Stop drains one that before did not count.
		synctest.Wait()
		before := len(f.Calls(""))
		start := time.Now()
		if err := s.Stop(t.Context()); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("Stop took %s of bubble time", d)
		}
		time.Sleep(time.Minute)
		if after := len(f.Calls("")); after != before {
			t.Errorf("%d attempts after Stop", after-before)
		}
		if err := s.Stop(t.Context()); err != nil {
			t.Errorf("second Stop: %v", err)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		// A Start call that hangs: Stop gives up at the ctx deadline.
		f := newFakeStarter()
		release := make(chan struct{})
		f.run = func(string, string) (<-chan Outcome, error) {
			<-release
			return nil, errors.New("stopping")
		}
		s, err := New(Config{Specs: []Spec{{Specialist: "a", Every: time.Second}}, Starter: f})
		if err != nil {
			t.Fatal(err)
		}
		s.Start(t.Context())
		time.Sleep(1500 * time.Millisecond)
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		start := time.Now()
		err = s.Stop(ctx)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Stop = %v, want deadline exceeded", err)
		}
		if d := time.Since(start); d != 5*time.Second {
			t.Errorf("Stop returned after %s, want 5s", d)
		}
		close(release)
		synctest.Wait()
	})
}

func TestReplace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeStarter()
		s := mustNew(t, Config{Specs: []Spec{
			{Specialist: "keep", Every: 10 * time.Second},
			{Specialist: "gone", Every: 10 * time.Second},
			{Specialist: "change", Cron: "*/10 * * * * *"},
		}, Starter: f})
		s.Start(t.Context())
		time.Sleep(15 * time.Second)

		// An invalid set is refused as a whole and the old one keeps firing.
		err := s.Replace([]Spec{{Specialist: "keep", Every: 10 * time.Second}, {Specialist: "bad", Cron: "61 * * * *"}})
		if err == nil || !strings.Contains(err.Error(), "specialist bad") || !strings.Contains(err.Error(), `"61 * * * *"`) {
			t.Fatalf("Replace = %v, want an error naming the specialist and the spec", err)
		}
		time.Sleep(10 * time.Second) // t = 25
		for _, name := range []string{"keep", "gone", "change"} {
			if n := len(f.Calls(name)); n != 2 {
				t.Errorf("%s fired %d times by 25s, want 2", name, n)
			}
		}

		// A valid set: keep keeps its grid, gone stops, change moves, new starts.
		if err := s.Replace([]Spec{
			{Specialist: "keep", Every: 10 * time.Second},
			{Specialist: "change", Cron: "*/20 * * * * *"},
			{Specialist: "new", Every: 10 * time.Second},
		}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(30 * time.Second) // t = 55
		synctest.Wait()
		if diff := cmp.Diff(secs(10, 20, 30, 40, 50), ats(f.Calls("keep"))); diff != "" {
			t.Errorf("keep (-want +got):\n%s", diff)
		}
		if n := len(f.Calls("gone")); n != 2 {
			t.Errorf("gone fired %d times, want 2", n)
		}
		if diff := cmp.Diff(secs(10, 20, 40), ats(f.Calls("change"))); diff != "" {
			t.Errorf("change (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(secs(35, 45, 55), ats(f.Calls("new"))); diff != "" {
			t.Errorf("new (-want +got):\n%s", diff)
		}
		if _, ok := s.Stats()["gone"]; !ok {
			t.Error("gone's counters were dropped")
		}
	})
}

func TestReplaceStartsAndStopsContinuous(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeStarter()
		s := mustNew(t, Config{Specs: []Spec{{Specialist: "c", Every: time.Minute}}, Starter: f, Backoff: Backoff{Min: 5 * time.Second}})
		s.Start(t.Context())
		time.Sleep(time.Second)
		if err := s.Replace([]Spec{{Specialist: "c", Continuous: true}}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(12 * time.Second)
		synctest.Wait()
		if diff := cmp.Diff(secs(1, 6, 11), ats(f.Calls("c"))); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		if err := s.Replace(nil); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute)
		if n := len(f.Calls("c")); n != 3 {
			t.Errorf("%d attempts after removal, want 3", n)
		}
	})
}

func TestFireByHand(t *testing.T) {
	f := newFakeStarter()
	s := mustNew(t, Config{Specs: []Spec{{Specialist: "smoke"}}, Starter: f})
	if started, why := s.Fire(t.Context(), "smoke", "manual"); !started || why != "" {
		t.Errorf("Fire = %v %q", started, why)
	}
	st := s.Stats()["smoke"]
	if st.Fired != 1 || st.Started != 1 || st.LastReason != "manual" {
		t.Errorf("stats = %+v", st)
	}
}

func TestNewValidates(t *testing.T) {
	f := newFakeStarter()
	src := newFakeChain()
	tests := []struct {
		name string
		cfg  Config
		want []string // substrings of the error
	}{
		{"bad cron", Config{Specs: []Spec{{Specialist: "smoke", Cron: "60 * * * * *"}}}, []string{"specialist smoke", `cron spec "60 * * * * *"`}},
		{"bad descriptor", Config{Specs: []Spec{{Specialist: "smoke", Cron: "@fortnightly"}}}, []string{"specialist smoke", "@fortnightly"}},
		{"unknown event", Config{Specs: []Spec{{Specialist: "sec", Events: []string{"deployed"}}}, Events: src, Registry: registryAddr}, []string{"specialist sec", `unknown event "deployed"`}},
		{"no source", Config{Specs: []Spec{{Specialist: "sec", Events: []string{"name_registered"}}}, Registry: registryAddr}, []string{"specialist sec", "event source"}},
		{"no address", Config{Specs: []Spec{{Specialist: "tri", Events: []string{"feedback"}}}, Events: src, Registry: registryAddr}, []string{"specialist tri", "address"}},
		{"two kinds", Config{Specs: []Spec{{Specialist: "x", Cron: "@hourly", Continuous: true}}}, []string{"specialist x", "only one"}},
		{"short every", Config{Specs: []Spec{{Specialist: "x", Every: time.Millisecond}}}, []string{"specialist x", "below one second"}},
		{"duplicate", Config{Specs: []Spec{{Specialist: "x"}, {Specialist: "x"}}}, []string{"specialist x", "twice"}},
		{"all reported", Config{Specs: []Spec{{Specialist: "a", Cron: "x"}, {Specialist: "b", Cron: "y"}}}, []string{"specialist a", "specialist b"}},
		{"bad backoff", Config{Backoff: Backoff{Min: time.Minute, Max: time.Second}}, []string{"backoff"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.Starter = f
			_, err := New(tt.cfg)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
	_, err := New(Config{Starter: f, Specs: []Spec{{Specialist: "sec", Events: []string{EventNameRegistered}}}})
	if !errors.Is(err, ErrNoEventSource) {
		t.Errorf("no source: %v, want ErrNoEventSource", err)
	}
	_, err = New(Config{Starter: f, Events: src, Specs: []Spec{{Specialist: "sec", Events: []string{EventCodeChanged}}}})
	if !errors.Is(err, ErrNoAddress) {
		t.Errorf("no registry: %v, want ErrNoAddress", err)
	}
	if _, err := New(Config{}); err == nil {
		t.Error("no error without a Starter")
	}
	if _, err := New(Config{Starter: f, Events: src, Registry: registryAddr, FeedbackLog: logAddr, Specs: []Spec{
		{Specialist: "a", Cron: "0 */5 * * * *", Events: []string{"code_changed", "name_registered", "feedback"}},
		{Specialist: "b", Every: time.Hour}, {Specialist: "c", Continuous: true}, {Specialist: "d"},
	}}); err != nil {
		t.Errorf("valid config: %v", err)
	}
}

func TestStartAfterStopDoesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeStarter()
		s, err := New(Config{Specs: []Spec{{Specialist: "a", Continuous: true}}, Starter: f})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Stop(t.Context()); err != nil {
			t.Fatal(err)
		}
		s.Start(t.Context())
		time.Sleep(time.Minute)
		if n := len(f.Calls("")); n != 0 {
			t.Errorf("%d attempts", n)
		}
	})
}

func TestCancelledStartCtxStopsFiring(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeStarter()
		s := mustNew(t, Config{Specs: []Spec{{Specialist: "a", Every: 10 * time.Second}}, Starter: f})
		ctx, cancel := context.WithCancel(t.Context())
		s.Start(ctx)
		time.Sleep(15 * time.Second)
		cancel()
		time.Sleep(time.Minute)
		if n := len(f.Calls("a")); n != 1 {
			t.Errorf("%d attempts, want 1", n)
		}
	})
}
