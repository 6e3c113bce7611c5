package triggers

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// triageSpec is how fleetd schedules triage: an interval plus every new
// feedback entry.
var triageSpec = Spec{Specialist: "tri", Every: 5 * time.Minute, Events: []string{EventFeedback}}

// startedAt returns when name's runs started, since the starter was made.
func startedAt(f *fakeStarter, name string) []time.Duration {
	var out []time.Duration
	for _, c := range f.Calls(name) {
		if c.Started {
			out = append(out, c.At)
		}
	}
	return out
}

// TestEventsDuringARunStartOneRunWhenItEnds is the triage case: feedback
// that lands while a triage pass runs was not read by it, so one more pass
// starts as soon as it ends (not at the next feedback or interval), with
// every entry counted in its reason, and never overlapping.
func TestEventsDuringARunStartOneRunWhenItEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFakeChain()
		f := newFakeStarter()
		f.run = overlapStarter(f, 30*time.Second)
		s := mustNew(t, eventConfig(f, src, "", triageSpec))
		f.TellEnds(s)
		s.Start(t.Context())
		synctest.Wait()
		src.Mine(feedbackLog(1, 0))
		poll() // 2 s: the first pass starts, to end at 32 s
		src.Mine(feedbackLog(2, 1), feedbackLog(2, 2))
		poll()
		src.Mine(feedbackLog(3, 3))
		src.Mine(feedbackLog(4, 4), feedbackLog(4, 5))
		poll()
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		if diff := cmp.Diff([]string{"event:feedback x 1", "event:feedback x 5"}, f.Started("tri")); diff != "" {
			t.Errorf("runs (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(secs(2, 32), startedAt(f, "tri")); diff != "" {
			t.Errorf("run starts (-want +got):\n%s", diff)
		}
		// One refused attempt (the poll at 4 s); the poll at 6 s joined it
		// without asking the starter.
		if n := len(f.Calls("tri")); n != 3 {
			t.Errorf("%d start calls, want 3: %+v", n, f.Calls("tri"))
		}
		want := Stats{Fired: 2, Started: 2, Events: 6, Pending: 2, Retried: 1, LastReason: "event:feedback x 5",
			LastStarted: f.t0.Add(32 * time.Second), LongestWait: 28 * time.Second, Period: 5 * time.Minute}
		st := s.Stats()["tri"]
		want.LastFired, want.NextRun = st.LastFired, st.NextRun
		if diff := cmp.Diff(want, st); diff != "" {
			t.Errorf("stats (-want +got):\n%s", diff)
		}
		if !st.LastFired.Equal(f.t0.Add(32 * time.Second)) {
			t.Errorf("LastFired = %v, want the retry at 32 s", st.LastFired.Sub(f.t0))
		}
	})
}

// TestEventsAtTheCapStartWhenASlotFrees: the fleet is at its cap (a probe
// holds the only slot); the event start runs when the probe's run ends.
func TestEventsAtTheCapStartWhenASlotFrees(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFakeChain()
		f := newFakeStarter()
		f.run = fleetStarter(f, 60*time.Second, 1, nil)
		s := mustNew(t, eventConfig(f, src, "", triageSpec))
		f.TellEnds(s)
		s.Start(t.Context())
		synctest.Wait()
		if ok, why := s.Fire(t.Context(), "ux", "console"); !ok {
			t.Fatalf("ux not started: %s", why)
		}
		src.Mine(feedbackLog(1, 0), feedbackLog(1, 1))
		poll()
		if st := s.Stats()["tri"]; st.PendingReason != "event:feedback x 2" || st.Started != 0 {
			t.Fatalf("tri stats at the cap = %+v", st)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if diff := cmp.Diff(secs(60), startedAt(f, "tri")); diff != "" {
			t.Errorf("tri starts (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"event:feedback x 2"}, f.Started("tri")); diff != "" {
			t.Errorf("tri reasons (-want +got):\n%s", diff)
		}
	})
}

