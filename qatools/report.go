package qatools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
)

// ReporterConfig configures NewReporter.
type ReporterConfig struct {
	Log       *chain.FeedbackLog // nil: every finding waits in the outbox
	Identity  *chain.Key         // the fleet identity recorded as sender
	Sponsor   *chain.Key         // relays and pays; nil: Identity pays
	OutboxDir string             // <data_dir>/outbox
	// PerSource caps findings a source may post per Window (default 30 per 10 min).
	PerSource int
	Window    time.Duration
	// DedupeWindow suppresses a fingerprint already posted within it (default 1 h).
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

// Reporter posts findings to the feedback log and never loses one: each
// finding is first written to the outbox (fsynced), then posted, then
// removed from the outbox. If the chain is unreachable it stays queued and
// Flush posts it later, exactly once: before posting a queued finding,
// Flush looks for its text among the entries appended since it was queued.
type Reporter struct {
	cfg ReporterConfig
	log *slog.Logger
	now func() time.Time

	mu    sync.Mutex   // guards mem and serializes state updates in this process
	mem   *reportState // the state when there is no StateFile
	flush sync.Mutex   // one Flush or post at a time touches the outbox
}

// NewReporter creates the outbox directory and returns a reporter.
func NewReporter(cfg ReporterConfig) (*Reporter, error) {
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
		return nil, errors.New("reporter: no outbox directory")
	}
	if err := os.MkdirAll(cfg.OutboxDir, 0o700); err != nil {
		return nil, fmt.Errorf("reporter: %w", err)
	}
	if cfg.StateFile != "" {
		if err := os.MkdirAll(filepath.Dir(cfg.StateFile), 0o700); err != nil {
			return nil, fmt.Errorf("reporter: %w", err)
		}
	}
	return &Reporter{cfg: cfg, log: cfg.Logger.With("component", "reporter"), now: time.Now}, nil
}

// ReportResult is what happened to one finding.
type ReportResult struct {
	Status  string `json:"status"` // posted, queued, deduped, rate_limited
	EntryID uint64 `json:"entry_id,omitempty"`
	Tx      string `json:"tx,omitempty"`
	FP      string `json:"fp"`
	Text    string `json:"-"`
}

// outboxItem is one queued finding on disk.
type outboxItem struct {
	Text     string    `json:"text"`
	FP       string    `json:"fp"`
	Source   string    `json:"source"`
	Queued   time.Time `json:"queued"`
	LogCount *uint64   `json:"log_count,omitempty"` // entries in the log when queued, if known
	file     string
}

// ErrRejected means the log refused the text itself; retrying cannot help.
var ErrRejected = errors.New("finding rejected by the feedback log")

// Report formats f (stamping its fingerprint), applies the rate limit and
// dedupe, queues it durably and tries to post it. A nil error means the
// finding is acknowledged: posted, or safely queued, or a duplicate.
func (r *Reporter) Report(ctx context.Context, f fleet.Finding) (ReportResult, error) {
	f.Fingerprint = fleet.Fingerprint(f)
	text, err := fleet.Format(f)
	if err != nil {
		return ReportResult{}, fmt.Errorf("%w: %w", ErrRejected, err)
	}
	res := ReportResult{FP: f.Fingerprint, Text: text}
	now := r.now().Round(0) // wall clock only: it is compared after a JSON round trip
	// Decide under the state lock: fold in what the log gained since the
	// last decision, then dedupe and rate-limit, and record the decision
	// before posting so a process deciding next sees it.
	if err := r.withState(ctx, func(st *reportState) (bool, error) {
		folded := r.foldLog(ctx, st, now)
		r.prune(st, now)
		if last, ok := st.Seen[f.Fingerprint]; ok && now.Sub(last) < r.cfg.DedupeWindow {
			res.Status = "deduped"
			return folded, nil
		}
		if len(st.Posted[f.Source]) >= r.cfg.PerSource {
			res.Status = "rate_limited"
			return folded, nil
		}
		st.Posted[f.Source] = append(st.Posted[f.Source], now)
		st.Seen[f.Fingerprint] = now
		return true, nil
	}); err != nil {
		return res, err // not acknowledged: the caller must know
	}
	if res.Status != "" {
		return res, nil
	}

	item := outboxItem{Text: text, FP: f.Fingerprint, Source: f.Source, Queued: now.UTC()}
	if r.cfg.Log != nil {
		cctx, cancel := context.WithTimeout(ctx, r.cfg.PostTimeout)
		if n, err := r.cfg.Log.Count(cctx); err == nil {
			item.LogCount = &n
		}
		cancel()
	}
	r.flush.Lock()
	defer r.flush.Unlock()
	if err := r.enqueue(&item); err != nil {
		r.forget(ctx, f, now)
		return res, err // not acknowledged: the caller must know
	}
	sub, err := r.post(ctx, item)
	switch {
	case err == nil:
		res.Status, res.EntryID, res.Tx = "posted", sub.Index, sub.Tx
		r.dequeue(item)
	case errors.Is(err, chain.ErrDuplicate):
		// Another process posted this fingerprint first (the log's
		// compare-and-swap decided): acknowledged, as a duplicate.
		res.Status = "deduped"
		r.dequeue(item)
	case errors.Is(err, ErrRejected):
		r.dequeue(item)
		r.forget(ctx, f, now)
		return res, err
	default:
		r.log.Warn("finding queued in the outbox: posting failed, it will be retried", "fp", f.Fingerprint, "err", err)
		res.Status = "queued"
	}
	return res, nil
}

