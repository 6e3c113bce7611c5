package triggers

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/qafleet/fleetd/fleet"
)

const pollEvery = 2 * time.Second

// eventConfig subscribes specialists to events on src.
func eventConfig(f *fakeStarter, src EventSource, dir string, specs ...Spec) Config {
	return Config{Specs: specs, Starter: f, Events: src, Registry: registryAddr, FeedbackLog: logAddr, StateDir: dir, PollInterval: pollEvery}
}

// poll lets one poll interval pass and every goroutine settle.
func poll() {
	time.Sleep(pollEvery)
	synctest.Wait()
}

func TestEventsFireOncePerEvent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFakeChain()
		src.Mine(registered(1, "history")) // before the first start: never fired
		f := newFakeStarter()
		s := mustNew(t, eventConfig(f, src, t.TempDir(), Spec{Specialist: "sec", Events: []string{EventNameRegistered}}))
		s.Start(t.Context())
		synctest.Wait()

		src.Mine(registered(2, "alice"))
		poll()
		src.Mine(registered(3, "bob"), registered(4, "carol"))
		src.Mine()
		src.Mine(registered(5, "dave"))
		poll()
		for range 5 {
			poll()
		}
		want := []string{"event:name_registered x 1", "event:name_registered x 3"}
		if diff := cmp.Diff(want, f.Reasons("sec")); diff != "" {
			t.Errorf("reasons (-want +got):\n%s", diff)
		}
		if st := s.Stats()["sec"]; st.Events != 4 || st.Started != 2 {
			t.Errorf("stats = %+v", st)
		}
	})
}

func TestEventsCoalescePerSpecialist(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFakeChain()
		f := newFakeStarter()
		f.run = overlapStarter(f, time.Hour)
		s := mustNew(t, eventConfig(f, src, "",
			Spec{Specialist: "tri", Events: []string{EventFeedback, EventNameRegistered}},
			Spec{Specialist: "sec", Events: []string{EventNameRegistered}},
		))
		f.TellEnds(s)
		s.Start(t.Context())
		synctest.Wait()
		src.Mine(registered(1, "a"), feedbackLog(1, 0), feedbackLog(1, 1))
		poll()
		if diff := cmp.Diff([]string{"event:name_registered x 1, feedback x 2"}, f.Reasons("tri")); diff != "" {
			t.Errorf("tri (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"event:name_registered x 1"}, f.Reasons("sec")); diff != "" {
			t.Errorf("sec (-want +got):\n%s", diff)
		}
		// Still running: the next poll's attempt is refused and becomes the
		// pending start; the polls after it join it, counting their events.
		src.Mine(feedbackLog(2, 2))
		poll()
		src.Mine(registered(3, "b"), feedbackLog(3, 3))
		poll()
		src.Mine(feedbackLog(4, 4))
		poll()
		st := s.Stats()["tri"]
		if st.Fired != 2 || st.Skipped != 0 || st.Pending != 3 || st.Events != 7 || st.PendingReason != "event:name_registered x 1, feedback x 3" {
			t.Errorf("tri stats = %+v", st)
		}
		if diff := cmp.Diff([]string{"event:name_registered x 1, feedback x 2"}, f.Started("tri")); diff != "" {
			t.Errorf("tri started while running (-want +got):\n%s", diff)
		}
		// The runs end an hour after they started: each specialist's
		// pending start runs then, once, with every event it stands for.
		first := f.Calls("tri")[0].At
		time.Sleep(first + time.Hour - time.Since(f.t0))
		synctest.Wait()
		if diff := cmp.Diff([]string{"event:name_registered x 1, feedback x 2", "event:name_registered x 1, feedback x 3"}, f.Started("tri")); diff != "" {
			t.Errorf("tri (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"event:name_registered x 1", "event:name_registered x 1"}, f.Started("sec")); diff != "" {
			t.Errorf("sec (-want +got):\n%s", diff)
		}
		for _, name := range []string{"tri", "sec"} {
			calls := f.Calls(name)
			if last := calls[len(calls)-1]; !last.Started || last.At != first+time.Hour {
				t.Errorf("%s: last call %+v, want a start at %s (when the first run ended)", name, last, first+time.Hour)
			}
		}
		st = s.Stats()["tri"]
		if st.Started != 2 || st.Retried != 1 || st.PendingReason != "" || st.LastReason != "event:name_registered x 1, feedback x 3" {
			t.Errorf("tri stats after the retry = %+v", st)
		}
	})
}

func TestEventsReorgNeverFiresTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFakeChain()
		f := newFakeStarter()
		s := mustNew(t, eventConfig(f, src, t.TempDir(), Spec{Specialist: "sec", Events: []string{EventNameRegistered}}))
		s.Start(t.Context())
		synctest.Wait()

		src.Mine(registered(1, "alice")) // block 1
		src.Mine()                       // block 2
		poll()
		// Blocks 1 and 2 are replaced: alice's transaction moves to block 2,
		// behind another log (so its index changes too), and bob's appears.
		src.Reorg(2, nil, []fakeLog{feedbackLog(9, 0), registered(1, "alice")}, []fakeLog{registered(2, "bob")})
		poll()
		// A reorg to a shorter chain: blocks 2 and 3 go, block 2 comes back
		// with alice and bob in one block.
		src.Reorg(2, []fakeLog{registered(2, "bob"), registered(1, "alice")})
		poll()
		src.Mine(registered(3, "carol"))
		poll()
		want := []string{"event:name_registered x 1", "event:name_registered x 1", "event:name_registered x 1"}
		if diff := cmp.Diff(want, f.Reasons("sec")); diff != "" {
			t.Errorf("reasons (-want +got):\n%s", diff)
		}
		if st := s.Stats()["sec"]; st.Events != 3 {
			t.Errorf("events = %d, want 3 (alice, bob, carol)", st.Events)
		}
		// The reorg made the poller read the replaced blocks again.
		if rs := src.Ranges(); !hasRange(rs, 1) {
			t.Errorf("ranges %v never re-read from block 1", rs)
		}
	})
}

func TestEventsReorgDuringReadFiresNoOrphan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFakeChain()
		f := newFakeStarter()
		s := mustNew(t, eventConfig(f, src, "", Spec{Specialist: "sec", Events: []string{EventNameRegistered}}))
		s.Start(t.Context())
		synctest.Wait()
		src.Mine(registered(1, "orphan"))
		src.mu.Lock()
		src.duringFilter = func(c *fakeChain) { c.reorgLocked(1, []fakeLog{registered(2, "kept")}) }
		src.mu.Unlock()
		poll()
		poll()
		if diff := cmp.Diff([]string{"event:name_registered x 1"}, f.Reasons("sec")); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		if st := s.Stats()["sec"]; st.Events != 1 {
			t.Errorf("events = %d: the orphaned log fired", st.Events)
		}
	})
}

func hasRange(rs [][2]uint64, from uint64) bool {
	n := 0
	for _, r := range rs {
		if r[0] == from {
			n++
		}
	}
	return n >= 2
}

func TestEventsChainResetRescansBoundedDepth(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFakeChain()
		for range 100 {
			src.Mine()
		}
		f := newFakeStarter()
		s := mustNew(t, eventConfig(f, src, "", Spec{Specialist: "sec", Events: []string{EventNameRegistered}}))
		s.Start(t.Context())
		synctest.Wait()
		src.Mine(registered(1, "a")) // block 101
		poll()
		// Every block from 1 on is replaced by a new history: no remembered
		// checkpoint is canonical any more.
		src.Reorg(101, nil, []fakeLog{registered(1, "a")}, []fakeLog{registered(2, "b")})
		poll()
		if diff := cmp.Diff([]string{"event:name_registered x 1", "event:name_registered x 1"}, f.Reasons("sec")); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
}

