// Package poster is the one road to the feedback log. Every entry fleetd
// appends goes through a Poster: a specialist's finding (qa_report), the fix
// stage's records, triage's meta summaries, an operator's correction
// (`fleetd findings mark`) and note (`fleetd findings post`). A Poster writes
// each entry to a durable outbox (<data_dir>/outbox, fsynced) before posting
// it and removes it after, so nothing acknowledged is lost to a crash or a
// chain outage; it posts keyed (chain.FeedbackLog.SubmitKeyed), so however
// many processes post one entry, or flush one outbox, the log lets one copy
// through. Findings are also deduplicated by fingerprint and rate-limited per
// source, with state shared by the processes of a data dir
// (<data_dir>/reporter/state.json) and folded from the log across data dirs.
//
// The layout test (TestOneRoadToTheLog) fails on any other caller of the
// log's submit functions.
package poster

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
)

// Config configures New.
type Config struct {
	Log       *chain.FeedbackLog // nil: every entry waits in the outbox
	Identity  *chain.Key         // the identity recorded as sender
	Sponsor   *chain.Key         // relays and pays; nil: Identity pays
	OutboxDir string             // <data_dir>/outbox
	// PerSource caps findings a source may post per Window (default 30 per
	// 10 min). Records are not limited (see Record).
	PerSource int
	Window    time.Duration
	// DedupeWindow suppresses a fingerprint already posted within it, and a
	// ByText record already posted within it (default 1 h).
	DedupeWindow time.Duration
	// StateFile keeps the rate-limit and dedupe state across processes and
	// restarts (<data_dir>/reporter/state.json); empty: in memory only.
	StateFile string
	// Trusted are the senders besides Identity whose findings on the log
	// count for dedupe (chain.trusted_senders).
	Trusted     []fleet.Address
	PostTimeout time.Duration // default 30 s
	Logger      *slog.Logger
}

// Poster posts entries to the feedback log and never loses one: each entry
// is first written to the outbox (fsynced), then posted, then removed from
// the outbox. If the chain is unreachable it stays queued and Flush posts it
// later, exactly once: before posting a queued entry, Flush looks for its
// text among the entries appended since it was queued, and the entry's log
// key makes the log refuse a second copy.
type Poster struct {
	cfg Config
	log *slog.Logger
	now func() time.Time

	mu    sync.Mutex // guards mem and serializes state updates in this process
	mem   *postState // the state when there is no StateFile
	flush sync.Mutex // one Flush or post at a time touches the outbox

	// awaited holds the outbox files a Report has queued and waits to post
	// (behind p.flush), and what a flush of this process that took one
	// first did with it (nil until then): see takenBy.
	awaitMu sync.Mutex
	awaited map[string]*taken

	fundsMu sync.Mutex
	funds   Funds // whether posting is paused for a sponsor run dry
	resumed bool  // a post went through after a pause: flush what waits
}

// Funds says whether posting is paused because the key paying for gas (the
// sponsor, or the identity without one) cannot pay: findings are queued,
// acknowledged, and posted once it is funded.
type Funds struct {
	Dry   bool          `json:"dry"`
	Since time.Time     `json:"since,omitzero"` // when the pause began
	Payer fleet.Address `json:"payer,omitzero"` // the key that cannot pay
	Error string        `json:"error,omitempty"`
}

// ErrSponsorDry wraps a post refused because the paying key cannot cover the
// gas: the entry stays queued and posting resumes when the key is funded.
var ErrSponsorDry = errors.New("the sponsor cannot pay for gas")

// Funds reports whether posting is paused for a sponsor run dry.
func (p *Poster) Funds() Funds {
	p.fundsMu.Lock()
	defer p.fundsMu.Unlock()
	return p.funds
}

