package triggers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
)

// call is one Start the fake starter saw.
type call struct {
	At         time.Duration // since the starter was made
	Specialist string
	Reason     string
	Started    bool
}

// fakeStarter records Start calls. By default every run starts and ends at
// once with no findings; run, when set, decides instead.
//
// It refuses, and fails the test mustNew bound it to, once one specialist
// gets more than maxCallsAtOnce calls at one instant (see maxCallsAtOnce).
type fakeStarter struct {
	t0  time.Time
	run func(specialist, reason string) (<-chan Outcome, error)

	mu      sync.Mutex
	calls   []call
	ended   func(specialist string) // told when an overlapStarter run ends
	tb      testing.TB              // set by mustNew; told of a runaway
	lastAt  map[string]time.Time    // per specialist: the instant of its latest call
	atOnce  map[string]int          // and how many calls it got at that instant
	runaway bool                    // the bound was hit (reported once)
}

// maxCallsAtOnce bounds one specialist's Start calls at one instant. In a
// synctest bubble time stands still while any goroutine can run, so a
// Scheduler that keeps asking at once (a pending start that is always due,
// retried as soon as it is refused) never lets synctest.Wait return: the
// test would hang until go test's -timeout killed the whole package. Past
// the bound the fake fails the test with the specialist's name and refuses
// with a plain error (not busy), which the Scheduler drops as a skip,
// ending the loop. Legitimate tests make a handful at most: 1,000
// specialists due together make one call each.
const maxCallsAtOnce = 100

// errRunaway is the fake's refusal past maxCallsAtOnce.
var errRunaway = errors.New("fake starter: too many start calls at one instant")

// TellEnds makes the runs of an overlapStarter report their end to s, as
// fleetd's runner does.
func (f *fakeStarter) TellEnds(s *Scheduler) {
	f.mu.Lock()
	f.ended = s.RunEnded
	f.mu.Unlock()
}

func (f *fakeStarter) runEnded(specialist string) {
	f.mu.Lock()
	ended := f.ended
	f.mu.Unlock()
	if ended != nil {
		ended(specialist)
	}
}

func newFakeStarter() *fakeStarter { return &fakeStarter{t0: time.Now()} }

func (f *fakeStarter) Start(ctx context.Context, specialist, reason string) (<-chan Outcome, error) {
	if err := f.count(specialist); err != nil {
		return nil, err
	}
	var done <-chan Outcome
	var err error
	if f.run != nil {
		done, err = f.run(specialist, reason)
	} else {
		done = finished(Outcome{})
	}
	f.mu.Lock()
	f.calls = append(f.calls, call{At: time.Since(f.t0), Specialist: specialist, Reason: reason, Started: err == nil})
	f.mu.Unlock()
	return done, err
}

// count counts a call of specialist at this instant and returns errRunaway
// past maxCallsAtOnce.
func (f *fakeStarter) count(specialist string) error {
	now := time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lastAt == nil {
		f.lastAt, f.atOnce = map[string]time.Time{}, map[string]int{}
	}
	if !now.Equal(f.lastAt[specialist]) {
		f.lastAt[specialist], f.atOnce[specialist] = now, 0
	}
	f.atOnce[specialist]++
	if f.atOnce[specialist] <= maxCallsAtOnce {
		return nil
	}
	if !f.runaway {
		f.runaway = true
		if f.tb != nil {
			f.tb.Errorf("%s: more than %d start calls at %v (time stands still: the Scheduler retries in a loop)", specialist, maxCallsAtOnce, now.Sub(f.t0))
		}
	}
	return errRunaway
}

// Started returns the reasons of name's calls that started a run.
func (f *fakeStarter) Started(name string) []string {
	var out []string
	for _, c := range f.Calls(name) {
		if c.Started {
			out = append(out, c.Reason)
		}
	}
	return out
}

// Calls returns the calls so far, for one specialist when name is not "".
func (f *fakeStarter) Calls(name string) []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []call
	for _, c := range f.calls {
		if name == "" || c.Specialist == name {
			out = append(out, c)
		}
	}
	return out
}

// Reasons returns the reasons of name's calls.
func (f *fakeStarter) Reasons(name string) []string {
	var out []string
	for _, c := range f.Calls(name) {
		out = append(out, c.Reason)
	}
	return out
}

