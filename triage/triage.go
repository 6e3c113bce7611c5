package triage

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
)

// Chain is what Triage reads the log through. *chain.FeedbackLog provides
// Scan; BlockHash comes from the client that log uses.
type Chain interface {
	// Scan reads every entry from index from to the end of the log, all at
	// one block, calling fn with each page in order (chain.FeedbackLog.Scan).
	Scan(ctx context.Context, from uint64, fn func([]chain.Entry) error) (chain.ScanResult, error)
	// BlockHash returns the hash of the canonical block at number, or the
	// zero hash and no error when the chain has no block there (it got
	// shorter in a reorg).
	BlockHash(ctx context.Context, number uint64) ([32]byte, error)
}

// ChainOf makes a Chain of a log reader (*chain.FeedbackLog) and a block
// hash source (*chain.Client): triage.ChainOf{Log: log, Blocks: client}.
type ChainOf struct {
	Log interface {
		Scan(ctx context.Context, from uint64, fn func([]chain.Entry) error) (chain.ScanResult, error)
	}
	Blocks interface {
		BlockHash(ctx context.Context, number uint64) ([32]byte, error)
	}
}

// Scan calls c.Log.Scan.
func (c ChainOf) Scan(ctx context.Context, from uint64, fn func([]chain.Entry) error) (chain.ScanResult, error) {
	return c.Log.Scan(ctx, from, fn)
}

// BlockHash calls c.Blocks.BlockHash.
func (c ChainOf) BlockHash(ctx context.Context, number uint64) ([32]byte, error) {
	return c.Blocks.BlockHash(ctx, number)
}

var (
	_ Chain = ChainOf{}
	_ Chain = ChainOf{Log: (*chain.FeedbackLog)(nil), Blocks: (*chain.Client)(nil)}
)

// Poster appends a text to the feedback log (sponsored, as the fleet).
type Poster interface {
	Post(ctx context.Context, text string) error
}

// Directories under the data dir.
const (
	StoreDir   = "triage"
	ReportsDir = "reports"
)

// Triage is the triage stage: an Engine kept in step with the chain through
// a Store, and the report files. Its methods are safe for concurrent use;
// runs are serialized.
type Triage struct {
	mu      sync.Mutex
	cfg     Config
	store   *Store
	engine  *Engine
	reports string
	version uint64 // bumped whenever the engine's input changes
	written uint64 // version of the report last written
	// expires is the earliest expiry of an accepted risk in the report last
	// written: from then on that report is out of date though the log is
	// not (zero: none).
	expires time.Time
}

// Open opens the triage state of a data dir (<dataDir>/triage, reports in
// <dataDir>/reports) and rebuilds the engine from the entries cached there.
// The error wraps ErrLocked when another process has it open.
func Open(dataDir string, cfg Config) (*Triage, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("triage config: %w", err)
	}
	st, err := OpenStore(filepath.Join(dataDir, StoreDir))
	if err != nil {
		return nil, err
	}
	t := &Triage{cfg: cfg.withDefaults(), store: st, reports: filepath.Join(dataDir, ReportsDir), version: 1}
	if err := t.rebuild(); err != nil {
		st.Close()
		return nil, err
	}
	return t, nil
}

// Close releases the store.
func (t *Triage) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.store.Close()
}

// rebuild makes a fresh engine from the store (BuildEngine: the log read
// again when an unmerge splits an entry read before it).
func (t *Triage) rebuild() error { return t.rebuildWith(nil) }

// rebuildWith is rebuild given splits known to hold for the whole store
// (the stale engine's, after a sync read an unmerge): the store is then
// read once, not once more to find them.
func (t *Triage) rebuildWith(splits map[uint64]uint64) error {
	e, err := buildEngine(t.cfg, t.store.Load, splits)
	if err != nil {
		return fmt.Errorf("rebuild triage: %w", err)
	}
	t.engine = e
	t.version++
	return nil
}

// SyncResult says what a Sync read.
type SyncResult struct {
	From      uint64 // first index read
	Next      uint64 // index after the last entry now held
	Read      int    // entries read
	Block     uint64 // block the entries were read at
	BlockHash [32]byte
	// Reorg is true when a checkpoint's block was no longer canonical; the
	// entries from ForkAt on were dropped and read again.
	Reorg  bool
	ForkAt uint64
}

// Sync brings the engine up to the chain's head: it checks that the newest
// checkpoint's block is still canonical, falls back to the newest one that
// is after a reorg (dropping and re-reading everything after it), then reads
// the new entries, caches them and records a checkpoint. Entries read before
// an error are kept.
func (t *Triage) Sync(ctx context.Context, c Chain) (SyncResult, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.sync(ctx, c)
}

func (t *Triage) sync(ctx context.Context, c Chain) (SyncResult, error) {
	var res SyncResult
	cps := t.store.Checkpoints()
	keep := len(cps)
	for keep > 0 {
		cp := cps[keep-1]
		h, err := c.BlockHash(ctx, cp.Block)
		if err != nil {
			return res, fmt.Errorf("triage sync: hash of block %d: %w", cp.Block, err)
		}
		if h == cp.Hash {
			break
		}
		keep--
	}
	if keep < len(cps) {
		fork := uint64(0)
		if keep > 0 {
			fork = cps[keep-1].Next
		}
		if err := t.store.DropCheckpoints(keep); err != nil {
			return res, fmt.Errorf("triage sync: %w", err)
		}
		if err := t.store.Truncate(fork); err != nil {
			return res, fmt.Errorf("triage sync: %w", err)
		}
		if err := t.rebuild(); err != nil {
			return res, fmt.Errorf("triage sync: %w", err)
		}
		res.Reorg, res.ForkAt = true, fork
	}
	res.From = t.store.Count()
	scan, err := c.Scan(ctx, res.From, func(page []chain.Entry) error {
		if err := t.store.Append(page); err != nil {
			return err
		}
		if err := t.engine.Add(page); err != nil {
			// The store took the page and the engine did not: rebuild
			// from the store rather than run on with the two apart.
			if rerr := t.rebuild(); rerr != nil {
				return errors.Join(err, rerr)
			}
			return err
		}
		if t.engine.Stale() {
			// An unmerge split an entry already placed: place it again.
			if err := t.rebuildWith(t.engine.Splits()); err != nil {
				return err
			}
		}
		t.version++
		res.Read += len(page)
		return nil
	})
	res.Next = t.store.Count()
	res.Block, res.BlockHash = scan.Block, scan.BlockHash
	if scan.Block != 0 && scan.Next == res.Next {
		if cerr := t.store.AddCheckpoint(Checkpoint{Next: res.Next, Block: scan.Block, Hash: scan.BlockHash}); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}
	if err != nil {
		return res, fmt.Errorf("triage sync from %d: %w", res.From, err)
	}
	return res, nil
}