// noteFunds records what a post's outcome says about the paying key: the
// pause begins (logged once, as an error an operator must act on) at the
// first refusal for funds and ends (logged once) at the first post that
// goes through.
func (p *Poster) noteFunds(payer *chain.Key, err error) {
	p.fundsMu.Lock()
	defer p.fundsMu.Unlock()
	switch {
	case chain.IsInsufficientFunds(err):
		if !p.funds.Dry {
			p.funds = Funds{Dry: true, Since: p.now().UTC(), Payer: payer.Address(), Error: err.Error()}
			p.log.Error("posting paused: the sponsor cannot pay for gas; findings stay queued in the outbox and are posted once it is funded",
				"sponsor", payer.Address(), "outbox", p.cfg.OutboxDir, "err", err)
		}
	case err == nil || errors.Is(err, chain.ErrDuplicate):
		if p.funds.Dry {
			p.log.Info("posting resumed: the sponsor pays again", "sponsor", p.funds.Payer, "paused_for", p.now().Sub(p.funds.Since).Round(time.Second))
			p.funds = Funds{}
			p.resumed = true
		}
	}
}

// takeResumed reports (once) that posting resumed after a pause.
func (p *Poster) takeResumed() bool {
	p.fundsMu.Lock()
	defer p.fundsMu.Unlock()
	r := p.resumed
	p.resumed = false
	return r
}

