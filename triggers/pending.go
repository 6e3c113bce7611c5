package triggers

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/qafleet/fleetd/fleet"
)

// Refusals a Starter marks so that a start waits for a run to end rather
// than being dropped (see the package doc). They are the runner's own
// sentinels, so the daemon's Starter passes fleet.Runner's refusals through;
// other Starters may wrap them, or use [Busy] to keep their own words.
var (
	// ErrRunning: the specialist is already running. A pending event start
	// is retried when one of its runs ends.
	ErrRunning = fleet.ErrRunning
	// ErrAtCap: the fleet is at its concurrency cap. A pending start is
	// retried when any run ends.
	ErrAtCap = fleet.ErrAtCap
)

// Busy returns a refusal whose message is why and which errors.Is matches
// to cause (ErrRunning or ErrAtCap).
func Busy(cause error, why string) error { return &busyError{cause: cause, why: why} }

type busyError struct {
	cause error
	why   string
}

func (e *busyError) Error() string { return e.why }
func (e *busyError) Unwrap() error { return e.cause }

// busy reports whether a refusal may be lifted by a run's end.
func busy(err error) bool { return errors.Is(err, ErrRunning) || errors.Is(err, ErrAtCap) }

// pendingStart is one specialist's start that waits for a run to end: the
// events it stands for, per kind, the tick it stands for, and what it waits
// for.
type pendingStart struct {
	counts map[string]int
	tick   string    // "cron" or "every" when a tick refused at the cap waits; empty otherwise
	since  time.Time // when it was first refused, for retry order and the wait it measures
	seq    uint64    // s.seq at its last change: a run started later absorbs it
	atCap  bool      // waits for any run to end, not only its own: it is in the queue for a slot
	own    uint64    // the specialist's end count when it was refused
	all    uint64    // everyone's end count then
}

// reason is what the start will carry: the tick, the events, or both
// ("every, event:feedback x 2").
func (p *pendingStart) reason() string {
	switch {
	case len(p.counts) == 0:
		return p.tick
	case p.tick == "":
		return eventReason(p.counts)
	default:
		return p.tick + ", " + eventReason(p.counts)
	}
}

// eventReason is "event:" and the counts in poll order, e.g.
// "event:name_registered x 2, feedback x 1".
func eventReason(counts map[string]int) string {
	var parts []string
	for _, k := range eventKinds {
		if n := counts[k]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s x %d", k, n))
		}
	}
	return "event:" + strings.Join(parts, ", ")
}