// finished returns a done channel holding o, closed.
func finished(o Outcome) <-chan Outcome {
	ch := make(chan Outcome, 1)
	ch <- o
	close(ch)
	return ch
}

// overlapStarter refuses a specialist while its previous run (lasting d) is
// still going, as the runner does.
func overlapStarter(f *fakeStarter, d time.Duration) func(string, string) (<-chan Outcome, error) {
	return fleetStarter(f, d, 0, nil)
}

// fleetStarter is overlapStarter with a fleet-wide cap (0: none) and a
// kill switch (nil: never paused), checked in the runner's order: running,
// cap, paused. A run that ends tells the scheduler (fakeStarter.TellEnds).
func fleetStarter(f *fakeStarter, d time.Duration, maxRuns int, paused func() bool) func(string, string) (<-chan Outcome, error) {
	var mu sync.Mutex
	running := map[string]bool{}
	return func(name, _ string) (<-chan Outcome, error) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case running[name]:
			return nil, Busy(ErrRunning, "already running")
		case maxRuns > 0 && len(running) >= maxRuns:
			return nil, Busy(ErrAtCap, "fleet-wide cap reached")
		case paused != nil && paused():
			return nil, errors.New("paused")
		}
		running[name] = true
		done := make(chan Outcome, 1)
		time.AfterFunc(d, func() {
			mu.Lock()
			delete(running, name)
			mu.Unlock()
			f.runEnded(name)
			done <- Outcome{}
			close(done)
		})
		return done, nil
	}
}

// testLogger writes to the test's output.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// mustNew builds a Scheduler and stops it at cleanup. A fakeStarter in cfg
// reports a runaway (maxCallsAtOnce) to tb.
func mustNew(tb testing.TB, cfg Config) *Scheduler {
	tb.Helper()
	if f, ok := cfg.Starter.(*fakeStarter); ok {
		f.mu.Lock()
		f.tb = tb
		f.mu.Unlock()
	}
	if cfg.Location == nil {
		cfg.Location = time.UTC
	}
	s, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Stop(ctx); err != nil {
			tb.Error(err)
		}
	})
	return s
}

var (
	registryAddr = fleet.Address{0xaa}
	logAddr      = fleet.Address{0xbb}
	errDown      = errors.New("connection refused")
)

// fakeLog is a log the fake chain holds, with its emitter.
type fakeLog struct {
	addr fleet.Address
	log  chain.Log
}

type fakeBlock struct {
	hash [32]byte
	logs []fakeLog
	code map[fleet.Address][32]byte
}

// fakeChain is a scripted chain: blocks with hashes, logs and code, reorgs
// that replace the tail, and outages.
type fakeChain struct {
	mu     sync.Mutex
	blocks []fakeBlock
	forks  byte // distinguishes the hashes of replacement blocks
	down   bool
	failAt map[string]int // method -> fail its next call after this many more
	ranges [][2]uint64    // FilterLogs ranges asked for
	// duringFilter, when set, runs (once, with the lock held) after
	// FilterLogs has read its logs: a reorg in the middle of a read.
	duringFilter func(c *fakeChain)
	calls        map[string]int
}

func newFakeChain() *fakeChain {
	c := &fakeChain{failAt: map[string]int{}, calls: map[string]int{}}
	c.blocks = []fakeBlock{{hash: c.hashOf(0), code: map[fleet.Address][32]byte{registryAddr: {0xc0}}}}
	return c
}

func (c *fakeChain) hashOf(n uint64) [32]byte {
	var h [32]byte
	h[0], h[1] = c.forks, 0xbb
	h[24], h[25], h[26], h[27] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
	return h
}

// Mine appends a block holding logs (in order) and returns its number.
func (c *fakeChain) Mine(logs ...fakeLog) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mineLocked(logs)
}

func (c *fakeChain) mineLocked(logs []fakeLog) uint64 {
	n := uint64(len(c.blocks))
	b := fakeBlock{hash: c.hashOf(n), code: c.blocks[n-1].code}
	for i, l := range logs {
		l.log.Block, l.log.BlockHash, l.log.Index = n, b.hash, uint(i)
		b.logs = append(b.logs, l)
	}
	c.blocks = append(c.blocks, b)
	return n
}

