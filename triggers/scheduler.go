package triggers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
	"github.com/robfig/cron/v3"
)

// Starter starts a specialist run if it may: not already running, under the
// fleet-wide concurrency cap, not paused, budget left. The daemon's runner
// implements it and owns the runs; the scheduler only decides when to ask.
type Starter interface {
	// Start begins a run and returns at once; ctx bounds this call only, not
	// the run. A non-nil error means the run was not started and says why;
	// the scheduler counts it. A refusal because the specialist is already
	// running or the fleet is at its cap should wrap ErrRunning or ErrAtCap
	// (see [Busy]): an event start refused so waits for a run to end
	// instead of being dropped. When started, done receives exactly one
	// Outcome when the run ends and is closed after. done must be buffered
	// (capacity at least one): the scheduler waits on it only for continuous
	// specialists and otherwise drops it.
	Start(ctx context.Context, specialist, reason string) (done <-chan Outcome, err error)
}

// Outcome is how a started run ended, as continuous backoff needs it.
type Outcome struct {
	NewFindings int   // findings not seen before
	Err         error // the run failed (infrastructure, not a finding)
}

// Backoff bounds the delay between continuous runs (see the package doc).
type Backoff struct {
	Min time.Duration // default 1s
	Max time.Duration // default 10m
}

// Default backoff bounds.
const (
	DefaultBackoffMin   = time.Second
	DefaultBackoffMax   = 10 * time.Minute
	DefaultPollInterval = 2 * time.Second
)

// next returns the delay after a run with outcome o when the delay before it
// was prev (zero for the first run).
func (b Backoff) next(prev time.Duration, o Outcome) time.Duration {
	if o.Err == nil && o.NewFindings == 0 {
		return b.Min
	}
	if prev < b.Min {
		return b.Min
	}
	if prev > b.Max/2 {
		return b.Max
	}
	return prev * 2
}

// EventSource is the chain access the event pollers need; *chain.Client
// implements it. BlockHash of a block the chain does not have returns the
// zero hash and no error; any error is taken as an RPC failure, retried.
type EventSource interface {
	BlockNumber(ctx context.Context) (uint64, error)
	BlockHash(ctx context.Context, number uint64) ([32]byte, error)
	FilterLogs(ctx context.Context, addr fleet.Address, topic0 [32]byte, from, to uint64) ([]chain.Log, error)
	CodeHash(ctx context.Context, addr fleet.Address, block uint64) ([32]byte, error)
}

var _ EventSource = (*chain.Client)(nil)

// Config configures a Scheduler.
type Config struct {
	Specs   []Spec
	Starter Starter // required

	// Events is polled for chain events; nil makes any Spec with Events an
	// error (ErrNoEventSource).
	Events EventSource
	// Registry is watched for code_changed (its code hash) and
	// name_registered (its Registered logs); FeedbackLog for feedback (its
	// FeedbackSubmitted logs). A Spec listing an event whose address is zero
	// is an error (ErrNoAddress).
	Registry, FeedbackLog fleet.Address
	// StateDir holds the poller state (events.json), written atomically.
	// Empty keeps it in memory: a restart then starts at the head, so it
	// never repeats an event but misses those during the downtime.
	StateDir string
	// PollInterval is how often the event poller reads the head; default 2s.
	PollInterval time.Duration
	// Confirmations: events are processed up to head-Confirmations. Default
	// 0, right for dev chains; see the package doc for the trade-off.
	Confirmations uint64
	Backoff       Backoff
	// Location is the time zone of cron specs; default time.Local.
	Location *time.Location
	Logger   *slog.Logger
}

// watched returns the address an event kind watches.
func (c *Config) watched(kind string) fleet.Address {
	if kind == EventFeedback {
		return c.FeedbackLog
	}
	return c.Registry
}

// Errors New and Replace wrap.
var (
	ErrNoEventSource = errors.New("chain events need an event source (no chain configured)")
	ErrNoAddress     = errors.New("the watched contract address is not configured")
)