// RunEnded tells the Scheduler that a run of specialist ended (or failed to
// run), however it was started, so a pending event start waiting for it, or
// for a free slot, is retried. The Starter's owner must call it for every
// run that ends (fleetd does from the runner's "finished" event); without
// it pending starts wait for ever. It never blocks and never calls the
// Starter, so it may be called with the Starter's own locks held.
func (s *Scheduler) RunEnded(specialist string) {
	s.endMu.Lock()
	s.endsAll++
	s.ends[specialist]++
	s.endMu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// endCounts returns how many runs of name, and of anyone, ended so far.
func (s *Scheduler) endCounts(name string) (own, all uint64) {
	s.endMu.Lock()
	defer s.endMu.Unlock()
	return s.ends[name], s.endsAll
}

// startedRun records that a run of name the scheduler asked for started,
// given name's end count read before the Start call. The caller holds s.mu.
func (s *Scheduler) startedRun(name string, own uint64) { s.startedEnds[name] = own }

// runningNow reports whether a run of name the scheduler started has not
// ended yet: no end was reported since the end count read before its Start
// call (a specialist never overlaps itself, so any end is that run's). A
// run started by someone else is not known. The caller holds s.mu.
func (s *Scheduler) runningNow(name string) bool {
	at, ok := s.startedEnds[name]
	if !ok {
		return false
	}
	own, _ := s.endCounts(name)
	return own == at
}

// due reports whether the run p waits for has ended since it was refused.
func (s *Scheduler) due(name string, p *pendingStart) bool {
	own, all := s.endCounts(name)
	if p.atCap {
		return all > p.all
	}
	return own > p.own
}

// pendingFor makes a pending start for counts and tick after a refusal
// that wraps ErrRunning or ErrAtCap, given the end counts read before the
// Start call and when the start was first refused. One already pending
// (made while a retry was in flight) is merged in, waiting for whichever end
// comes first, so a merge never delays a retry. It reports whether a run it
// waits for has already ended (the caller then wakes the retry loop). The
// caller holds s.mu.
func (s *Scheduler) pendingFor(name string, counts map[string]int, tick string, err error, own, all uint64, since time.Time) bool {
	s.seq++
	p := &pendingStart{counts: maps.Clone(counts), tick: tick, since: since, seq: s.seq, atCap: errors.Is(err, ErrAtCap), own: own, all: all}
	if p.counts == nil {
		p.counts = map[string]int{}
	}
	if old := s.pending[name]; old != nil {
		for k, n := range old.counts {
			p.counts[k] += n
		}
		p.tick = cmp.Or(p.tick, old.tick)
		if old.since.Before(p.since) {
			p.since = old.since
		}
		p.atCap = p.atCap || old.atCap
		p.own, p.all = min(p.own, old.own), min(p.all, old.all)
	}
	s.pending[name] = p
	s.queueChanged()
	return s.due(name, p)
}

// queueChanged wakes the continuous loops that yield to waiting starts.
// The caller holds s.mu.
func (s *Scheduler) queueChanged() {
	close(s.queue)
	s.queue = make(chan struct{})
}

// ahead returns the end count a start of name joining the queue waits for,
// and whether anyone else waits for a slot: another specialist's pending
// start refused at the cap, or a retry in flight. A new tick or continuous
// iteration does not ask the Starter past them (the package doc's fair
// share). The caller holds s.mu.
func (s *Scheduler) ahead(name string) (all uint64, waiting bool) {
	all = ^uint64(0)
	for n, p := range s.pending {
		if n != name && p.atCap {
			all, waiting = min(all, p.all), true
		}
	}
	for n := range s.retrying {
		if n != name {
			_, now := s.endCounts(name)
			all, waiting = min(all, now), true
			break
		}
	}
	return all, waiting
}

// absorb drops name's pending start when a run that started after its last
// change (seq is s.seq read before the Start call) reads everything it
// stands for. The caller holds s.mu.
func (s *Scheduler) absorb(name string, seq uint64) {
	if p := s.pending[name]; p != nil && p.seq <= seq {
		delete(s.pending, name)
		s.queueChanged()
		s.log.Debug("pending start absorbed by a run", keySpecialist, name, keyReason, p.reason())
	}
}

// fireEvent makes the start attempt for one poll's events of one
// specialist. While a start is pending it only joins it. A refusal that
// wraps ErrRunning or ErrAtCap becomes a pending start; any other is a skip.
func (s *Scheduler) fireEvent(ctx context.Context, name string, counts map[string]int) {
	if ctx.Err() != nil {
		return
	}
	n := 0
	for _, c := range counts {
		n += c
	}
	s.mu.Lock()
	st := s.statsFor(name)
	st.Events += int64(n)
	if p := s.pending[name]; p != nil {
		for k, c := range counts {
			p.counts[k] += c
		}
		s.seq++
		p.seq = s.seq
		st.Pending++
		why := p.reason() // p is shared: read under s.mu
		s.mu.Unlock()
		s.log.Debug("events joined the pending start", keySpecialist, name, keyReason, why)
		return
	}
	all, waiting := s.ahead(name)
	if waiting && s.runningNow(name) {
		// Pending until its own run ends, as the Starter's ErrRunning
		// would make it, without asking: a run that ended a moment ago
		// (its end not yet reported) freed a slot the Starter would give
		// these events ahead of the starts that wait for one.
		own, _ := s.endCounts(name)
		now := time.Now()
		st.Fired++
		st.Pending++
		st.LastFired, st.LastReason = now, eventReason(counts)
		wake := s.pendingFor(name, counts, "", ErrRunning, own, all, now)
		s.mu.Unlock()
		if wake {
			s.poke()
		}
		return
	}
	if waiting {
		s.join(name, counts, "", all)
		s.mu.Unlock()
		s.log.Debug("events wait behind the starts waiting for a slot", keySpecialist, name)
		s.yieldSlot()
		return
	}
	s.start(ctx, name, counts, "", eventReason(counts), busy, "trigger pending until a run ends")
}

// start asks the Starter for name's run with reason and records the
// answer in name's stats. The caller holds s.mu; start releases it. A
// refusal hold accepts becomes (or joins) name's pending start, standing
// for counts and tick, and is logged as held; any other refusal is a
// skip. A new pending start wakes the retry loop, and a refusal at the
// fleet's cap asks a continuous run to yield its slot.
func (s *Scheduler) start(ctx context.Context, name string, counts map[string]int, tick, reason string, hold func(error) bool, held string) {
	seq := s.seq
	s.mu.Unlock()
	own, all := s.endCounts(name)
	_, err := s.cfg.Starter.Start(ctx, name, reason)
	now := time.Now()
	s.mu.Lock()
	st := s.statsFor(name)
	st.Fired++
	st.LastFired, st.LastReason = now, reason
	wake, holds := false, err != nil && hold(err)
	switch {
	case err == nil:
		st.Started++
		st.LastStarted = now
		s.startedRun(name, own)
		s.absorb(name, seq)
	case holds:
		st.Pending++
		wake = s.pendingFor(name, counts, tick, err, own, all, now)
	default:
		st.skip(err.Error())
	}
	s.mu.Unlock()
	switch {
	case err == nil:
		s.log.Debug("trigger started a run", keySpecialist, name, keyReason, reason)
	case holds:
		s.log.Debug(held, keySpecialist, name, keyReason, reason, keyWhy, err)
	default:
		s.log.Debug("trigger skipped", keySpecialist, name, keyReason, reason, keyWhy, err)
	}
	if wake {
		s.poke()
	}
	if holds && errors.Is(err, ErrAtCap) {
		s.yieldSlot()
	}
}

// poke wakes the retry loop without blocking.
func (s *Scheduler) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// retryLoop retries pending starts whenever a run ends.
func (s *Scheduler) retryLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
		}
		s.retryPending(ctx)
	}
}

