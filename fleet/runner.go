package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// RunFunc runs one specialist to completion under ctx. The runner cancels
// ctx on shutdown; a RunFunc must still clean up (the loop does).
type RunFunc func(ctx context.Context, specialist, reason string) (RunResult, error)

// RunnerConfig configures NewRunner.
type RunnerConfig struct {
	Run RunFunc
	// Paused is the kill switch; while on, no run starts (nil: never).
	Paused func() (bool, error)
	// MaxConcurrent caps runs across the fleet (default 2).
	MaxConcurrent int
	// Daily is the fleet-wide per-day budget (nil: none).
	Daily  *DailyBudget
	Logger *slog.Logger
	// OnEvent, if set, hears every start, skip and finish (narration, metrics).
	OnEvent func(RunnerEvent)
}

// RunnerEvent is one thing that happened to a run.
type RunnerEvent struct {
	Kind       string // "started", "skipped", "finished"
	Specialist string
	Reason     string // why it started, or why it was skipped
	Result     RunResult
	Err        error
	At         time.Time
}

// RunDone is what a started run's channel delivers once.
type RunDone struct {
	Result RunResult
	Err    error
}

// Runner owns every run goroutine. A specialist never overlaps itself, the
// fleet never runs more than MaxConcurrent at once, nothing starts while
// paused or after the day's budget is spent, and Shutdown cancels runs and
// waits for their cleanup, bounded by its context.
type Runner struct {
	cfg    RunnerConfig
	log    *slog.Logger
	ctx    context.Context // parent of every run; cancelled by Shutdown
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	closed   bool
	running  map[string]time.Time
	yields   map[string]*atomic.Bool // the running runs' yield flags (Yield)
	skipped  map[string]int
	finished map[string]int
}

// NewRunner returns a runner; it starts nothing by itself.
func NewRunner(cfg RunnerConfig) *Runner {
	if cfg.MaxConcurrent <= 0 {
		cfg.MaxConcurrent = 2
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Runner{cfg: cfg, log: cfg.Logger.With("component", "runner"), ctx: ctx, cancel: cancel,
		running: map[string]time.Time{}, yields: map[string]*atomic.Bool{}, skipped: map[string]int{}, finished: map[string]int{}}
}

// The runner's refusals, for callers that branch on why a run did not start
// (errors.Is). The error Start returns wraps exactly one of them; its text
// adds the detail (when the running one started, the cap, the budget spent).
var (
	// ErrRunning: the specialist is already running; it never overlaps itself.
	ErrRunning = errors.New("already running")
	// ErrAtCap: the fleet runs MaxConcurrent runs already.
	ErrAtCap = errors.New("at the fleet-wide concurrency cap")
	// ErrPaused: the kill switch is on.
	ErrPaused = errors.New("paused")
	// ErrShuttingDown: Shutdown was called.
	ErrShuttingDown = errors.New("shutting down")
)

// refusal is a refusal's sentinel with the words the runner shows for it.
type refusal struct {
	cause error
	why   string
}

func (e *refusal) Error() string { return e.why }
func (e *refusal) Unwrap() error { return e.cause }

// Start begins a run of specialist and returns at once. When it does not
// start, the error wraps one of ErrShuttingDown, ErrPaused, ErrBudget (the
// day's fleet-wide budget),
// ErrRunning or ErrAtCap, checked in that order: a refusal for the
// specialist running or the cap therefore means the fleet was neither
// paused nor over its budget, so a caller may hold that start for a run's
// end. done delivers one RunDone and is then closed.
func (r *Runner) Start(specialist, reason string) (done <-chan RunDone, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	skip := func(cause error, why string) (<-chan RunDone, error) {
		r.skipped[specialist]++
		r.emit(RunnerEvent{Kind: "skipped", Specialist: specialist, Reason: why})
		return nil, &refusal{cause: cause, why: why}
	}
	if r.closed {
		return skip(ErrShuttingDown, "shutting down")
	}
	if r.cfg.Paused != nil {
		if paused, _ := r.cfg.Paused(); paused {
			return skip(ErrPaused, "paused")
		}
	}
	if r.cfg.Daily != nil {
		if err := r.cfg.Daily.Check(); err != nil {
			return skip(ErrBudget, err.Error())
		}
	}
	switch {
	case !r.running[specialist].IsZero():
		return skip(ErrRunning, "already running (started "+r.running[specialist].Format(time.RFC3339)+")")
	case len(r.running) >= r.cfg.MaxConcurrent:
		return skip(ErrAtCap, fmt.Sprintf("fleet-wide limit of %d concurrent runs reached", r.cfg.MaxConcurrent))
	}
	r.running[specialist] = time.Now()
	yield := new(atomic.Bool)
	r.yields[specialist] = yield
	ctx := context.WithValue(r.ctx, yieldKey{}, yield)
	ch := make(chan RunDone, 1)
	r.wg.Add(1)
	r.emit(RunnerEvent{Kind: "started", Specialist: specialist, Reason: reason})
	go func() {
		defer r.wg.Done()
		res, err := r.safeRun(ctx, specialist, reason)
		if r.cfg.Daily != nil {
			r.cfg.Daily.Add(res)
		}
		r.mu.Lock()
		delete(r.running, specialist)
		delete(r.yields, specialist)
		r.finished[specialist]++
		r.emit(RunnerEvent{Kind: "finished", Specialist: specialist, Reason: reason, Result: res, Err: err})
		r.mu.Unlock()
		ch <- RunDone{Result: res, Err: err}
		close(ch)
	}()
	return ch, nil
}

// safeRun keeps one run's panic from taking the daemon down.
func (r *Runner) safeRun(ctx context.Context, specialist, reason string) (res RunResult, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("run of %s panicked: %v", specialist, p)
			r.log.Error("run panicked", "specialist", specialist, "panic", fmt.Sprint(p))
		}
	}()
	return r.cfg.Run(ctx, specialist, reason)
}