func TestEventsSurviveRPCOutage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFakeChain()
		f := newFakeStarter()
		s := mustNew(t, eventConfig(f, src, t.TempDir(), Spec{Specialist: "sec", Events: []string{EventNameRegistered}}))
		s.Start(t.Context())
		synctest.Wait()
		src.Mine(registered(1, "a"))
		poll()

		// The node is down for two minutes while three names are registered.
		src.SetDown(true)
		before := src.Calls("BlockNumber")
		src.Mine(registered(2, "b"))
		src.Mine(registered(3, "c"), registered(4, "d"))
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		// Backed off: 2, 2, 4, 8, 16, 32, 60, ... rather than 60 polls.
		if n := src.Calls("BlockNumber") - before; n > 8 || n < 4 {
			t.Errorf("%d polls during a 2 min outage, want backoff (4..8)", n)
		}
		src.SetDown(false)
		time.Sleep(time.Minute)
		synctest.Wait()

		// Failures mid-poll: after the logs were read (the second read of
		// the range's block hash), and the logs call itself.
		src.Mine(registered(5, "e"))
		src.FailNext("BlockHash", 2) // rewind check, first hash read, then this
		poll()
		poll()
		src.Mine(registered(6, "f"))
		src.FailNext("FilterLogs", 0)
		poll()
		poll()
		for range 3 {
			poll()
		}
		want := []string{"event:name_registered x 1", "event:name_registered x 3", "event:name_registered x 1", "event:name_registered x 1"}
		if diff := cmp.Diff(want, f.Reasons("sec")); diff != "" {
			t.Errorf("reasons (-want +got):\n%s", diff)
		}
		// No block was skipped: the ranges read cover 1..head without a gap.
		next := uint64(1)
		for _, r := range src.Ranges() {
			if r[0] > next {
				t.Fatalf("gap: blocks %d..%d never read (ranges %v)", next, r[0]-1, src.Ranges())
			}
			next = max(next, r[1]+1)
		}
		if head, _ := src.BlockNumber(t.Context()); next != head+1 {
			t.Errorf("read up to %d, head %d", next-1, head)
		}
	})
}

func TestEventsRestartFromPersistedState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		src := newFakeChain()
		spec := Spec{Specialist: "sec", Events: []string{EventNameRegistered, EventCodeChanged}}
		f1 := newFakeStarter()
		s1, err := New(eventConfig(f1, src, dir, spec))
		if err != nil {
			t.Fatal(err)
		}
		s1.Start(t.Context())
		synctest.Wait()
		src.Mine(registered(1, "a"))
		poll()
		if err := s1.Stop(t.Context()); err != nil {
			t.Fatal(err)
		}
		if n := len(f1.Calls("")); n != 1 {
			t.Fatalf("first scheduler: %d fires, want 1", n)
		}

		src.Mine(registered(2, "b")) // while down
		src.Mine()
		f2 := newFakeStarter()
		s2 := mustNew(t, eventConfig(f2, src, dir, spec))
		s2.Start(t.Context())
		synctest.Wait()
		for range 3 {
			poll()
		}
		if diff := cmp.Diff([]string{"event:name_registered x 1"}, f2.Reasons("sec")); diff != "" {
			t.Errorf("after restart (-want +got):\n%s", diff)
		}
		entries, _ := os.ReadDir(dir)
		if len(entries) != 1 || entries[0].Name() != stateFileName {
			t.Errorf("state dir holds %v, want only %s", entries, stateFileName)
		}

		// A fresh state dir starts at the head: nothing from history.
		f3 := newFakeStarter()
		s3 := mustNew(t, eventConfig(f3, src, t.TempDir(), spec))
		s3.Start(t.Context())
		synctest.Wait()
		poll()
		if n := len(f3.Calls("")); n != 0 {
			t.Errorf("fresh state fired %d times", n)
		}
	})
}

func TestEventsWatchedAddressChangeStartsAtHead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		src := newFakeChain()
		spec := Spec{Specialist: "sec", Events: []string{EventNameRegistered}}
		s1, err := New(eventConfig(newFakeStarter(), src, dir, spec))
		if err != nil {
			t.Fatal(err)
		}
		s1.Start(t.Context())
		synctest.Wait()
		s1.Stop(t.Context())
		other := fleet.Address{0xcc}
		src.Mine(fakeLog{addr: other, log: registered(1, "x").log})
		cfg := eventConfig(newFakeStarter(), src, dir, spec)
		cfg.Registry = other
		f := cfg.Starter.(*fakeStarter)
		s2 := mustNew(t, cfg)
		s2.Start(t.Context())
		synctest.Wait()
		poll()
		if n := len(f.Calls("")); n != 0 {
			t.Errorf("%d fires from the new address's history", n)
		}
	})
}