// TestPendingWaitsForItsOwnRun: a start pending because the specialist runs
// is not retried when other specialists' runs end (each retry would be one
// more refusal in the runner's counts).
func TestPendingWaitsForItsOwnRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFakeChain()
		f := newFakeStarter()
		long := overlapStarter(f, time.Hour)
		short := overlapStarter(f, time.Second)
		f.run = func(name, reason string) (<-chan Outcome, error) {
			if name == "tri" {
				return long(name, reason)
			}
			return short(name, reason)
		}
		s := mustNew(t, eventConfig(f, src, "", Spec{Specialist: "tri", Events: []string{EventFeedback}}, Spec{Specialist: "ux", Every: 10 * time.Second}))
		f.TellEnds(s)
		s.Start(t.Context())
		synctest.Wait()
		src.Mine(feedbackLog(1, 0))
		poll()
		src.Mine(feedbackLog(2, 0))
		poll()
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		if n := len(f.Calls("tri")); n != 2 {
			t.Errorf("tri: %d start calls in 10 min, want 2 (the run, the refusal that pends)", n)
		}
		if n := len(f.Started("ux")); n < 50 {
			t.Errorf("ux ran %d times", n)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		if diff := cmp.Diff([]string{"event:feedback x 1", "event:feedback x 1"}, f.Started("tri")); diff != "" {
			t.Errorf("tri runs (-want +got):\n%s", diff)
		}
	})
}

// TestEventsWhilePausedAreNotPending: a paused fleet drops event starts as
// skips, and resuming does not start a run for them; the next event does.
// A start pending when the pause came is dropped at its retry.
func TestEventsWhilePausedAreNotPending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFakeChain()
		f := newFakeStarter()
		var paused atomic.Bool
		f.run = fleetStarter(f, 30*time.Second, 0, paused.Load)
		s := mustNew(t, eventConfig(f, src, "", Spec{Specialist: "tri", Events: []string{EventFeedback}}))
		f.TellEnds(s)
		s.Start(t.Context())
		synctest.Wait()

		paused.Store(true)
		src.Mine(feedbackLog(1, 0))
		poll()
		st := s.Stats()["tri"]
		if st.Skipped != 1 || st.LastSkip != "paused" || st.Pending != 0 || st.PendingReason != "" {
			t.Errorf("stats while paused = %+v", st)
		}
		paused.Store(false)
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		if n := len(f.Started("tri")); n != 0 {
			t.Fatalf("%d runs after resuming with no new event", n)
		}
		src.Mine(feedbackLog(2, 0))
		poll() // starts a run, to end in 30 s
		src.Mine(feedbackLog(3, 0))
		poll() // pending
		paused.Store(true)
		time.Sleep(time.Minute)
		synctest.Wait()
		st = s.Stats()["tri"]
		if st.Skipped != 2 || st.LastSkip != "pending start dropped: paused" || st.PendingReason != "" || st.Retried != 0 {
			t.Errorf("stats after the pending start met the pause = %+v", st)
		}
		paused.Store(false)
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		if diff := cmp.Diff([]string{"event:feedback x 1"}, f.Started("tri")); diff != "" {
			t.Errorf("runs (-want +got):\n%s", diff)
		}
	})
}

// TestTicksAreNotPending: a tick refused during a run stays a skip.
func TestTicksAreNotPending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeStarter()
		f.run = overlapStarter(f, 25*time.Second)
		s := mustNew(t, Config{Specs: []Spec{{Specialist: "fuzz", Every: 10 * time.Second}}, Starter: f})
		f.TellEnds(s)
		s.Start(t.Context())
		time.Sleep(41 * time.Second)
		synctest.Wait()
		// Ticks at 10 (runs to 35), 20 and 30 refused, 40 starts.
		if diff := cmp.Diff(secs(10, 40), startedAt(f, "fuzz")); diff != "" {
			t.Errorf("starts (-want +got):\n%s", diff)
		}
		if st := s.Stats()["fuzz"]; st.Skipped != 2 || st.Pending != 0 || st.Retried != 0 {
			t.Errorf("stats = %+v", st)
		}
	})
}