// New creates the outbox directory and returns a poster.
func New(cfg Config) (*Poster, error) {
	if cfg.PerSource <= 0 {
		cfg.PerSource = 30
	}
	if cfg.Window <= 0 {
		cfg.Window = 10 * time.Minute
	}
	if cfg.DedupeWindow <= 0 {
		cfg.DedupeWindow = time.Hour
	}
	if cfg.PostTimeout <= 0 {
		cfg.PostTimeout = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.OutboxDir == "" {
		return nil, errors.New("poster: no outbox directory")
	}
	if err := os.MkdirAll(cfg.OutboxDir, 0o700); err != nil {
		return nil, fmt.Errorf("poster: %w", err)
	}
	if cfg.StateFile != "" {
		if err := os.MkdirAll(filepath.Dir(cfg.StateFile), 0o700); err != nil {
			return nil, fmt.Errorf("poster: %w", err)
		}
	}
	return &Poster{cfg: cfg, log: cfg.Logger.With("component", "reporter"), now: time.Now}, nil
}

// OutboxDir is where the poster queues what it could not post yet.
func (p *Poster) OutboxDir() string { return p.cfg.OutboxDir }

// Status is what happened to one entry.
type Status string

// The statuses of a Result. Every one but RateLimited acknowledges the entry:
// it is on the log, or will be.
const (
	Posted      Status = "posted"       // on the log now; Result.Entry says where
	Queued      Status = "queued"       // in the outbox: Flush posts it when the log answers
	Deduped     Status = "deduped"      // already on the log (or decided by this data dir within the dedupe window)
	RateLimited Status = "rate_limited" // a finding over its source's limit: dropped, not queued
)

// Result is what happened to one entry.
type Result struct {
	Status Status
	Entry  *chain.Submission // Posted: the entry's index, sender and transaction
	FP     string            // a finding's fingerprint; empty for a record
	Text   string            // the text posted, queued or found a duplicate
	Limit  *RateLimit        // RateLimited: the limit the source reached
}

// RateLimit is the per-source limit on findings.
type RateLimit struct {
	PerSource int
	Window    time.Duration
}

// Item is one entry queued in the outbox, stored as JSON in
// <OutboxDir>/<queued time>-<id>.json. The format is the reporter's of
// earlier versions plus key and once, which only records carry: an item
// without a key is a finding, keyed by its fingerprint.
type Item struct {
	Text     string    `json:"text"`
	FP       string    `json:"fp"`
	Source   string    `json:"source"`
	Queued   time.Time `json:"queued"`
	LogCount *uint64   `json:"log_count,omitempty"` // entries in the log when queued, if known
	Key      string    `json:"key,omitempty"`       // a record's log key, 64 hex digits
	Once     bool      `json:"once,omitempty"`      // a Once record
	// Where its post landed, for an entry in <OutboxDir>.landed/ (see
	// Settle): the log index, the block, and when the receipt came back.
	Index  *uint64    `json:"index,omitempty"`
	Block  uint64     `json:"block,omitempty"`
	Landed *time.Time `json:"landed,omitempty"`
	file   string
}

// ErrRejected means the log refused the text itself; retrying cannot help.
var ErrRejected = errors.New("finding rejected by the feedback log")

// Report formats f (stamping its fingerprint), applies the rate limit and
// dedupe, queues it durably and tries to post it. A nil error means the
// finding is acknowledged: posted, or safely queued, or a duplicate; or
// dropped by the rate limit (RateLimited). An error wrapping ErrRejected
// means the codec or the log refused it; any other error means the outbox
// failed and nothing is acknowledged.
func (p *Poster) Report(ctx context.Context, f fleet.Finding) (Result, error) {
	f.Fingerprint = fleet.Fingerprint(f)
	text, err := fleet.Format(f)
	if err != nil {
		return Result{}, fmt.Errorf("%w: %w", ErrRejected, err)
	}
	res := Result{FP: f.Fingerprint, Text: text}
	now := p.now().Round(0) // wall clock only: it is compared after a JSON round trip
	// The outbox item is written (fsynced) to a temporary file before
	// anything is decided: a disk too full to queue the finding refuses it
	// here, with no dedupe decision recorded that a second state write
	// would have to take back (on a full disk that write can fail too, and
	// the finding would then read as a duplicate for the dedupe window).
	item := Item{Text: text, FP: f.Fingerprint, Source: f.Source, Queued: now.UTC()}
	p.countLog(ctx, &item)
	staged, err := p.stage(&item)
	if err != nil {
		return res, err // not acknowledged: the caller must know
	}
	defer staged.discard()
	// Awaited from before it is in the outbox: a flush that takes it
	// at any time after says so (takenBy).
	p.await(item.file)
	defer p.takenBy(item.file)
	// Decide under the state lock: fold in what the log gained since the
	// last decision, then dedupe and rate-limit, and record the decision
	// before posting so a process deciding next sees it. A finding to post
	// is in the outbox before its decision is recorded: a process killed
	// between the two (waiting for a long flush to end, say) left it seen
	// but queued nowhere, so every later report of it within the dedupe
	// window was a duplicate of a post that never happened (TestMCPUnderFaults:
	// "acknowledged (deduped), on the log 0 times"). Killed after the
	// outbox and before the decision, it is posted by the next flush, keyed,
	// so the log takes it once.
	queued := false
	if err := p.withState(ctx, func(st *postState) (bool, error) {
		folded := p.foldLog(ctx, st, now)
		p.prune(st, now)
		if last, ok := st.Seen[f.Fingerprint]; ok && now.Sub(last) < p.cfg.DedupeWindow {
			res.Status = Deduped
			return folded, nil
		}
		if len(st.Posted[f.Source]) >= p.cfg.PerSource {
			res.Status, res.Limit = RateLimited, &RateLimit{PerSource: p.cfg.PerSource, Window: p.cfg.Window}
			return folded, nil
		}
		err := staged.commit()
		queued = staged.done // renamed into the outbox, even if its sync failed
		if err != nil {
			return false, err
		}
		st.Posted[f.Source] = append(st.Posted[f.Source], now)
		st.Seen[f.Fingerprint] = now
		return true, nil
	}); err != nil {
		if queued {
			p.dequeue(item) // its decision was not recorded: not acknowledged, not queued
		}
		return res, err // not acknowledged: the caller must know
	}
	if res.Status != "" {
		return res, nil
	}

	p.flush.Lock()
	defer p.flush.Unlock()
	if t := p.takenBy(item.file); t != nil {
		// A flush of this process posted it while this report waited for
		// the outbox: it is this report's entry, not a duplicate.
		switch {
		case t.err != nil:
			p.forget(ctx, f, now)
			return res, t.err
		case t.sub != nil:
			res.Status, res.Entry = Posted, t.sub
		default:
			res.Status = Deduped // the flush found it on the log already
		}
		return res, nil
	}
	if err := p.deliver(ctx, &item, &res, staged); err != nil {
		p.forget(ctx, f, now)
		return res, err // not acknowledged: the caller must know
	}
	return res, nil
}

// taken is what a flush did with an outbox item a Report waits to post:
// posted it (sub), found it on the log already (neither), or moved it
// aside as rejected (err).
type taken struct {
	sub *chain.Submission
	err error
}

// await marks file as an item a Report of this process waits to post.
func (p *Poster) await(file string) {
	p.awaitMu.Lock()
	defer p.awaitMu.Unlock()
	if p.awaited == nil {
		p.awaited = map[string]*taken{}
	}
	p.awaited[file] = nil
}

// tookAwaited records what a flush did with file, if a Report waits for it.
func (p *Poster) tookAwaited(file string, t taken) {
	p.awaitMu.Lock()
	defer p.awaitMu.Unlock()
	if _, ok := p.awaited[file]; ok {
		p.awaited[file] = &t
	}
}

// takenBy ends the wait for file and returns what a flush of this process
// did with it meanwhile, or nil when none took it. Without it, a report
// whose finding the daemon's periodic flush posted while the report waited
// for the outbox posted it again, was refused as a duplicate of itself,
// and read "deduped" although its own entry was the one on the log.
func (p *Poster) takenBy(file string) *taken {
	p.awaitMu.Lock()
	defer p.awaitMu.Unlock()
	t := p.awaited[file]
	delete(p.awaited, file)
	return t
}

// Record is a log entry that is not a finding: a correction, a fix-stage
// record, a meta summary, an operator's note. It is posted exactly as Text:
// no fingerprint is stamped (a correction's ref= names the entry or cluster
// it is about, and triage parses it as written). It is not rate-limited: the
// limit bounds what a specialist's model can flood the log with, while
// records come from an operator, or from stages bounded on their own (the
// fix stage's PR limits, triage's meta interval); a dropped correction or
// fix record would silently change what triage reports.
type Record struct {
	Text   string
	Source string // who posts it (the envelope's source=, or the command), for the outbox and its log lines
	Keying Keying
}

// Keying says which log key a record goes under, which decides what counts as
// a second copy of it.
type Keying int

const (
	// ByText keys a record by its text: the same record posted by processes
	// of one identity within the dedupe window lands once. For what
	// machines write and may write twice (the fix stage in the daemon and
	// in `fleetd fix --poll`, triage in two processes at one head).
	ByText Keying = iota
	// Once gives each Post a key of its own: it lands exactly once, even
	// across a crash or two flushes of one outbox, and never counts as a
	// copy of an earlier identical post. For an operator's actions: marking
	// an entry false-positive, resolved, then false-positive again posts
	// three corrections, and triage applies the last.
	Once
)

// Post queues r durably and tries to post it, after whatever this poster's
// outbox holds from before: a correction must not overtake the one it
// revises. When those cannot be posted, r waits behind them (Queued). A nil
// error means r is acknowledged: posted, queued or a duplicate. An error
// wrapping ErrRejected means the log refuses the text; any other error means
// the outbox failed and nothing is acknowledged.
func (p *Poster) Post(ctx context.Context, r Record) (Result, error) {
	res := Result{Text: r.Text}
	if err := chain.CheckText(r.Text); err != nil {
		return res, fmt.Errorf("%w: %w", ErrRejected, err)
	}
	item := Item{Text: r.Text, Source: r.Source, Queued: p.now().Round(0).UTC()}
	var key [32]byte
	switch r.Keying {
	case ByText:
		key = recordKey(r.Text)
	case Once:
		if _, err := rand.Read(key[:]); err != nil {
			return res, fmt.Errorf("post: %w", err)
		}
		item.Once = true
	default:
		return res, fmt.Errorf("post: unknown keying %d", r.Keying)
	}
	item.Key = hex.EncodeToString(key[:])
	p.countLog(ctx, &item)
	p.flush.Lock()
	defer p.flush.Unlock()
	if _, left, err := p.flushLocked(ctx); err != nil && left > 0 {
		if err := p.enqueue(&item); err != nil {
			return res, err
		}
		p.log.Warn("queued in the outbox behind entries that could not be posted; it is retried at the next flush", "source", r.Source, "left", left, "err", err)
		res.Status = Queued
		return res, nil
	}
	return res, p.deliver(ctx, &item, &res, nil)
}

// recordKey is the log key of a ByText record: every process derives the
// same one from the text, and no finding's key (chain.FingerprintKey) can
// be it.
func recordKey(text string) [32]byte { return sha256.Sum256([]byte("fleetd/record/" + text)) }

// forever is the duplicate window of a Once record: its key is random and
// used by nothing else, so any entry under it is this very entry.
const forever = time.Duration(math.MaxInt64)

// countLog records in item how many entries the log holds, when it answers:
// Flush scans for the item's text from there.
func (p *Poster) countLog(ctx context.Context, item *Item) {
	if p.cfg.Log == nil {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, p.cfg.PostTimeout)
	defer cancel()
	if n, err := p.cfg.Log.Count(cctx); err == nil {
		item.LogCount = &n
	}
}

// deliver writes item to the outbox, posts it, and removes it unless it
// stays queued; res gets the status. p.flush is held. It returns an error
// only when item is not acknowledged: the outbox failed, or the log refuses
// the text (ErrRejected).
func (p *Poster) deliver(ctx context.Context, item *Item, res *Result, st *staged) error {
	if st == nil {
		var err error
		if st, err = p.stage(item); err != nil {
			return err
		}
		defer st.discard()
	}
	if err := st.commit(); err != nil {
		return err
	}
	sub, err := p.post(ctx, *item)
	switch {
	case err == nil:
		res.Status, res.Entry = Posted, sub
		p.land(*item, sub)
		if p.takeResumed() {
			// The sponsor was funded again: what queued during the pause
			// goes now, not at the next start.
			if posted, left, err := p.flushLocked(ctx); err != nil {
				p.log.Warn("outbox: flush after posting resumed", "posted", posted, "left", left, "err", err)
			}
		}
	case errors.Is(err, chain.ErrDuplicate):
		// Another process posted it first (the log's compare-and-swap
		// decided): acknowledged, as a duplicate.
		res.Status = Deduped
		p.dequeue(*item)
	case errors.Is(err, ErrRejected):
		p.dequeue(*item)
		return err
	default:
		p.log.Warn("queued in the outbox: posting failed, it is retried at the next flush", "source", item.Source, "fp", item.FP, "err", err)
		res.Status = Queued
	}
	return nil
}

// forget undoes the bookkeeping of a finding that was not accepted (decided
// at now).
func (p *Poster) forget(ctx context.Context, f fleet.Finding, now time.Time) {
	err := p.withState(context.WithoutCancel(ctx), func(st *postState) (bool, error) {
		if st.Seen[f.Fingerprint].Equal(now) {
			delete(st.Seen, f.Fingerprint)
		}
		ts := st.Posted[f.Source]
		for i := len(ts) - 1; i >= 0; i-- {
			if ts[i].Equal(now) {
				st.Posted[f.Source] = append(ts[:i], ts[i+1:]...)
				break
			}
		}
		return true, nil
	})
	if err != nil {
		p.log.Error("reporter: could not undo the bookkeeping of a finding that was not accepted", "fp", f.Fingerprint, "err", err)
	}
}

// keyOf returns the log key it goes under and the window within which an
// entry already under that key makes it a duplicate.
func (p *Poster) keyOf(it Item) ([32]byte, time.Duration, error) {
	if it.Key == "" {
		// Keyed by fingerprint: of all processes posting this finding
		// within the window, the log lets exactly one through.
		return chain.FingerprintKey(it.FP), p.cfg.DedupeWindow, nil
	}
	var key [32]byte
	b, err := hex.DecodeString(it.Key)
	if err != nil || len(b) != len(key) {
		return key, 0, fmt.Errorf("%w: outbox key %q is not 32 bytes of hex", ErrRejected, it.Key)
	}
	copy(key[:], b)
	if it.Once {
		return key, forever, nil
	}
	return key, p.cfg.DedupeWindow, nil
}

func (p *Poster) post(ctx context.Context, it Item) (*chain.Submission, error) {
	if p.cfg.Log == nil || p.cfg.Identity == nil {
		return nil, errors.New("no feedback log configured")
	}
	key, window, err := p.keyOf(it)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, p.cfg.PostTimeout)
	defer cancel()
	sponsor := p.cfg.Sponsor
	if sponsor == nil {
		sponsor = p.cfg.Identity // pays its own gas, still keyed
	}
	sub, err := p.cfg.Log.SubmitKeyed(ctx, p.cfg.Identity, sponsor, it.Text, key, window)
	p.noteFunds(sponsor, err)
	if chain.IsInsufficientFunds(err) {
		return nil, fmt.Errorf("%w: %s: %w", ErrSponsorDry, sponsor.Address(), err)
	}
	if err != nil && (chain.IsRevert(err, "EmptyText") || chain.IsRevert(err, "TextTooLong") ||
		errors.Is(err, chain.ErrEmptyText) || errors.Is(err, chain.ErrTextTooLong) || errors.Is(err, chain.ErrNotUTF8)) {
		return nil, fmt.Errorf("%w: %w", ErrRejected, err)
	}
	return sub, err
}