// emit calls OnEvent; r.mu is held.
func (r *Runner) emit(e RunnerEvent) {
	e.At = time.Now()
	if r.cfg.OnEvent != nil {
		r.cfg.OnEvent(e)
	}
}

// ErrYielded is why a run that Yield asked to give its slot up ended.
var ErrYielded = errors.New("yielded its slot to a start waiting for one")

type yieldKey struct{}

// Yield asks specialist's run, if one is going, to end at its next session
// boundary (the loop's boundary between tool calls, so a tool call in
// flight, such as a fuzz session, finishes first) so that its slot goes to
// a start waiting for one. The run ends cancelled, saying ErrYielded, and
// cleans up as any run does. It reports whether a run was asked.
func (r *Runner) Yield(specialist string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	y := r.yields[specialist]
	if y == nil {
		return false
	}
	y.Store(true)
	return true
}

// YieldRequested reports whether the run ctx belongs to was asked to give
// its slot up (Runner.Yield). The loop checks it at each boundary; a
// RunFunc that is not the loop may check it between its own sessions.
func YieldRequested(ctx context.Context) bool {
	y, _ := ctx.Value(yieldKey{}).(*atomic.Bool)
	return y != nil && y.Load()
}

// Running returns the specialists running now, sorted.
func (r *Runner) Running() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.running))
	for s := range r.running {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// Counts returns how many runs of specialist finished and were skipped.
func (r *Runner) Counts(specialist string) (finished, skipped int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.finished[specialist], r.skipped[specialist]
}

// ErrShutdownTimeout is returned when runs did not finish within Shutdown's context.
var ErrShutdownTimeout = errors.New("runs still finishing at the shutdown deadline")

// Shutdown stops new runs, cancels the running ones (they stop at their next
// tool boundary, release their names and write their footers) and waits for
// them until ctx is done.
func (r *Runner) Shutdown(ctx context.Context) error {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.cancel()
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w: %v", ErrShutdownTimeout, r.Running())
	}
}

// DailyBudget is the fleet-wide spend of one UTC day, persisted in
// <data_dir>/budget/daily.json so a restart does not reset it. A zero limit
// is unlimited.
type DailyBudget struct {
	path   string
	limits Budget
	now    func() time.Time

	mu   sync.Mutex
	day  dailyRecord
	load error
}

type dailyRecord struct {
	Date   string `json:"date"`
	Writes uint64 `json:"writes"`
	Tokens uint64 `json:"tokens"`
	Wei    uint64 `json:"wei"`
	Runs   int    `json:"runs"`
}

// NewDailyBudget opens the day's ledger under dataDir.
func NewDailyBudget(dataDir string, limits Budget) *DailyBudget {
	d := &DailyBudget{path: filepath.Join(dataDir, "budget", "daily.json"), limits: limits, now: time.Now}
	if b, err := os.ReadFile(d.path); err == nil {
		if err := json.Unmarshal(b, &d.day); err != nil {
			d.load = fmt.Errorf("daily budget %s: %w", d.path, err)
		}
	}
	return d
}

func (d *DailyBudget) today() string { return d.now().UTC().Format("2006-01-02") }

// roll starts a new day when the date changed; d.mu is held.
func (d *DailyBudget) roll() {
	if t := d.today(); d.day.Date != t {
		d.day = dailyRecord{Date: t}
	}
}

// Check returns a *BudgetError when the day's budget is spent.
func (d *DailyBudget) Check() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.sync()
	d.roll()
	for _, c := range []struct {
		r    Resource
		used uint64
	}{{ResWrites, d.day.Writes}, {ResTokens, d.day.Tokens}, {ResWei, d.day.Wei}} {
		if lim := d.limits.Limit(c.r); lim > 0 && c.used >= lim {
			return fmt.Errorf("daily %w", &BudgetError{Resource: c.r, Limit: lim, Used: c.used})
		}
	}
	return nil
}

// Remaining caps a run's budget by what is left of the day.
func (d *DailyBudget) Remaining(run Budget) Budget {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.sync()
	d.roll()
	capInt := func(runLimit int, r Resource, used uint64) int {
		lim := d.limits.Limit(r)
		if lim == 0 {
			return runLimit
		}
		left := int(lim - min(lim, used))
		if runLimit == 0 || left < runLimit {
			return max(left, 0)
		}
		return runLimit
	}
	run.MaxWrites = capInt(run.MaxWrites, ResWrites, d.day.Writes)
	run.MaxTokens = int64(capInt(int(run.MaxTokens), ResTokens, d.day.Tokens))
	if lim := d.limits.MaxWei; lim > 0 {
		left := lim - min(lim, d.day.Wei)
		if run.MaxWei == 0 || left < run.MaxWei {
			run.MaxWei = left
		}
	}
	return run
}

// Add records a finished run's spend and persists the day.
func (d *DailyBudget) Add(res RunResult) {
	d.mu.Lock()
	defer d.mu.Unlock()
	defer d.lockFile()()
	d.sync()
	d.roll()
	d.day.Writes += uint64(max(res.Totals.Writes, 0))
	d.day.Tokens += uint64(max(res.Totals.TokensIn+res.Totals.TokensOut, 0))
	d.day.Wei += res.WeiSpent
	d.day.Runs++
	if b, err := json.Marshal(d.day); err == nil {
		WriteFileAtomic(d.path, b, 0o600)
	}
}