// retryPending tries, oldest first, every pending start whose run ended,
// so a freed slot goes to the start that has waited longest. A start is
// taken out while it is tried (s.retrying holds it, so no tick or
// continuous iteration passes it meanwhile); events found meanwhile join
// a new pending start. A refusal that is busy again puts it back (merged
// with any start pending by then, keeping its first refusal's time), except
// that a tick's part is dropped when the specialist itself runs (a tick
// during its own run is a skip); any other refusal drops it as a skip.
func (s *Scheduler) retryPending(ctx context.Context) {
	s.mu.Lock()
	names := slices.SortedFunc(maps.Keys(s.pending), func(a, b string) int {
		return cmp.Or(s.pending[a].since.Compare(s.pending[b].since), strings.Compare(a, b))
	})
	s.mu.Unlock()
	for _, name := range names {
		if ctx.Err() != nil {
			return
		}
		s.mu.Lock()
		p := s.pending[name]
		if p == nil || !s.due(name, p) {
			s.mu.Unlock()
			continue
		}
		delete(s.pending, name)
		s.retrying[name] = true
		seq := s.seq
		s.mu.Unlock()
		own, all := s.endCounts(name)
		reason := p.reason()
		_, err := s.cfg.Starter.Start(ctx, name, reason)
		now := time.Now()
		s.mu.Lock()
		delete(s.retrying, name)
		st := s.statsFor(name)
		wake, dropped := false, ""
		switch {
		case err == nil:
			st.Started++
			st.Retried++
			st.LastFired, st.LastReason, st.LastStarted = now, reason, now
			st.LongestWait = max(st.LongestWait, now.Sub(p.since))
			s.startedRun(name, own)
			s.absorb(name, seq)
		case busy(err) && errors.Is(err, ErrRunning) && p.tick != "":
			dropped = p.tick
			st.skip(p.tick + " tick dropped: " + err.Error())
			if len(p.counts) > 0 {
				wake = s.pendingFor(name, p.counts, "", err, own, all, p.since)
			}
		case busy(err):
			wake = s.pendingFor(name, p.counts, p.tick, err, own, all, p.since)
		default:
			st.skip("pending start dropped: " + err.Error())
		}
		s.queueChanged()
		s.mu.Unlock()
		switch {
		case err == nil:
			s.log.Info("pending start retried", keySpecialist, name, keyReason, reason, "waited", now.Sub(p.since).Round(time.Millisecond))
		case dropped != "":
			s.log.Debug("pending tick dropped: the specialist runs", keySpecialist, name, keyWhy, err)
		case busy(err):
			s.log.Debug("pending start still waiting", keySpecialist, name, keyWhy, err)
		default:
			s.log.Info("pending start dropped", keySpecialist, name, keyReason, reason, keyWhy, err)
		}
		if wake {
			s.poke()
		}
	}
}