// enqueue writes item durably to the outbox.
func (p *Poster) enqueue(item *Item) error {
	st, err := p.stage(item)
	if err != nil {
		return err
	}
	defer st.discard()
	return st.commit()
}

// staged is an outbox item written and fsynced to a temporary file in the
// outbox directory, not yet in the outbox: commit renames it in (no new
// space needed), discard removes it.
type staged struct {
	tmp, path string
	done      bool
}

// stage writes item to a temporary file; it fails (wrapping the cause,
// ENOSPC on a full disk) with nothing left behind.
func (p *Poster) stage(item *Item) (*staged, error) {
	b, err := json.Marshal(item)
	if err != nil {
		return nil, err
	}
	id := item.FP
	if item.Key != "" {
		id = item.Key[:min(16, len(item.Key))]
	}
	item.file = filepath.Join(p.cfg.OutboxDir, fmt.Sprintf("%s-%s.json", item.Queued.Format("20060102T150405.000000000"), id))
	f, err := os.CreateTemp(p.cfg.OutboxDir, "."+filepath.Base(item.file)+".tmp*")
	if err != nil {
		return nil, fmt.Errorf("outbox: %w", err)
	}
	_, werr := f.Write(b)
	if werr == nil {
		werr = f.Chmod(0o600)
	}
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(f.Name())
		return nil, fmt.Errorf("outbox: %w", werr)
	}
	return &staged{tmp: f.Name(), path: item.file}, nil
}