// Reorg drops the newest depth blocks and mines replacements (with fresh
// hashes), one per entry of blocks.
func (c *fakeChain) Reorg(depth int, blocks ...[]fakeLog) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reorgLocked(depth, blocks...)
}

func (c *fakeChain) reorgLocked(depth int, blocks ...[]fakeLog) {
	c.blocks = c.blocks[:len(c.blocks)-depth]
	c.forks++
	for _, logs := range blocks {
		c.mineLocked(logs)
	}
}

// Redeploy changes the code at addr from the next block on.
func (c *fakeChain) Redeploy(addr fleet.Address, code byte) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.mineLocked(nil)
	m := map[fleet.Address][32]byte{}
	for k, v := range c.blocks[n].code {
		m[k] = v
	}
	m[addr] = [32]byte{code}
	c.blocks[n].code = m
	return n
}

func (c *fakeChain) SetDown(down bool) {
	c.mu.Lock()
	c.down = down
	c.mu.Unlock()
}

// FailNext makes method's call after `after` more calls fail once.
func (c *fakeChain) FailNext(method string, after int) {
	c.mu.Lock()
	c.failAt[method] = after + 1
	c.mu.Unlock()
}

func (c *fakeChain) enter(method string) error {
	c.calls[method]++
	if c.down {
		return fmt.Errorf("%s: %w", method, errDown)
	}
	if n, ok := c.failAt[method]; ok {
		if n <= 1 {
			delete(c.failAt, method)
			return fmt.Errorf("%s: %w", method, errDown)
		}
		c.failAt[method] = n - 1
	}
	return nil
}

func (c *fakeChain) Calls(method string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[method]
}

func (c *fakeChain) Ranges() [][2]uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([][2]uint64(nil), c.ranges...)
}

func (c *fakeChain) BlockNumber(ctx context.Context) (uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.enter("BlockNumber"); err != nil {
		return 0, err
	}
	return uint64(len(c.blocks) - 1), nil
}

func (c *fakeChain) BlockHash(ctx context.Context, n uint64) ([32]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.enter("BlockHash"); err != nil {
		return [32]byte{}, err
	}
	if n >= uint64(len(c.blocks)) {
		return [32]byte{}, nil // as chain.Client: a missing block is the zero hash
	}
	return c.blocks[n].hash, nil
}

func (c *fakeChain) FilterLogs(ctx context.Context, addr fleet.Address, topic0 [32]byte, from, to uint64) ([]chain.Log, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.enter("FilterLogs"); err != nil {
		return nil, err
	}
	c.ranges = append(c.ranges, [2]uint64{from, to})
	if to >= uint64(len(c.blocks)) {
		return nil, fmt.Errorf("range %d..%d beyond the head", from, to)
	}
	var out []chain.Log
	for n := from; n <= to; n++ {
		for _, l := range c.blocks[n].logs {
			if l.addr == addr && len(l.log.Topics) > 0 && l.log.Topics[0] == topic0 {
				out = append(out, l.log)
			}
		}
	}
	if f := c.duringFilter; f != nil {
		c.duringFilter = nil
		f(c)
	}
	return out, nil
}

func (c *fakeChain) CodeHash(ctx context.Context, addr fleet.Address, block uint64) ([32]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.enter("CodeHash"); err != nil {
		return [32]byte{}, err
	}
	if block >= uint64(len(c.blocks)) {
		return [32]byte{}, fmt.Errorf("block %d: not found", block)
	}
	return c.blocks[block].code[addr], nil
}

// registered is a Registered log of the registry in transaction tx.
func registered(tx byte, name string) fakeLog {
	return fakeLog{addr: registryAddr, log: chain.Log{TxHash: [32]byte{0x01, tx}, Topics: [][32]byte{chain.TopicRegistered}, Data: []byte(name)}}
}

// feedbackLog is a FeedbackSubmitted log of the feedback log in transaction tx.
func feedbackLog(tx byte, index byte) fakeLog {
	return fakeLog{addr: logAddr, log: chain.Log{TxHash: [32]byte{0x02, tx}, Topics: [][32]byte{chain.TopicFeedbackSubmitted, {index}}}}
}