// TestAnyStartAbsorbsThePendingStart: a run that starts after the pending
// events were seen (here a manual one, after a run whose end nobody
// reported) reads them, so the pending start is dropped, not run again.
func TestAnyStartAbsorbsThePendingStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFakeChain()
		f := newFakeStarter()
		f.run = overlapStarter(f, 30*time.Second) // no TellEnds: ends go unreported
		s := mustNew(t, eventConfig(f, src, "", Spec{Specialist: "tri", Events: []string{EventFeedback}}))
		s.Start(t.Context())
		synctest.Wait()
		src.Mine(feedbackLog(1, 0))
		poll()
		src.Mine(feedbackLog(2, 0))
		poll()
		if st := s.Stats()["tri"]; st.PendingReason != "event:feedback x 1" {
			t.Fatalf("stats = %+v", st)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if ok, why := s.Fire(t.Context(), "tri", "console"); !ok {
			t.Fatalf("manual start refused: %s", why)
		}
		if st := s.Stats()["tri"]; st.PendingReason != "" {
			t.Errorf("pending start kept after a later run started: %+v", st)
		}
		time.Sleep(time.Minute)
		s.RunEnded("tri")
		synctest.Wait()
		if diff := cmp.Diff([]string{"event:feedback x 1", "console"}, f.Started("tri")); diff != "" {
			t.Errorf("runs (-want +got):\n%s", diff)
		}
	})
}

// TestReplaceDropsPendingOfUnsubscribed: a reload that removes the event
// subscription drops the pending start.
func TestReplaceDropsPendingOfUnsubscribed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFakeChain()
		f := newFakeStarter()
		f.run = overlapStarter(f, 30*time.Second)
		s := mustNew(t, eventConfig(f, src, "", Spec{Specialist: "tri", Events: []string{EventFeedback}}))
		f.TellEnds(s)
		s.Start(t.Context())
		synctest.Wait()
		src.Mine(feedbackLog(1, 0))
		poll()
		src.Mine(feedbackLog(2, 0))
		poll()
		if err := s.Replace([]Spec{{Specialist: "tri", Every: time.Hour}}); err != nil {
			t.Fatal(err)
		}
		if st := s.Stats()["tri"]; st.PendingReason != "" {
			t.Errorf("pending kept: %+v", st)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if n := len(f.Started("tri")); n != 1 {
			t.Errorf("%d runs, want 1", n)
		}
	})
}

func TestBusyRefusal(t *testing.T) {
	err := Busy(ErrRunning, "already running (started 12:00)")
	if err.Error() != "already running (started 12:00)" || !errors.Is(err, ErrRunning) || errors.Is(err, ErrAtCap) || !busy(err) {
		t.Errorf("Busy(ErrRunning) = %v", err)
	}
	if busy(errors.New("paused")) || busy(context.Canceled) {
		t.Error("a plain refusal is busy")
	}
}

// TestEventsDuringASlowRetryAreKept: a retry whose Start call is slow is out
// of the pending map meanwhile, so events found then make their own
// attempt; when the retry is then refused it goes back, and nothing any
// event stood for is lost: every poll's events reach a run that started
// after they were seen.
func TestEventsDuringASlowRetryAreKept(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFakeChain()
		f := newFakeStarter()
		run := overlapStarter(f, 30*time.Second)
		calls := 0
		f.run = func(name, reason string) (<-chan Outcome, error) {
			calls++
			if calls == 3 { // the retry at 32 s: slow to answer
				time.Sleep(5 * time.Second)
			}
			return run(name, reason)
		}
		s := mustNew(t, eventConfig(f, src, "", Spec{Specialist: "tri", Events: []string{EventFeedback}}))
		f.TellEnds(s)
		s.Start(t.Context())
		synctest.Wait()
		src.Mine(feedbackLog(1, 0))
		poll() // 2 s: starts, ends at 32 s
		src.Mine(feedbackLog(2, 0), feedbackLog(2, 1))
		poll() // 4 s: pending
		time.Sleep(28*time.Second + 500*time.Millisecond)
		synctest.Wait() // 32.5 s: the retry is in its slow Start call
		src.Mine(feedbackLog(3, 0), feedbackLog(3, 1), feedbackLog(3, 2))
		poll() // 34 s: its own attempt starts a run (to 64 s); the retry is refused at 37 s
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		want := []string{"event:feedback x 1", "event:feedback x 3", "event:feedback x 2"}
		if diff := cmp.Diff(want, f.Started("tri")); diff != "" {
			t.Errorf("runs (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]time.Duration{2 * time.Second, 34 * time.Second, 64 * time.Second}, startedAt(f, "tri")); diff != "" {
			t.Errorf("run starts (-want +got):\n%s", diff)
		}
		if st := s.Stats()["tri"]; st.Retried != 1 || st.PendingReason != "" || st.Events != 6 {
			t.Errorf("stats = %+v", st)
		}
	})
}