// commit moves the staged item into the outbox, durably.
func (s *staged) commit() error {
	if s.done {
		return nil // committed when its finding was decided (Report)
	}
	if err := os.Rename(s.tmp, s.path); err != nil {
		return fmt.Errorf("outbox: %w", err)
	}
	s.done = true
	if err := fleet.SyncDir(filepath.Dir(s.path)); err != nil {
		return fmt.Errorf("outbox: %w", err)
	}
	return nil
}

// discard removes the staged file unless it was committed.
func (s *staged) discard() {
	if !s.done {
		os.Remove(s.tmp)
	}
}

// A receipt is not final: a reorg, or a node that restarts and loses its
// last blocks, can take an entry off the log again (seen with geth --dev
// restarted under the daemon: findings acknowledged as posted, on the log 0
// times). So a posted entry moves to <OutboxDir>.landed/ with its log index
// and block, and leaves it only once it is settleDepth blocks deep or
// settleAge old and still at its index; one that is no longer there goes
// back into the outbox and is posted again (keyed, so at most once).
const (
	settleDepth = 64
	settleAge   = time.Hour
)

// landedDir is where posted entries wait to settle: beside the outbox, so
// the outbox holds only what is still to post.
func (p *Poster) landedDir() string { return filepath.Clean(p.cfg.OutboxDir) + ".landed" }

