package triggers

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
)

// Poller bounds.
const (
	chunkBlocks      = 2000   // blocks per FilterLogs call
	maxChunksPerPoll = 16     // so a long catch-up never starves Stop or the other kinds
	maxCheckpoints   = 64     // remembered processed-range ends, for walking back a reorg
	maxReorgDepth    = 64     // blocks rescanned when no remembered checkpoint is canonical
	maxSeen          = 10_000 // remembered log identities, oldest dropped first
	maxPollBackoff   = time.Minute
	stateFileName    = "events.json"
	stateVersion     = 1
)

// topics maps a log event kind to its topic0.
var topics = map[string][32]byte{
	EventNameRegistered: chain.TopicRegistered,
	EventFeedback:       chain.TopicFeedbackSubmitted,
}

// hash32 is a 32-byte hash that is hex in JSON.
type hash32 [32]byte

func (h hash32) MarshalText() ([]byte, error) {
	return []byte("0x" + hex.EncodeToString(h[:])), nil
}

func (h *hash32) UnmarshalText(b []byte) error {
	s := strings.TrimPrefix(string(b), "0x")
	if len(s) != 64 {
		return fmt.Errorf("hash %q: want 64 hex digits", b)
	}
	_, err := hex.Decode(h[:], []byte(s))
	return err
}

// noBlock is the hash EventSource.BlockHash returns for a block the chain
// does not have (it got shorter since the head was read), as chain.Client
// does.
var noBlock [32]byte

// checkpoint is the hash of the last block of a processed range.
type checkpoint struct {
	N uint64 `json:"n"`
	H hash32 `json:"h"`
}

// seenLog is a fired log's identity and the block it was found in.
type seenLog struct {
	K string `json:"k"`
	B uint64 `json:"b"`
}

// kindState is the poller's progress on one event kind. It is initialised
// once it has a checkpoint; the newest checkpoint is always at Last.
type kindState struct {
	Address     fleet.Address `json:"address"`
	Last        uint64        `json:"last"`
	Checkpoints []checkpoint  `json:"checkpoints"`
	Seen        []seenLog     `json:"seen,omitempty"`
	Code        *hash32       `json:"code,omitempty"`

	seen map[string]uint64
}

type stateFile struct {
	Version int                   `json:"version"`
	Kinds   map[string]*kindState `json:"kinds"`
}

// poller holds the event state. Only the poll goroutine uses it after New.
type poller struct {
	src   EventSource
	log   *slog.Logger
	path  string // "" keeps the state in memory
	conf  uint64
	addrs map[string]fleet.Address
	kinds map[string]*kindState
	dirty bool
}

// newPoller loads the state in cfg.StateDir. A kind recorded for another
// address than the configured one starts afresh.
func newPoller(cfg *Config, log *slog.Logger) (*poller, error) {
	p := &poller{src: cfg.Events, log: log, conf: cfg.Confirmations, addrs: map[string]fleet.Address{}, kinds: map[string]*kindState{}}
	for _, k := range eventKinds {
		p.addrs[k] = cfg.watched(k)
	}
	if cfg.StateDir == "" {
		return p, nil
	}
	if err := os.MkdirAll(cfg.StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("trigger state: %w", err)
	}
	p.path = filepath.Join(cfg.StateDir, stateFileName)
	b, err := os.ReadFile(p.path)
	if errors.Is(err, fs.ErrNotExist) {
		return p, nil
	}
	if err != nil {
		return nil, fmt.Errorf("trigger state: %w", err)
	}
	var f stateFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("trigger state %s (remove it to start at the head): %w", p.path, err)
	}
	if f.Version != stateVersion {
		return nil, fmt.Errorf("trigger state %s: version %d, want %d (remove it to start at the head)", p.path, f.Version, stateVersion)
	}
	for k, st := range f.Kinds {
		if !slices.Contains(eventKinds, k) || st == nil || len(st.Checkpoints) == 0 || st.Checkpoints[len(st.Checkpoints)-1].N != st.Last {
			continue
		}
		if st.Address != p.addrs[k] {
			log.Info("watched address changed; starting at the head", keyEvent, k, "was", st.Address, "now", p.addrs[k])
			continue
		}
		st.seen = make(map[string]uint64, len(st.Seen))
		for _, s := range st.Seen {
			st.seen[s.K] = s.B
		}
		st.Seen = nil
		p.kinds[k] = st
	}
	return p, nil
}

// state returns kind's state, creating an uninitialised one.
func (p *poller) state(kind string) *kindState {
	st := p.kinds[kind]
	if st == nil {
		st = &kindState{Address: p.addrs[kind], seen: map[string]uint64{}}
		p.kinds[kind] = st
	}
	return st
}