// TestRunEndingDuringTheRefusalWakesTheRetry: the run a refused start waits
// for can end while the Starter's refusal is on its way back (decided, not
// yet returned). The Scheduler reads the end counts before asking, so that
// end still counts and the start is retried as soon as the refusal is in;
// read after, or without the wake-up, the start would wait for the next run
// to end, for ever if none does. Both Start callers are covered: the first
// attempt of a poll's events and a retry refused again.
func TestRunEndingDuringTheRefusalWakesTheRetry(t *testing.T) {
	// reply is one scripted answer of the starter to tri, in call order;
	// calls past the script start a run.
	type reply struct {
		err  error
		ends string // a run of this specialist ends while the refusal is on its way
	}
	running := Busy(ErrRunning, "already running")
	atCap := Busy(ErrAtCap, "fleet-wide cap reached")
	for _, tc := range []struct {
		name   string
		script []reply
		endAt  string // when set, a run of it ends at 10 s (wakes the first retry)
		want   time.Duration
	}{
		// The poll at 2 s asks; the reply is back at 4 s: the retry starts then.
		{"attempt refused running, own run ends", []reply{{running, "tri"}}, "", 4 * time.Second},
		{"attempt refused at the cap, a slot frees", []reply{{atCap, "ux"}}, "", 4 * time.Second},
		// Refused at 2 s; ux ends at 10 s; the retry's refusal is back at 12 s.
		{"retry refused at the cap, a slot frees", []reply{{atCap, ""}, {atCap, "fz"}}, "ux", 12 * time.Second},
		{"retry refused running, own run ends", []reply{{running, ""}, {running, "tri"}}, "tri", 12 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				src := newFakeChain()
				f := newFakeStarter()
				s := mustNew(t, eventConfig(f, src, "", Spec{Specialist: "tri", Events: []string{EventFeedback}}))
				n := 0
				f.run = func(name, _ string) (<-chan Outcome, error) {
					if n >= len(tc.script) {
						return make(chan Outcome, 1), nil // runs past the test
					}
					r := tc.script[n]
					n++
					if r.ends != "" {
						time.AfterFunc(time.Second, func() { s.RunEnded(r.ends) })
						time.Sleep(2 * time.Second)
					}
					return nil, r.err
				}
				s.Start(t.Context())
				synctest.Wait()
				src.Mine(feedbackLog(1, 0), feedbackLog(1, 1))
				if tc.endAt != "" {
					time.AfterFunc(10*time.Second, func() { s.RunEnded(tc.endAt) })
				}
				time.Sleep(10 * time.Minute)
				synctest.Wait()
				if diff := cmp.Diff([]time.Duration{tc.want}, startedAt(f, "tri")); diff != "" {
					t.Errorf("run starts (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff([]string{"event:feedback x 2"}, f.Started("tri")); diff != "" {
					t.Errorf("run reasons (-want +got):\n%s", diff)
				}
				if calls := len(f.Calls("tri")); calls != len(tc.script)+1 {
					t.Errorf("%d start calls, want %d: %+v", calls, len(tc.script)+1, f.Calls("tri"))
				}
				if st := s.Stats()["tri"]; st.Retried != 1 || st.Skipped != 0 || st.PendingReason != "" {
					t.Errorf("stats = %+v", st)
				}
			})
		})
	}
}