// land moves a posted item from the outbox to landedDir; without a
// submission to say where it landed, it is only dequeued.
func (p *Poster) land(item Item, sub *chain.Submission) {
	if sub == nil {
		p.dequeue(item)
		return
	}
	now := p.now()
	item.Index, item.Block, item.Landed = &sub.Index, sub.Block, &now
	b, err := json.Marshal(item)
	if err == nil {
		dir := p.landedDir()
		if err = os.MkdirAll(dir, 0o700); err == nil {
			err = fleet.WriteFileAtomic(filepath.Join(dir, filepath.Base(item.file)), b, 0o600)
		}
	}
	if err != nil {
		// The entry is on the log; only the check for a reorg is lost.
		p.log.Warn("outbox: posted entry not kept for the reorg check", "fp", item.FP, "err", err)
	}
	p.dequeue(item)
}

// Settle checks the landed entries (see land). A cheap pass (what the
// daemon does every few seconds) reads the log's length and head: entries
// at indexes past the length were taken off the log and go back into the
// outbox, and entries deep or old enough are checked once at their index
// and removed. Flush does a full pass first, reading every landed entry
// at its index. It returns how many went back into the outbox.
func (p *Poster) Settle(ctx context.Context) (requeued int, err error) {
	p.flush.Lock()
	defer p.flush.Unlock()
	return p.settleLocked(ctx, false)
}