// save writes the state if it changed: temp file, fsync, rename.
func (p *poller) save() error {
	if !p.dirty || p.path == "" {
		p.dirty = false
		return nil
	}
	f := stateFile{Version: stateVersion, Kinds: map[string]*kindState{}}
	for k, st := range p.kinds {
		c := *st
		c.Seen = make([]seenLog, 0, len(st.seen))
		for key, b := range st.seen {
			c.Seen = append(c.Seen, seenLog{key, b})
		}
		slices.SortFunc(c.Seen, func(a, b seenLog) int {
			return cmp.Or(cmp.Compare(a.B, b.B), strings.Compare(a.K, b.K))
		})
		f.Kinds[k] = &c
	}
	b, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("save trigger state: %w", err)
	}
	if err := fleet.WriteFileAtomic(p.path, b, 0o600); err != nil {
		return fmt.Errorf("save trigger state: %w", err)
	}
	p.dirty = false
	return nil
}

// poll processes every subscribed kind up to head-Confirmations and returns
// how many new events each found. A kind that fails keeps its progress up to
// the last range it completed; the others go on.
func (p *poller) poll(ctx context.Context, subs map[string][]string) (map[string]int, error) {
	var kinds []string
	for _, k := range eventKinds {
		if len(subs[k]) > 0 {
			kinds = append(kinds, k)
		}
	}
	if len(kinds) == 0 {
		return nil, nil
	}
	head, err := p.src.BlockNumber(ctx)
	if err != nil {
		return nil, err
	}
	if head < p.conf {
		return nil, nil
	}
	target := head - p.conf
	counts := map[string]int{}
	var errs []error
	for _, k := range kinds {
		var n int
		var err error
		if k == EventCodeChanged {
			n, err = p.pollCode(ctx, target)
		} else {
			n, err = p.pollLogs(ctx, k, head, target)
		}
		counts[k] = n
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", k, err))
		}
	}
	return counts, errors.Join(errs...)
}

// pollCode compares the code hash at target with the last one seen. The
// first observation only records it.
func (p *poller) pollCode(ctx context.Context, target uint64) (int, error) {
	st := p.state(EventCodeChanged)
	h1, err := p.src.BlockHash(ctx, target)
	if err != nil || h1 == noBlock {
		return 0, err // no block: the chain got shorter since the head was read
	}
	if len(st.Checkpoints) > 0 && st.Last == target && st.Checkpoints[0].H == h1 {
		return 0, nil // nothing new
	}
	code, err := p.src.CodeHash(ctx, p.addrs[EventCodeChanged], target)
	if err != nil {
		return 0, err
	}
	if h2, err := p.src.BlockHash(ctx, target); err != nil {
		return 0, err
	} else if h2 != h1 {
		return 0, nil // reorganised while reading: read again next poll
	}
	n := 0
	switch {
	case st.Code == nil:
		p.log.Info("watching code", keyEvent, EventCodeChanged, "address", st.Address, keyBlock, target)
		p.dirty = true
	case *st.Code != code:
		p.log.Info("code changed", keyEvent, EventCodeChanged, "address", st.Address, keyBlock, target)
		n = 1
		p.dirty = true
	}
	c := hash32(code)
	st.Code = &c
	st.Last, st.Checkpoints = target, []checkpoint{{target, h1}}
	return n, nil
}

// pollLogs processes kind's logs in [Last+1, target] after checking for a
// reorg, and returns how many it had not seen before.
func (p *poller) pollLogs(ctx context.Context, kind string, head, target uint64) (int, error) {
	st := p.state(kind)
	if len(st.Checkpoints) == 0 {
		h, err := p.src.BlockHash(ctx, target)
		if err != nil || h == noBlock {
			return 0, err
		}
		st.Last, st.Checkpoints = target, []checkpoint{{target, h}}
		p.dirty = true
		p.log.Info("watching events", keyEvent, kind, "address", st.Address, keyBlock, target)
		return 0, nil
	}
	if err := p.rewind(ctx, kind, st, head, target); err != nil {
		return 0, err
	}
	n := 0
	for range maxChunksPerPoll {
		if st.Last >= target {
			break
		}
		from := st.Last + 1
		to := min(target, from+chunkBlocks-1)
		h1, err := p.src.BlockHash(ctx, to)
		if err != nil || h1 == noBlock {
			return n, err
		}
		logs, err := p.src.FilterLogs(ctx, st.Address, topics[kind], from, to)
		if err != nil {
			return n, err
		}
		h2, err := p.src.BlockHash(ctx, to)
		if err != nil {
			return n, err
		}
		if h1 != h2 {
			p.log.Debug("reorg while reading; reading again next poll", keyEvent, kind, keyBlock, to)
			return n, nil
		}
		for _, l := range logs {
			if l.Removed || l.Block < from || l.Block > to {
				continue
			}
			k := logKey(l)
			if _, ok := st.seen[k]; ok {
				continue
			}
			st.seen[k] = l.Block
			n++
		}
		st.Last = to
		st.Checkpoints = append(st.Checkpoints, checkpoint{to, h1})
		if len(st.Checkpoints) > maxCheckpoints {
			st.Checkpoints = slices.Delete(st.Checkpoints, 0, len(st.Checkpoints)-maxCheckpoints)
		}
		st.prune()
		p.dirty = true
	}
	return n, nil
}

