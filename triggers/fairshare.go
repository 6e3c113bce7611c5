package triggers

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
)

// Yielder is what a Starter may also implement (the daemon's does, through
// fleet.Runner.Yield) so that a continuous specialist's run gives its slot
// up at its next session boundary when another specialist's start waits
// for one. Yield reports whether a run of specialist was going and asked.
type Yielder interface {
	Yield(specialist string) bool
}

// yieldSlot asks one running continuous specialist, once per run, to give
// its slot up, when a start waits for a slot. The caller must not hold s.mu
// (the Starter's Yield takes its own locks).
func (s *Scheduler) yieldSlot() {
	y, ok := s.cfg.Starter.(Yielder)
	if !ok {
		return
	}
	s.mu.Lock()
	name := ""
	if _, waiting := s.ahead(""); waiting {
		for _, n := range slices.Sorted(maps.Keys(s.specs)) {
			at, asked := s.yieldAsked[n]
			if s.specs[n].Continuous && s.runningNow(n) && (!asked || at != s.startedEnds[n]) {
				name = n
				s.yieldAsked[n] = s.startedEnds[n] // this run is asked once
				break
			}
		}
	}
	s.mu.Unlock()
	if name != "" && y.Yield(name) {
		s.mu.Lock()
		s.statsFor(name).Yielded++
		s.mu.Unlock()
		s.log.Info("continuous run asked to yield its slot at its next session boundary", keySpecialist, name)
	}
}

// fireTick makes the start attempt of one cron or every tick (see Fair
// share in the package doc). A tick of a specialist whose start is pending
// joins it; while other specialists wait for a slot it queues behind them
// without asking the Starter; a refusal at the cap makes it wait; any other
// refusal (the specialist running, paused, budget) is a skip. A tick of a
// specialist whose run the scheduler knows is going asks the Starter (and
// is refused as running) rather than queueing.
func (s *Scheduler) fireTick(ctx context.Context, name, reason string) {
	if ctx.Err() != nil {
		return
	}
	now := time.Now()
	s.mu.Lock()
	st := s.statsFor(name)
	if p := s.pending[name]; p != nil {
		st.Fired++
		st.Pending++
		st.LastFired, st.LastReason = now, reason
		if p.tick == "" {
			p.tick = reason
			s.seq++
			p.seq = s.seq
		}
		why := p.reason() // p is shared: read under s.mu
		s.mu.Unlock()
		s.log.Debug("tick joined the pending start", keySpecialist, name, keyReason, why)
		return
	}
	all, waiting := s.ahead(name)
	if waiting && s.runningNow(name) {
		// Refused as running without asking the Starter: a run that
		// ended a moment ago, its end not yet reported (RunEnded), freed
		// a slot the Starter would give this tick, ahead of the starts
		// that wait for one (ci37, TestStarvedIsShownWithItsReason: the
		// hog's tick at the instant its run ended started it again).
		st.Fired++
		st.LastFired, st.LastReason = now, reason
		st.skip(ErrRunning.Error())
		s.mu.Unlock()
		s.log.Debug("trigger skipped", keySpecialist, name, keyReason, reason, keyWhy, "its run is going while others wait for a slot")
		return
	}
	if waiting {
		st.Fired++
		st.Pending++
		st.LastFired, st.LastReason = now, reason
		s.join(name, nil, reason, all)
		s.mu.Unlock()
		s.log.Debug("tick waits behind the starts waiting for a slot", keySpecialist, name)
		s.yieldSlot()
		return
	}
	// Only the cap holds a tick: one refused because its own run is on
	// is dropped (the run reads what the tick stands for).
	atCap := func(err error) bool { return errors.Is(err, ErrAtCap) && !errors.Is(err, ErrRunning) }
	s.start(ctx, name, nil, reason, reason, atCap, "tick waits for a free slot")
}

// join queues a start of name behind the starts waiting for a slot,
// without asking the Starter: it is due when the first of them is (all is
// what ahead returned), and is tried after them. The caller holds s.mu and
// has checked that nothing is pending for name.
func (s *Scheduler) join(name string, counts map[string]int, tick string, all uint64) {
	s.seq++
	c := maps.Clone(counts)
	if c == nil {
		c = map[string]int{}
	}
	own, _ := s.endCounts(name)
	s.pending[name] = &pendingStart{counts: c, tick: tick, since: time.Now(), seq: s.seq, atCap: true, own: own, all: all}
	s.queueChanged()
}

// yield waits, before a continuous specialist's next run, until no other
// specialist waits for a slot, so the slot its last run freed goes to them.
// It reports false when ctx ended.
func (s *Scheduler) yield(ctx context.Context, name string) bool {
	counted := false
	for {
		s.mu.Lock()
		_, waiting := s.ahead(name)
		ch := s.queue
		if waiting && !counted {
			s.statsFor(name).Yielded++
			counted = true
		}
		s.mu.Unlock()
		if !waiting {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-ch:
		}
	}
}

// StarvedPeriods is how many of its periods a scheduled specialist may go
// without a run before [Stats] calls it starved.
const StarvedPeriods = 3

// period is how often c's schedule ticks around t: Every, or the gap
// between a cron spec's next two ticks; zero for continuous, event-only
// and manual specs, which are never called starved.
func (c compiled) period(t time.Time) time.Duration {
	switch {
	case c.Every > 0:
		return c.Every
	case c.sched != nil:
		n := c.sched.Next(t)
		return c.sched.Next(n).Sub(n)
	}
	return 0
}

// starved fills st's starvation fields for a specialist scheduled with c
// since c.since, at now: starved when it is not running and no run started
// in StarvedPeriods periods. The caller holds s.mu.
func (s *Scheduler) starved(name string, c compiled, st *Stats, now time.Time) {
	st.Period = c.period(now)
	if st.Period <= 0 || c.since.IsZero() || s.runningNow(name) {
		return // a long run of its own is not starvation
	}
	last := c.since
	if st.LastStarted.After(last) {
		last = st.LastStarted
	}
	if now.Sub(last) <= StarvedPeriods*st.Period {
		return
	}
	st.Starved = true
	var why string
	switch p := s.pending[name]; {
	case p != nil && p.atCap:
		why = fmt.Sprintf("its start (%s) has waited since %s for a free slot: the fleet is at its concurrency cap", p.reason(), p.since.Format(time.TimeOnly))
	case p != nil:
		why = fmt.Sprintf("its start (%s) has waited since %s for its own run to end", p.reason(), p.since.Format(time.TimeOnly))
	case st.LastSkip != "":
		why = "its last start was refused: " + st.LastSkip
	default:
		why = "no tick has asked for a run"
	}
	what := "since it was scheduled at " + c.since.Format(time.TimeOnly)
	if !st.LastStarted.IsZero() {
		what = "since " + st.LastStarted.Format(time.TimeOnly)
	}
	st.StarvedReason = fmt.Sprintf("no run %s (%d periods of %s): %s", what, StarvedPeriods, st.Period, why)
}