func (p *Poster) settleLocked(ctx context.Context, full bool) (requeued int, err error) {
	files, _ := filepath.Glob(filepath.Join(p.landedDir(), "*.json"))
	if len(files) == 0 || p.cfg.Log == nil || p.cfg.Identity == nil {
		return 0, nil
	}
	count, err := p.cfg.Log.Count(ctx)
	if err != nil {
		return 0, fmt.Errorf("settle: %w", err)
	}
	head, err := p.cfg.Log.Head(ctx)
	if err != nil {
		return 0, fmt.Errorf("settle: %w", err)
	}
	now := p.now()
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // another process settled it
		}
		var it Item
		if json.Unmarshal(b, &it) != nil || it.Index == nil || it.Landed == nil {
			os.Rename(f, f+".corrupt")
			p.log.Error("outbox: unreadable landed entry moved aside", "file", f+".corrupt")
			continue
		}
		settled := head >= it.Block+settleDepth || now.Sub(*it.Landed) >= settleAge
		there := *it.Index < count
		if there && (full || settled) {
			e, err := p.cfg.Log.At(ctx, *it.Index)
			if err != nil {
				return requeued, fmt.Errorf("settle: %w", err)
			}
			there = e.Text == it.Text && e.Sender == p.cfg.Identity.Address()
		}
		switch {
		case !there:
			if err := p.requeue(it, f, count); err != nil {
				return requeued, err
			}
			requeued++
		case settled:
			os.Remove(f)
		}
	}
	return requeued, nil
}

// requeue puts a landed entry the log no longer holds back into the
// outbox, to be posted again (and scanned for from the log's length now,
// in case the same transaction landed again).
func (p *Poster) requeue(it Item, file string, count uint64) error {
	p.log.Warn("outbox: a posted entry is no longer on the log (a reorg, or a node that lost its last blocks): posting it again",
		"fp", it.FP, "index", *it.Index, "block", it.Block)
	if it.LogCount == nil || *it.LogCount > count {
		it.LogCount = &count
	}
	it.Index, it.Block, it.Landed = nil, 0, nil
	b, err := json.Marshal(it)
	if err != nil {
		return err
	}
	if err := fleet.WriteFileAtomic(filepath.Join(p.cfg.OutboxDir, filepath.Base(file)), b, 0o600); err != nil {
		return fmt.Errorf("outbox: %w", err)
	}
	os.Remove(file)
	return fleet.SyncDir(filepath.Dir(file))
}

func (p *Poster) dequeue(item Item) {
	if err := os.Remove(item.file); err != nil && !errors.Is(err, fs.ErrNotExist) {
		p.log.Error("outbox: remove posted entry", "file", item.file, "err", err)
	}
	fleet.SyncDir(p.cfg.OutboxDir)
}