// Stats counts one specialist's triggers.
type Stats struct {
	Fired      int64     // start attempts: ticks, continuous iterations, event polls with news (unless they joined a pending start), manual fires
	Started    int64     // runs started: attempts the Starter accepted and pending starts a retry started
	Skipped    int64     // attempts refused and dropped (a tick while running, paused, budget; a continuous iteration at the cap; an event start while paused or over budget) or ticks dropped while the previous tick was still starting
	LastSkip   string    // why the latest skip happened
	LastFired  time.Time // when the latest attempt was made
	LastReason string    // the reason given to the latest attempt
	Events     int64     // chain events delivered (a coalesced attempt counts each)
	NextRun    time.Time // next cron/every tick, or the end of a continuous wait; zero if none
	// Pending counts attempts whose start waits for a run to end: an event
	// poll refused because the specialist was running or the fleet at its
	// cap, a tick refused at the cap, or ticks and events that joined a
	// start already pending or queued behind others waiting for a slot.
	Pending int64
	// Retried counts pending starts started when a run ended (also in
	// Started).
	Retried int64
	// PendingReason is the reason the start pending now will carry; empty
	// when none is pending. PendingSince is when it was first refused.
	PendingReason string
	PendingSince  time.Time
	// LastStarted is when the latest run the triggers asked for started.
	LastStarted time.Time
	// LongestWait is the longest a pending start waited, from its first
	// refusal (or its joining the queue) to the retry that started it.
	LongestWait time.Duration
	// Yielded counts the times a continuous specialist gave way to other
	// specialists' starts waiting for a slot: its run asked to end at its
	// next session boundary (a Starter that is a [Yielder]), or its next
	// run held back until none waits.
	Yielded int64
	// Period is how often its schedule ticks (every, or a cron spec's gap
	// now); zero for continuous, event-only and manual specialists.
	Period time.Duration
	// Starved: no run started in StarvedPeriods periods since it was
	// scheduled or last started; StarvedReason says so and why.
	Starved       bool
	StarvedReason string
}

// Log attribute keys.
const (
	keySpecialist = "specialist"
	keyReason     = "reason"
	keyWhy        = "why"
	keyEvent      = "event"
	keyBlock      = "block"
	keyErr        = "err"
)