func TestCodeChangedFiresOncePerRedeploy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFakeChain()
		f := newFakeStarter()
		dir := t.TempDir()
		spec := Spec{Specialist: "smoke", Events: []string{EventCodeChanged}}
		s := mustNew(t, eventConfig(f, src, dir, spec))
		s.Start(t.Context())
		synctest.Wait() // first observation: recorded, not fired
		src.Mine()
		poll()
		src.Redeploy(registryAddr, 0xc1)
		poll()
		src.Mine()
		src.Mine()
		poll()
		poll()
		src.Redeploy(registryAddr, 0xc0) // back to the first code: still a change
		src.Mine()
		poll()
		poll()
		if diff := cmp.Diff([]string{"event:code_changed x 1", "event:code_changed x 1"}, f.Reasons("smoke")); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		// An idle poll costs one block hash read, no code read.
		code := src.Calls("CodeHash")
		poll()
		if n := src.Calls("CodeHash"); n != code {
			t.Errorf("idle poll read the code")
		}
		s.Stop(t.Context())
		f2 := newFakeStarter()
		s2 := mustNew(t, eventConfig(f2, src, dir, spec))
		s2.Start(t.Context())
		src.Mine()
		poll()
		if n := len(f2.Calls("")); n != 0 {
			t.Errorf("restart fired %d times for unchanged code", n)
		}
	})
}

func TestEventsConfirmations(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFakeChain()
		src.Mine()
		f := newFakeStarter()
		cfg := eventConfig(f, src, "", Spec{Specialist: "sec", Events: []string{EventNameRegistered}})
		cfg.Confirmations = 2
		s := mustNew(t, cfg)
		s.Start(t.Context())
		synctest.Wait() // head 1 < 2 confirmations: nothing yet
		src.Mine()      // head 2: starts watching at block 0
		poll()
		src.Mine(registered(1, "a")) // block 3
		poll()
		src.Mine()
		poll()
		if n := len(f.Calls("")); n != 0 {
			t.Fatalf("fired at %d confirmations", 1)
		}
		src.Mine()
		poll()
		if diff := cmp.Diff([]string{"event:name_registered x 1"}, f.Reasons("sec")); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
}

func TestReplaceAddsEventSubscription(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFakeChain()
		f := newFakeStarter()
		s := mustNew(t, eventConfig(f, src, "", Spec{Specialist: "sec", Every: time.Hour}))
		s.Start(t.Context())
		synctest.Wait()
		poll()
		if n := src.Calls("BlockNumber"); n != 0 {
			t.Errorf("polled the chain %d times with no subscriber", n)
		}
		if err := s.Replace([]Spec{{Specialist: "sec", Every: time.Hour, Events: []string{EventNameRegistered}}}); err != nil {
			t.Fatal(err)
		}
		poll()
		src.Mine(registered(1, "a"))
		poll()
		if diff := cmp.Diff([]string{"event:name_registered x 1"}, f.Reasons("sec")); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
}

func TestCorruptStateIsAnError(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, stateFileName), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := New(eventConfig(newFakeStarter(), newFakeChain(), dir, Spec{Specialist: "sec", Events: []string{EventNameRegistered}}))
	if err == nil || !strings.Contains(err.Error(), stateFileName) {
		t.Errorf("New = %v, want an error naming the state file", err)
	}
}

func TestPollBackoff(t *testing.T) {
	var got []time.Duration
	for fails := 1; fails <= 8; fails++ {
		got = append(got, pollBackoff(2*time.Second, fails))
	}
	if diff := cmp.Diff(secs(2, 4, 8, 16, 32, 60, 60, 60), got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if d := pollBackoff(5*time.Minute, 3); d != 5*time.Minute {
		t.Errorf("long interval: %s", d)
	}
}

func TestSeenIsBounded(t *testing.T) {
	st := &kindState{Last: 20_000, Checkpoints: []checkpoint{{N: 19_990}, {N: 20_000}}, seen: map[string]uint64{}}
	for i := range maxSeen + 500 {
		st.seen[strings.Repeat("k", 3)+string(rune(i))] = 19_990 + uint64(i%10)
	}
	st.seen["old"] = 100
	st.prune()
	if _, ok := st.seen["old"]; ok {
		t.Error("a log below every rewind point was kept")
	}
	if len(st.seen) != maxSeen {
		t.Errorf("%d seen, want %d", len(st.seen), maxSeen)
	}
}

func TestLogKeyIgnoresPosition(t *testing.T) {
	a := registered(1, "alice").log
	b := a
	b.Block, b.Index, b.BlockHash = 7, 3, [32]byte{9}
	if logKey(a) != logKey(b) {
		t.Error("moving a log changed its identity")
	}
	c := registered(1, "bob").log
	d := registered(2, "alice").log
	if logKey(a) == logKey(c) || logKey(a) == logKey(d) {
		t.Error("different logs share an identity")
	}
}