// Report ranks what the engine holds now; Block and BlockHash are those of
// the newest checkpoint.
func (t *Triage) Report(now time.Time) fleet.Report {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.report(now)
}

func (t *Triage) report(now time.Time) fleet.Report {
	r := t.engine.Report(now)
	if cps := t.store.Checkpoints(); len(cps) > 0 {
		cp := cps[len(cps)-1]
		if cp.Next == r.Head {
			r.Block, r.BlockHash = cp.Block, "0x"+hex.EncodeToString(cp.Hash[:])
		}
	}
	return r
}

// ClusterOf returns the cluster id holding the finding at index (see
// Engine.ClusterOf).
func (t *Triage) ClusterOf(index uint64) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.engine.ClusterOf(index)
}

// SurfaceOf returns the surface of the cluster holding the finding at index.
func (t *Triage) SurfaceOf(index uint64) (fleet.Surface, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.engine.Surface(index)
}

// RunResult says what a Run did.
type RunResult struct {
	Sync   SyncResult
	Report fleet.Report
	Wrote  bool // the report files were rewritten
	Posted bool // a meta summary was posted
}

// Run is one triage pass, for `fleetd triage`, the daemon's trigger and
// each new-entry event: Sync, rank, rewrite the report files when anything
// changed since they were last written (or they are missing), and post a
// meta summary through p when the top 3 changed and the last summary is at
// least Config.MetaEvery old (p may be nil: no summary). A Sync error ends
// the run before any file is written, so the last report stays in place for
// `fleetd report` to show with its age (LoadReport).
func (t *Triage) Run(ctx context.Context, c Chain, p Poster, now time.Time) (RunResult, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out RunResult
	var err error
	if out.Sync, err = t.sync(ctx, c); err != nil {
		return out, err
	}
	out.Report = t.report(now)
	_, statErr := os.Stat(filepath.Join(t.reports, LatestJSON))
	expired := !t.expires.IsZero() && !now.Before(t.expires)
	if t.written != t.version || statErr != nil || expired {
		if err := WriteReport(t.reports, out.Report, t.cfg.Top, t.cfg.History); err != nil {
			return out, fmt.Errorf("triage run: %w", err)
		}
		t.written, t.expires, out.Wrote = t.version, NextExpiry(out.Report), true
	}
	if p == nil {
		return out, nil
	}
	st := t.store.State()
	if !MetaDue(out.Report, st.Meta, now, t.cfg.MetaEvery) {
		return out, nil
	}
	text, err := MetaText(out.Report)
	if err != nil {
		return out, fmt.Errorf("triage run: %w", err)
	}
	if err := p.Post(ctx, text); err != nil {
		return out, fmt.Errorf("triage run: post meta summary: %w", err)
	}
	st.Meta = MetaState{PostedAt: now.UTC(), Top: Top(out.Report, metaTop)}
	if err := t.store.SaveState(st); err != nil {
		return out, fmt.Errorf("triage run: %w", err)
	}
	out.Posted = true
	return out, nil
}

// Stored calls fn with every entry the store holds, in log order, and
// returns the newest checkpoint (ok false when the store holds nothing): the
// log as triage last read it, for readers whose chain is gone.
func (t *Triage) Stored(fn func([]Entry) error) (cp Checkpoint, ok bool, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	cps := t.store.Checkpoints()
	if len(cps) == 0 || t.store.Count() == 0 {
		return Checkpoint{}, false, nil
	}
	if fn != nil {
		if err := t.store.Load(fn); err != nil {
			return Checkpoint{}, false, err
		}
	}
	return cps[len(cps)-1], true, nil
}

// Rank ranks what the store holds, without reading the chain, and rewrites
// the report files: `fleetd triage` when the node is gone (corrections
// applied since the last pass are in the store; entries posted since are not).
func (t *Triage) Rank(now time.Time) (fleet.Report, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.report(now)
	if err := WriteReport(t.reports, r, t.cfg.Top, t.cfg.History); err != nil {
		return r, fmt.Errorf("triage rank: %w", err)
	}
	t.written, t.expires = t.version, NextExpiry(r)
	return r, nil
}

// NextExpiry returns the earliest until= of the accepted risks in r that
// have not expired (zero when none): when r stops being what the log
// says.
func NextExpiry(r fleet.Report) time.Time {
	var next time.Time
	for i := range r.Clusters {
		c := &r.Clusters[i]
		if c.State != fleet.ClusterAcceptedRisk || c.Correction == nil {
			continue
		}
		for _, n := range c.Corrections {
			if n.Entry == *c.Correction && n.Until != nil && (next.IsZero() || n.Until.Before(next)) {
				next = *n.Until
			}
		}
	}
	return next
}
