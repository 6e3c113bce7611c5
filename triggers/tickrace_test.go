package triggers

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// capOne is a Starter with one slot whose runs end when the test says,
// and tell the scheduler later still: the window in which a run has ended
// and freed its slot but RunEnded has not come yet.
type capOne struct {
	mu      sync.Mutex
	t0      time.Time
	running map[string]bool
	starts  map[string][]time.Duration
}

func (c *capOne) Start(_ context.Context, name, _ string) (<-chan Outcome, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.running[name]:
		return nil, ErrRunning
	case len(c.running) > 0:
		return nil, ErrAtCap
	}
	c.running[name] = true
	c.starts[name] = append(c.starts[name], time.Since(c.t0))
	return make(chan Outcome), nil
}

func (c *capOne) end(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.running, name)
}

func (c *capOne) started(name string) []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.starts[name])
}

// TestOwnTickDoesNotTakeAFreedSlot: the hog's run has ended and freed the
// fleet's one slot, its end not yet reported, when its next tick comes;
// perf has waited for a slot since before. The tick must not take the
// slot: perf starts once the end is reported, and the hog does not run
// again ahead of it. Before, the tick asked the Starter, which started the
// hog again (ci37, TestStarvedIsShownWithItsReason).
func TestOwnTickDoesNotTakeAFreedSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &capOne{t0: time.Now(), running: map[string]bool{}, starts: map[string][]time.Duration{}}
		s := mustNew(t, Config{Specs: []Spec{{Specialist: "hog", Every: 5 * time.Second}, {Specialist: "perf", Every: 7 * time.Second}},
			Starter: c, Logger: testLogger(t)})
		s.Start(t.Context())
		t.Cleanup(func() { s.Stop(context.Background()) })
		time.Sleep(8 * time.Second) // hog started at 5 s; perf's tick at 7 s waits
		synctest.Wait()
		if got := c.started("hog"); len(got) != 1 || c.started("perf") != nil {
			t.Fatalf("at 8 s: hog started %v, perf %v; want hog once, perf waiting", got, c.started("perf"))
		}
		c.end("hog") // its slot is free; RunEnded comes at 11 s
		time.Sleep(3 * time.Second)
		synctest.Wait()
		s.RunEnded("hog")
		time.Sleep(time.Second)
		synctest.Wait()
		if got := c.started("hog"); len(got) != 1 {
			t.Errorf("hog started at %v: its tick at 10 s took the slot its ended run freed, ahead of perf", got)
		}
		if got := c.started("perf"); len(got) != 1 {
			t.Errorf("perf started at %v, want once, when the hog's end was reported (11 s)", got)
		}
	})
}