// rewind checks that the newest checkpoint is still canonical and, if not,
// moves Last back to the newest one that is (or maxReorgDepth below the
// head when none is), so the reorganised blocks are read again.
func (p *poller) rewind(ctx context.Context, kind string, st *kindState, head, target uint64) error {
	cps := st.Checkpoints
	newest := cps[len(cps)-1]
	if newest.N <= head {
		h, err := p.src.BlockHash(ctx, newest.N)
		if err != nil {
			return err
		}
		if h == newest.H {
			return nil
		}
	}
	for i := len(cps) - 2; i >= 0; i-- {
		cp := cps[i]
		if cp.N > head {
			continue
		}
		h, err := p.src.BlockHash(ctx, cp.N)
		if err != nil {
			return err
		}
		if h == cp.H {
			p.log.Warn("reorg: reading again", keyEvent, kind, "from", cp.N+1, "was_at", st.Last)
			st.Last, st.Checkpoints = cp.N, cps[:i+1]
			p.dirty = true
			return nil
		}
	}
	floor := min(st.Last, target)
	floor -= min(floor, maxReorgDepth)
	h, err := p.src.BlockHash(ctx, floor)
	if err != nil {
		return err
	}
	if h == noBlock {
		return fmt.Errorf("block %d: not found below head %d", floor, head)
	}
	p.log.Warn("reorg deeper than remembered, or a new chain: reading again", keyEvent, kind, "from", floor+1, "was_at", st.Last)
	st.Last, st.Checkpoints = floor, []checkpoint{{floor, h}}
	p.dirty = true
	return nil
}

// prune forgets log identities below any block a rewind could read again,
// and the oldest ones beyond maxSeen.
func (st *kindState) prune() {
	floor := st.Checkpoints[0].N
	if d := st.Last - min(st.Last, maxReorgDepth); d < floor {
		floor = d
	}
	for k, b := range st.seen {
		if b < floor {
			delete(st.seen, k)
		}
	}
	if len(st.seen) <= maxSeen {
		return
	}
	all := make([]seenLog, 0, len(st.seen))
	for k, b := range st.seen {
		all = append(all, seenLog{k, b})
	}
	slices.SortFunc(all, func(a, b seenLog) int { return cmp.Compare(a.B, b.B) })
	for _, s := range all[:len(all)-maxSeen] {
		delete(st.seen, s.K)
	}
}

// logKey identifies a log across reorgs: its transaction, topics and data,
// but not its block or position, which change when a reorg moves the
// transaction.
func logKey(l chain.Log) string {
	h := sha256.New()
	h.Write(l.TxHash[:])
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(l.Topics)))
	h.Write(n[:])
	for _, t := range l.Topics {
		h.Write(t[:])
	}
	h.Write(l.Data)
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// pollLoop polls every PollInterval, backing off while polls fail.
func (s *Scheduler) pollLoop(ctx context.Context) {
	fails := 0
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := s.pollOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		wait := s.cfg.PollInterval
		if err != nil {
			fails++
			wait = pollBackoff(s.cfg.PollInterval, fails)
			s.log.Warn("event poll failed; nothing is skipped, retrying", keyErr, err, "failures", fails, "retry_in", wait)
		} else if fails > 0 {
			s.log.Info("event poll recovered", "after_failures", fails)
			fails = 0
		}
		t.Reset(wait)
	}
}

// pollBackoff doubles the interval per consecutive failure, up to a minute
// (or the interval itself when that is longer).
func pollBackoff(interval time.Duration, fails int) time.Duration {
	limit := max(interval, maxPollBackoff)
	d := interval
	for i := 1; i < fails && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}

// pollOnce polls, fires the coalesced events, then saves the state. When
// stopping mid-way it saves nothing, so the next start reads the same
// ranges again rather than lose an event.
func (s *Scheduler) pollOnce(ctx context.Context) error {
	s.mu.Lock()
	subs := s.subs
	s.mu.Unlock()
	counts, err := s.poller.poll(ctx, subs)
	if ctx.Err() != nil {
		return nil
	}
	s.fireEvents(ctx, subs, counts)
	if ctx.Err() != nil {
		return nil
	}
	return errors.Join(err, s.poller.save())
}

// fireEvents makes one start attempt per subscribed specialist for all the
// events of one poll, e.g. reason "event:name_registered x 2, feedback x 1"
// (or joins the specialist's pending start: pending.go).
func (s *Scheduler) fireEvents(ctx context.Context, subs map[string][]string, counts map[string]int) {
	per := map[string]map[string]int{}
	for _, k := range eventKinds {
		n := counts[k]
		if n == 0 {
			continue
		}
		for _, name := range subs[k] {
			if per[name] == nil {
				per[name] = map[string]int{}
			}
			per[name][k] = n
		}
	}
	for _, name := range slices.Sorted(maps.Keys(per)) {
		s.fireEvent(ctx, name, per[name])
	}
}