// forget undoes the bookkeeping of a finding that was not accepted (decided
// at now).
func (r *Reporter) forget(ctx context.Context, f fleet.Finding, now time.Time) {
	err := r.withState(context.WithoutCancel(ctx), func(st *reportState) (bool, error) {
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
		r.log.Error("reporter: could not undo the bookkeeping of a finding that was not accepted", "fp", f.Fingerprint, "err", err)
	}
}

func (r *Reporter) post(ctx context.Context, item outboxItem) (*chain.Submission, error) {
	if r.cfg.Log == nil || r.cfg.Identity == nil {
		return nil, errors.New("no feedback log configured")
	}
	ctx, cancel := context.WithTimeout(ctx, r.cfg.PostTimeout)
	defer cancel()
	var sub *chain.Submission
	var err error
	sponsor := r.cfg.Sponsor
	if sponsor == nil {
		sponsor = r.cfg.Identity // pays its own gas, still keyed
	}
	// Keyed by fingerprint: of all processes posting this finding within
	// the window, the log lets exactly one through.
	sub, err = r.cfg.Log.SubmitKeyed(ctx, r.cfg.Identity, sponsor, item.Text, chain.FingerprintKey(item.FP), r.cfg.DedupeWindow)
	if err != nil && (chain.IsRevert(err, "EmptyText") || chain.IsRevert(err, "TextTooLong") ||
		errors.Is(err, chain.ErrEmptyText) || errors.Is(err, chain.ErrTextTooLong) || errors.Is(err, chain.ErrNotUTF8)) {
		return nil, fmt.Errorf("%w: %w", ErrRejected, err)
	}
	return sub, err
}

// enqueue writes item durably to the outbox.
func (r *Reporter) enqueue(item *outboxItem) error {
	b, err := json.Marshal(item)
	if err != nil {
		return err
	}
	item.file = filepath.Join(r.cfg.OutboxDir, fmt.Sprintf("%s-%s.json", item.Queued.Format("20060102T150405.000000000"), item.FP))
	if err := fleet.WriteFileAtomic(item.file, b, 0o600); err != nil {
		return fmt.Errorf("outbox: %w", err)
	}
	return nil
}

func (r *Reporter) dequeue(item outboxItem) {
	if err := os.Remove(item.file); err != nil && !errors.Is(err, fs.ErrNotExist) {
		r.log.Error("outbox: remove posted finding", "file", item.file, "err", err)
	}
	fleet.SyncDir(r.cfg.OutboxDir)
}

// Pending lists the queued findings, oldest first.
func (r *Reporter) Pending() ([]outboxItem, error) {
	files, err := filepath.Glob(filepath.Join(r.cfg.OutboxDir, "*.json"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var items []outboxItem
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("outbox %s: %w", f, err)
		}
		var it outboxItem
		if err := json.Unmarshal(b, &it); err != nil {
			// A file we cannot parse is kept aside, never silently deleted.
			bad := f + ".corrupt"
			os.Rename(f, bad)
			r.log.Error("outbox: unreadable item moved aside", "file", bad, "err", err)
			continue
		}
		it.file = f
		items = append(items, it)
	}
	return items, nil
}

// Flush posts every queued finding that is not on chain yet, oldest first,
// and removes the ones that are. It stops at the first chain failure and
// returns how many it posted and how many remain.
func (r *Reporter) Flush(ctx context.Context) (posted, remaining int, err error) {
	r.flush.Lock()
	defer r.flush.Unlock()
	items, err := r.Pending()
	if err != nil || len(items) == 0 {
		return 0, len(items), err
	}
	if r.cfg.Log == nil {
		return 0, len(items), errors.New("flush outbox: no feedback log configured")
	}
	// One scan covers every item: from the smallest log count recorded.
	from := uint64(0)
	known := true
	for i, it := range items {
		if it.LogCount == nil {
			known = false
		} else if i == 0 || *it.LogCount < from {
			from = *it.LogCount
		}
	}
	if !known {
		from = 0
	}
	onChain := map[string]bool{}
	if _, err := r.cfg.Log.Scan(ctx, from, func(page []chain.Entry) error {
		for _, e := range page {
			if e.Sender == r.cfg.Identity.Address() {
				onChain[e.Text] = true
			}
		}
		return nil
	}); err != nil {
		return 0, len(items), fmt.Errorf("flush outbox: %w", err)
	}
	for i, it := range items {
		if onChain[it.Text] {
			r.dequeue(it) // posted before a crash removed it from the outbox
			continue
		}
		if _, err := r.post(ctx, it); err != nil {
			if errors.Is(err, chain.ErrDuplicate) {
				r.dequeue(it) // another process posted this fingerprint: once is enough
				continue
			}
			if errors.Is(err, ErrRejected) {
				os.Rename(it.file, it.file+".rejected")
				r.log.Error("outbox: finding rejected by the log, moved aside", "file", it.file, "err", err)
				continue
			}
			return posted, len(items) - i, fmt.Errorf("flush outbox: %w", err)
		}
		r.dequeue(it)
		posted++
	}
	return posted, 0, nil
}

// reportArgs are qa_report's arguments; source and run come from the run.
type reportArgs struct {
	Severity string     `json:"severity" enum:"critical,high,medium,low,info" desc:"how bad it is"`
	Surface  string     `json:"surface" desc:"what part of the platform: chain, registry, compiler, face, call, docs, fleet, or another lowercase token" maxlen:"32"`
	Summary  string     `json:"summary" desc:"what is wrong and what was expected, without secrets" maxlen:"1800"`
	Repro    *reproArgs `json:"repro,omitempty" desc:"a machine-runnable reproduction: a qa_* tool call"`
	// State and Flaky: see fuzzState in report_crash.go.
	State string `json:"state,omitempty" desc:"a crash state naming the bug independently of the input (qa_compile's crash_state); findings with one state are one fingerprint" maxlen:"512"`
	Flaky bool   `json:"flaky,omitempty" desc:"the repro did not reproduce when replayed: posted at most low, with flaky=true in the header"`
}

type reproArgs struct {
	Tool string          `json:"tool" desc:"a qa_* tool name"`
	Args json.RawMessage `json:"args" desc:"that tool's arguments"`
}

func (t *tools) report(ctx context.Context, a reportArgs) (fleet.Result, error) {
	if t.env.Reporter == nil {
		return fleet.Fail("qa_report: no reporter configured"), nil
	}
	sev, err := fleet.ParseSeverity(a.Severity)
	if err != nil {
		return fleet.Fail("%v", err), nil
	}
	surface, err := fleet.ParseSurface(a.Surface)
	if err != nil {
		return fleet.Fail("%v", err), nil
	}
	f := fleet.Finding{Source: t.run.Source, Severity: sev, Surface: surface, Run: t.run.ID, Summary: strings.TrimSpace(a.Summary)}
	if a.Repro != nil {
		if !strings.HasPrefix(a.Repro.Tool, "qa_") {
			return fleet.Fail("repro.tool %q is not a qa_* tool", a.Repro.Tool), nil
		}
		f.Repro = &fleet.Repro{Tool: a.Repro.Tool, Args: a.Repro.Args}
	}
	f = fuzzState(f, a)
	res, err := t.env.Reporter.Report(ctx, f)
	if err != nil {
		if errors.Is(err, ErrRejected) {
			return fleet.Fail("qa_report: %v", err), nil
		}
		return nil, fmt.Errorf("qa_report: %w", err) // the outbox failed: nothing can be acknowledged
	}
	out := map[string]any{"status": res.Status, "fp": res.FP}
	switch res.Status {
	case "posted":
		out["entry_id"], out["tx"] = res.EntryID, res.Tx
	case "queued":
		out["queued"] = true
	case "deduped":
		out["deduped"] = true
	case "rate_limited":
		r := fleet.Fail("qa_report: rate limited: source %s posted %d findings in the last %s", t.run.Source, t.env.Reporter.cfg.PerSource, t.env.Reporter.cfg.Window)
		r["status"] = res.Status
		return r, nil
	}
	return fleet.OK(out), nil
}