// Scheduler fires specialists on their schedules and on chain events. Its
// methods are safe for concurrent use; it owns every goroutine it starts
// (cron's, one per continuous specialist, one event poller and the loop
// that retries held event starts) and Stop waits for them. Held starts are
// dropped at Stop.
type Scheduler struct {
	cfg    Config
	log    *slog.Logger
	cron   *cron.Cron
	poller *poller // nil without an event source

	mu      sync.Mutex
	phase   int // phaseNew, phaseStarted, phaseStopped
	specs   map[string]compiled
	subs    map[string][]string // event kind -> specialists, sorted; replaced, never mutated
	entries map[string]cron.EntryID
	loops   map[string]context.CancelFunc
	stats   map[string]*Stats
	unlink  func() bool // detaches bg from Start's ctx
	pending map[string]*pendingStart
	seq     uint64 // bumped whenever a pending start changes
	// retrying holds the specialists whose pending start a retry took out
	// to ask the Starter; queue is closed and replaced whenever the queue
	// changes.
	retrying map[string]bool
	queue    chan struct{}
	// startedEnds is, per specialist, its end count before the latest run
	// the scheduler started (see runningNow).
	startedEnds map[string]uint64
	// yieldAsked is, per continuous specialist, the startedEnds of the run
	// last asked to yield its slot (each run is asked once).
	yieldAsked map[string]uint64

	// Run ends reported by RunEnded, under their own lock so that RunEnded
	// never waits for s.mu; wake tells the retry loop.
	endMu   sync.Mutex
	ends    map[string]uint64
	endsAll uint64
	wake    chan struct{}

	// bg is the scheduler's own context, made in New and cancelled by Stop
	// (or when Start's ctx ends); every job and loop runs under it.
	bg     context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

const (
	phaseNew = iota
	phaseStarted
	phaseStopped
)

// New validates cfg and returns a Scheduler that fires nothing until Start.
// Invalid specs (a bad cron spec, an unknown event, an event without a
// source or address, two specs for one specialist) are reported together,
// each naming the specialist and the field. An unreadable poller state in
// StateDir is an error too (remove the file to start again at the head).
func New(cfg Config) (*Scheduler, error) {
	if cfg.Starter == nil {
		return nil, errors.New("triggers: config has no Starter")
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	if cfg.Backoff.Min <= 0 {
		cfg.Backoff.Min = DefaultBackoffMin
	}
	if cfg.Backoff.Max <= 0 {
		cfg.Backoff.Max = DefaultBackoffMax
	}
	if cfg.Backoff.Max < cfg.Backoff.Min {
		return nil, fmt.Errorf("triggers: backoff max %s is below min %s", cfg.Backoff.Max, cfg.Backoff.Min)
	}
	if cfg.Location == nil {
		cfg.Location = time.Local
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	specs, err := validateSpecs(cfg.Specs, &cfg)
	if err != nil {
		return nil, fmt.Errorf("triggers: %w", err)
	}
	cfg.Specs = nil // the compiled map is the truth from here on
	log := cfg.Logger.With("component", "triggers")
	s := &Scheduler{
		cfg: cfg, log: log,
		specs: map[string]compiled{}, subs: map[string][]string{},
		entries: map[string]cron.EntryID{}, loops: map[string]context.CancelFunc{}, stats: map[string]*Stats{},
		pending: map[string]*pendingStart{}, ends: map[string]uint64{}, wake: make(chan struct{}, 1), queue: make(chan struct{}), retrying: map[string]bool{}, startedEnds: map[string]uint64{}, yieldAsked: map[string]uint64{},
	}
	s.bg, s.cancel = context.WithCancel(context.Background())
	cl := cronLogger{log}
	s.cron = cron.New(cron.WithLocation(cfg.Location), cron.WithLogger(cl), cron.WithChain(cron.Recover(cl)))
	if cfg.Events != nil {
		if s.poller, err = newPoller(&cfg, log); err != nil {
			return nil, fmt.Errorf("triggers: %w", err)
		}
	}
	s.install(specs)
	return s, nil
}

// install makes specs the current set, keeping the cron entries and
// continuous loops of specialists whose spec did not change. The caller
// holds s.mu (or owns s exclusively).
func (s *Scheduler) install(specs map[string]compiled) {
	now := time.Now()
	for name, c := range specs {
		c.since = now
		specs[name] = c
	}
	for name, old := range s.specs {
		if nw, ok := specs[name]; ok && nw.equal(old.Spec) {
			specs[name] = old // keeps an every schedule's grid
			continue
		}
		if id, ok := s.entries[name]; ok {
			s.cron.Remove(id)
			delete(s.entries, name)
		}
		if cancel, ok := s.loops[name]; ok {
			cancel()
			delete(s.loops, name)
		}
	}
	for name, c := range specs {
		if old, ok := s.specs[name]; ok && old.equal(c.Spec) {
			continue
		}
		if c.sched != nil {
			s.addEntry(name, c)
		}
		if c.Continuous && s.phase == phaseStarted {
			s.startLoop(name)
		}
	}
	subs := map[string][]string{}
	for name, c := range specs {
		for _, e := range c.Events {
			subs[e] = append(subs[e], name)
		}
	}
	for _, v := range subs {
		slices.Sort(v)
	}
	for name, p := range s.pending {
		c := specs[name]
		if len(c.Events) == 0 {
			clear(p.counts) // no longer subscribed to any event
		}
		if c.sched == nil {
			p.tick = "" // no longer ticking
		}
		if len(p.counts) == 0 && p.tick == "" {
			delete(s.pending, name)
			s.queueChanged()
		}
	}
	s.specs, s.subs = specs, subs
}

// addEntry schedules a cron or every spec. Each entry has its own
// SkipIfStillRunning whose logger counts the dropped tick.
func (s *Scheduler) addEntry(name string, c compiled) {
	reason := "cron"
	if c.Every != 0 {
		reason = "every"
	}
	job := cron.NewChain(cron.SkipIfStillRunning(skipCounter{s, name})).Then(cron.FuncJob(func() {
		s.fireTick(s.bg, name, reason)
	}))
	s.entries[name] = s.cron.Schedule(c.sched, job)
}

// Start starts firing: cron and every entries, a loop per continuous
// specialist, and the event poller. Cancelling ctx stops firing as Stop
// does, but only Stop waits for the goroutines. Start after Start or Stop
// does nothing.
func (s *Scheduler) Start(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.phase != phaseNew {
		return
	}
	s.phase = phaseStarted
	s.unlink = context.AfterFunc(ctx, s.cancel)
	s.cron.Start()
	now := time.Now()
	for _, name := range slices.Sorted(maps.Keys(s.specs)) {
		c := s.specs[name]
		c.since = now // scheduled from here on, for starvation
		s.specs[name] = c
		if c.Continuous {
			s.startLoop(name)
		}
	}
	if s.poller != nil {
		s.wg.Go(func() { s.pollLoop(s.bg) })
	}
	s.wg.Go(func() { s.retryLoop(s.bg) })
	s.log.Info("triggers started", "specialists", len(s.specs), "events", s.poller != nil)
}

// startLoop starts name's continuous loop. The caller holds s.mu.
func (s *Scheduler) startLoop(name string) {
	ctx, cancel := context.WithCancel(s.bg)
	s.loops[name] = cancel
	s.wg.Go(func() { s.continuous(ctx, name) })
}

// Stop stops firing and waits, bounded by ctx, for cron's jobs (drained
// through <-cron.Stop().Done()), the continuous loops and the poller. Runs
// already started are the Starter's: Stop neither waits for nor cancels
// them. It returns an error wrapping ctx.Err() when the wait was cut short
// (a Starter.Start call that does not return); the stragglers then exit on
// their own. Stop is idempotent; a stopped Scheduler cannot start again.
func (s *Scheduler) Stop(ctx context.Context) error {
	s.mu.Lock()
	if s.phase != phaseStarted {
		s.phase = phaseStopped
		s.cancel()
		s.mu.Unlock()
		return nil
	}
	s.phase = phaseStopped
	s.cancel()
	s.unlink()
	s.mu.Unlock()
	cronDone := s.cron.Stop()
	all := make(chan struct{})
	go func() {
		<-cronDone.Done()
		s.wg.Wait()
		close(all)
	}()
	select {
	case <-all:
		s.log.Info("triggers stopped")
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stop triggers: %w", ctx.Err())
	}
}

// Replace swaps the specs (a SIGHUP reload). It validates all of them first
// and keeps the current set on any error. Specialists whose spec is
// unchanged keep their schedule (an every grid, a continuous loop and its
// backoff); changed and new ones start afresh, removed ones stop. Counters
// in Stats survive.
func (s *Scheduler) Replace(specs []Spec) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := validateSpecs(specs, &s.cfg)
	if err != nil {
		return fmt.Errorf("replace triggers: %w", err)
	}
	if s.phase == phaseStopped {
		s.specs = c
		return nil
	}
	s.install(c)
	s.log.Info("triggers replaced", "specialists", len(c))
	return nil
}

// Fire asks the Starter to start specialist now (a manual run: the
// console's "run now"), counted like any trigger, and reports whether it
// started. It works whether or not the Scheduler is started, for any
// specialist name. A manual start never queues (see Run now in the package
// doc): it takes a free slot even while other specialists' starts wait for
// one, and at the cap it is refused, not held.
func (s *Scheduler) Fire(ctx context.Context, specialist, reason string) (started bool, why string) {
	started, why, _ = s.FireAhead(ctx, specialist, reason)
	return started, why
}

// FireAhead is Fire that also names, sorted, the specialists whose starts
// were waiting for a slot when this one asked the Starter: the starts a
// started manual run went ahead of, which the console says.
func (s *Scheduler) FireAhead(ctx context.Context, specialist, reason string) (started bool, why string, ahead []string) {
	s.mu.Lock()
	for n, p := range s.pending {
		if n != specialist && p.atCap {
			ahead = append(ahead, n)
		}
	}
	s.mu.Unlock()
	slices.Sort(ahead)
	_, started, why = s.fire(ctx, specialist, reason)
	if !started {
		ahead = nil
	} else if len(ahead) > 0 {
		s.log.Info("a manual start went ahead of the starts waiting for a slot", keySpecialist, specialist, keyReason, reason, "ahead", ahead)
	}
	return started, why, ahead
}

// fire makes one start attempt and counts it. A cancelled ctx (stopping)
// makes no attempt. A started run with a nil done gets a closed channel, so
// a continuous loop treats it as a failed run rather than waiting forever.
// A run it starts absorbs the specialist's pending event start.
func (s *Scheduler) fire(ctx context.Context, name, reason string) (<-chan Outcome, bool, string) {
	if ctx == nil || ctx.Err() != nil {
		return nil, false, "stopping"
	}
	s.mu.Lock()
	seq := s.seq
	s.mu.Unlock()
	own, _ := s.endCounts(name)
	done, err := s.cfg.Starter.Start(ctx, name, reason)
	started, why := err == nil, ""
	if err != nil {
		why = err.Error()
	}
	if started && done == nil {
		ch := make(chan Outcome)
		close(ch)
		done = ch
	}
	now := time.Now()
	s.mu.Lock()
	st := s.statsFor(name)
	st.Fired++
	st.LastFired, st.LastReason = now, reason
	if started {
		st.Started++
		st.LastStarted = now
		s.startedRun(name, own)
		s.absorb(name, seq)
	} else {
		st.skip(why)
	}
	s.mu.Unlock()
	if started {
		s.log.Debug("trigger started a run", keySpecialist, name, keyReason, reason)
	} else {
		s.log.Debug("trigger skipped", keySpecialist, name, keyReason, reason, keyWhy, why)
	}
	return done, started, why
}

// statsFor returns name's counters, creating them. The caller holds s.mu.
func (s *Scheduler) statsFor(name string) *Stats {
	st := s.stats[name]
	if st == nil {
		st = &Stats{}
		s.stats[name] = st
	}
	return st
}

// skip counts a trigger that did not start a run, and why. The caller
// holds the scheduler's mu.
func (st *Stats) skip(why string) {
	st.Skipped++
	st.LastSkip = why
}

// countSkip counts a tick cron's SkipIfStillRunning dropped.
func (s *Scheduler) countSkip(name, why string) {
	s.mu.Lock()
	st := s.statsFor(name)
	st.Fired++
	st.skip(why)
	s.mu.Unlock()
	s.log.Debug("trigger skipped", keySpecialist, name, keyWhy, why)
}

// setNext records when a continuous specialist runs next.
func (s *Scheduler) setNext(name string, t time.Time) {
	s.mu.Lock()
	s.statsFor(name).NextRun = t
	s.mu.Unlock()
}

// Stats returns a snapshot of the counters of every current specialist and
// of any other name fired so far.
func (s *Scheduler) Stats() map[string]Stats {
	s.mu.Lock()
	now := time.Now()
	out := make(map[string]Stats, len(s.stats))
	for name, st := range s.stats {
		c := *st
		if !s.specs[name].Continuous {
			c.NextRun = time.Time{} // only a continuous loop's wait is recorded here
		}
		if p := s.pending[name]; p != nil {
			c.PendingReason, c.PendingSince = p.reason(), p.since
		}
		out[name] = c
	}
	for name, c := range s.specs { // every current specialist, fired or not
		st := out[name]
		if s.phase == phaseStarted {
			s.starved(name, c, &st, now)
		}
		out[name] = st
	}
	ids := maps.Clone(s.entries)
	running := s.phase == phaseStarted
	s.mu.Unlock()
	if running && len(ids) > 0 {
		next := map[cron.EntryID]time.Time{}
		for _, e := range s.cron.Entries() {
			next[e.ID] = e.Next
		}
		for name, id := range ids {
			st := out[name]
			st.NextRun = next[id]
			out[name] = st
		}
	}
	return out
}

// continuous runs name over and over: start, wait for the outcome, wait the
// backoff delay. A refused start is retried after Backoff.Min.
func (s *Scheduler) continuous(ctx context.Context, name string) {
	var prev time.Duration
	for {
		if !s.yield(ctx, name) {
			return
		}
		done, started, _ := s.fire(ctx, name, "continuous")
		if ctx.Err() != nil {
			return
		}
		wait := s.cfg.Backoff.Min
		if started {
			s.setNext(name, time.Time{})
			var o Outcome
			select {
			case r, ok := <-done:
				if !ok {
					r = Outcome{Err: errNoOutcome}
				}
				o = r
			case <-ctx.Done():
				return
			}
			wait = s.cfg.Backoff.next(prev, o)
			prev = wait
			if o.Err != nil {
				s.log.Debug("continuous run failed", keySpecialist, name, keyErr, o.Err, "next_in", wait)
			}
		}
		s.setNext(name, time.Now().Add(wait))
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

var errNoOutcome = errors.New("run ended without an outcome")

// cronLogger adapts slog to cron.Logger. cron's Info messages (every wake,
// every schedule) are dropped; errors (recovered panics) are logged.
type cronLogger struct{ l *slog.Logger }

func (cronLogger) Info(string, ...any) {}

func (c cronLogger) Error(err error, msg string, kv ...any) {
	c.l.Error("cron: "+msg, append([]any{keyErr, err}, kv...)...)
}

// skipCounter is the logger of one entry's SkipIfStillRunning: its "skip"
// is a tick dropped because the previous tick's Start call had not
// returned, and is counted.
type skipCounter struct {
	s    *Scheduler
	name string
}

func (k skipCounter) Info(msg string, _ ...any) {
	if msg == "skip" {
		k.s.countSkip(k.name, "previous tick still starting")
	}
}

func (k skipCounter) Error(err error, msg string, kv ...any) {
	cronLogger{k.s.log}.Error(err, msg, kv...)
}