// Pending lists the queued entries, oldest first.
func (p *Poster) Pending() ([]Item, error) {
	files, err := filepath.Glob(filepath.Join(p.cfg.OutboxDir, "*.json"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var items []Item
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("outbox %s: %w", f, err)
		}
		var it Item
		if err := json.Unmarshal(b, &it); err != nil {
			// A file we cannot parse is kept aside, never silently deleted.
			bad := f + ".corrupt"
			os.Rename(f, bad)
			p.log.Error("outbox: unreadable item moved aside", "file", bad, "err", err)
			continue
		}
		it.file = f
		items = append(items, it)
	}
	return items, nil
}

// Flush posts every queued entry that is not on chain yet, oldest first,
// and removes the ones that are. It stops at the first chain failure and
// returns how many it posted and how many remain.
func (p *Poster) Flush(ctx context.Context) (posted, remaining int, err error) {
	p.flush.Lock()
	defer p.flush.Unlock()
	return p.flushLocked(ctx)
}

// FlushRetry is Flush tried up to tries times while entries remain and
// the log fails, waiting base, 2·base, 4·base… (each plus up to half again
// of jitter, so processes sharing a node do not retry in step) between
// tries. It returns the entries posted over all tries, those left after the
// last and the last error. Retrying is safe: each Flush first scans the log
// for what landed, and keyed posts land once. An entry the log rejects is
// moved aside by Flush, never retried.
func (p *Poster) FlushRetry(ctx context.Context, tries int, base time.Duration) (posted, left int, err error) {
	for try := 1; ; try++ {
		n, l, ferr := p.Flush(ctx)
		posted, left, err = posted+n, l, ferr
		if l == 0 || try >= tries || ctx.Err() != nil {
			return posted, left, err
		}
		wait := base << (try - 1)
		wait += time.Duration(mrand.Int64N(int64(wait)/2 + 1))
		p.log.Warn("outbox: retrying the flush", "left", l, "try", try, "wait", wait, "err", ferr)
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return posted, left, errors.Join(err, ctx.Err())
		}
	}
}

// flushLocked is Flush with p.flush held.
func (p *Poster) flushLocked(ctx context.Context) (posted, remaining int, err error) {
	if _, err := p.settleLocked(ctx, true); err != nil {
		p.log.Warn("outbox: landed entries not checked", "err", err)
	}
	items, err := p.Pending()
	if err != nil || len(items) == 0 {
		return 0, len(items), err
	}
	if p.cfg.Log == nil || p.cfg.Identity == nil {
		return 0, len(items), errors.New("flush outbox: no feedback log configured")
	}
	// One scan covers every item: from the smallest log count recorded. A
	// Once record is not looked for by text (an identical one may be another
	// action): its own key says whether it landed.
	from := uint64(0)
	known, scan := true, false
	for _, it := range items {
		if it.Once {
			continue
		}
		switch {
		case it.LogCount == nil:
			known = false
		case !scan || *it.LogCount < from:
			from = *it.LogCount
		}
		scan = true
	}
	if !known {
		from = 0
	}
	onChain := map[string]bool{}
	if scan {
		if _, err := p.cfg.Log.Scan(ctx, from, func(page []chain.Entry) error {
			for _, e := range page {
				if e.Sender == p.cfg.Identity.Address() {
					onChain[e.Text] = true
				}
			}
			return nil
		}); err != nil {
			return 0, len(items), fmt.Errorf("flush outbox: %w", err)
		}
	}
	for i, it := range items {
		if !it.Once && onChain[it.Text] {
			p.dequeue(it) // posted before a crash removed it from the outbox
			p.tookAwaited(it.file, taken{})
			continue
		}
		sub, err := p.post(ctx, it)
		if err != nil {
			if errors.Is(err, chain.ErrDuplicate) {
				p.dequeue(it) // another process posted it: once is enough
				p.tookAwaited(it.file, taken{})
				continue
			}
			if errors.Is(err, ErrRejected) {
				os.Rename(it.file, it.file+".rejected")
				p.log.Error("outbox: entry rejected by the log, moved aside", "file", it.file, "err", err)
				p.tookAwaited(it.file, taken{err: err})
				continue
			}
			return posted, len(items) - i, fmt.Errorf("flush outbox: %w", err)
		}
		p.land(it, sub)
		p.tookAwaited(it.file, taken{sub: sub})
		posted++
	}
	return posted, 0, nil
}
