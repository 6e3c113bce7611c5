package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/qafleet/fleetd/console"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/httpapi"
	"github.com/qafleet/fleetd/pipeline"
	"github.com/qafleet/fleetd/poster"
	"github.com/qafleet/fleetd/runner"
	"github.com/qafleet/fleetd/sandbox"
	"github.com/qafleet/fleetd/trajectory"
	"github.com/qafleet/fleetd/triage"
	"github.com/qafleet/fleetd/triggers"
)

// Config is what the daemon needs of the loaded config, filled by
// cmd/fleetd from it. A snapshot's Config is never modified.
type Config struct {
	HTTPAddr      string        // daemon.http_addr; "" is 127.0.0.1:8787
	MaxConcurrent int           // daemon.max_concurrent; 0 is the runner's default
	Daily         fleet.Budget  // daemon.daily_budget
	PollInterval  time.Duration // daemon.poll_interval
	Confirmations uint64        // daemon.confirmations
	NoSpecialists bool          // daemon.specialists: false
	TriageEvery   time.Duration // triage.every; 0 is 5 minutes
	Fix           bool          // a forge is configured: the fix stage runs
	FixEvery      time.Duration // fixer.every; 0 is 10 minutes
	ChainRPC      string        // chain.rpc (hidden in what the console shows)
	FleetName     string        // chain.fleet_name
	DataDir       string
	ReportsDir    string
	FuzzDir       string
	SandboxDir    string
}

// Work is the config-bound work of one snapshot: cmd/fleetd binds each
// function to the config the snapshot was loaded from.
type Work struct {
	// Run is one specialist run (runner.Run over the snapshot's config).
	Run func(ctx context.Context, env *runner.Env, p fleet.Persona, o runner.Options) (fleet.RunResult, error)
	// Triage is one triage pass posting through fleetPoster: the entries
	// it read and the report it made.
	Triage func(ctx context.Context, fleetPoster *poster.Poster) (read int, rep fleet.Report, err error)
	// FixStage builds the fix pipeline.
	FixStage func(ctx context.Context, env *runner.Env, logger *slog.Logger) (*pipeline.Fix, error)
	// Mark posts an operator's correction (the console's mark control).
	Mark func(ctx context.Context, req console.MarkRequest, user string) (console.MarkResult, error)
}

// Options are how a command runs the daemon.
type Options struct {
	Logger  *slog.Logger
	Narrate io.Writer // human-readable narration (the demo); nil: logs only
	Verbose bool      // narrate every turn, not only findings and run ends
	// Env is the tools environment, built lazily (the node may be down);
	// the daemon owns it from Start on and closes it.
	Env *runner.Env
	// Snapshot is the configuration to start on; Reload makes the next one
	// from the config file (SIGHUP).
	Snapshot *Snapshot
	Reload   func() (*Snapshot, error)
	// Token returns the console's bearer token (made on first use when
	// create).
	Token   func(create bool) (string, error)
	Version string
	// Trusted are the senders triage trusts (the console marks them).
	Trusted []fleet.Address
}

// Daemon is `fleetd run`: the triggers, the runner and the HTTP side over
// one tools environment. Teardown runs in reverse start order.
type Daemon struct {
	// snap is the configuration the daemon runs on (see Snapshot).
	snap    atomic.Pointer[Snapshot]
	opts    Options
	log     *slog.Logger
	env     *runner.Env
	daily   *fleet.DailyBudget
	runner  *fleet.Runner
	sched   *triggers.Scheduler
	metrics *httpapi.Metrics
	http    *httpapi.Server
	console *console.Console // the operator's console (console.go)
	// published is how the running specialists compare with the set last
	// published on the log (publish.go), for the console.
	published atomic.Pointer[console.PublishedSet]
	started   time.Time
	node      *Node  // the chain node up or down, watched (watch.go)
	stopNode  func() // stops the node's watch and waits for it
	// abandoned is set when a run ends without cleaning up (its release or
	// sweep failed: the node stalled or restarted mid-cleanup); whileNodeUp
	// reconciles while the node answers rather than at the next start.
	abandoned atomic.Bool
	// lastReconcile is when whileNodeUp last reconciled an abandoned run
	// (only the node's watch reads and writes it).
	lastReconcile time.Time

	// lastReport is the previous triage pass's report, for narrating what
	// changed; triage passes never overlap (the runner's rule).
	lastReport   fleet.Report
	lastReportOK bool

	narrateMu sync.Mutex
}

// Snapshot is the configuration the daemon runs on: the config it loaded,
// the work bound to it, and the personas loaded with it. A snapshot is
// never modified: reload builds a new one and swaps it whole, so a run, a
// triage or fix pass and a console request each read the snapshot once and
// keep it to their end, whatever reloads meanwhile.
type Snapshot struct {
	Config   Config
	Work     Work
	personas map[string]fleet.Persona // nil outside the daemon (fleetd mcp)
	loaded   []fleet.Persona          // as loaded, for the schedules
}

// NewSnapshot indexes ps by name.
func NewSnapshot(cfg Config, w Work, ps []fleet.Persona) *Snapshot {
	m := make(map[string]fleet.Persona, len(ps))
	for _, p := range ps {
		m[p.Name] = p
	}
	return &Snapshot{Config: cfg, Work: w, personas: m, loaded: ps}
}

// cfg is the config of the current snapshot; a caller that reads it more
// than once in one piece of work keeps the first (runs keep their snapshot).
func (d *Daemon) cfg() *Config { return &d.snap.Load().Config }

// Start builds and starts everything over o.Env; on error it stops what
// started and closes o.Env.
func Start(ctx context.Context, o Options) (d *Daemon, err error) {
	d = &Daemon{opts: o, log: o.Logger.With("component", "daemon"), started: time.Now(), metrics: httpapi.NewMetrics(), env: o.Env}
	defer func() {
		if err != nil {
			d.env.Close()
		}
	}()
	snap := o.Snapshot
	fuzzDir := snap.Config.FuzzDir
	d.metrics.SetFuzzStats(func() []httpapi.FuzzStat { return MetricsFuzzStats(fuzzDir, time.Now()) })
	d.snap.Store(snap)
	// The node is dialled lazily: a daemon whose node is down starts
	// degraded (console, /healthz and /metrics serving, no run starting),
	// retries the node and catches up when it answers (watch.go).
	d.node = d.newNode()
	if up, _ := d.node.Check(ctx); !up { // up: it caught up (recoverCrashed)
		d.log.Warn("starting degraded: the chain node does not answer; it is retried with backoff and crashed runs are reconciled once it does")
	}

	dc := snap.Config
	d.daily = fleet.NewDailyBudget(dc.DataDir, dc.Daily)
	d.runner = fleet.NewRunner(fleet.RunnerConfig{
		Run: d.runOne, Paused: d.env.Control.Paused, MaxConcurrent: dc.MaxConcurrent, Daily: d.daily,
		Logger: o.Logger, OnEvent: d.onEvent,
	})
	tc := triggers.Config{
		Specs: d.specs(snap), StateDir: filepath.Join(dc.DataDir, "triggers"),
		PollInterval: dc.PollInterval, Confirmations: dc.Confirmations, Logger: o.Logger,
	}
	if d.env.Client != nil {
		tc.Events = d.env.Client
		tc.Registry = d.env.Registry.Address()
		if d.env.Log != nil {
			tc.FeedbackLog = d.env.Log.Address()
		}
	}
	tc.Starter = Starter{Runner: d.runner, Node: d.node}
	if d.sched, err = triggers.New(tc); err != nil {
		return nil, err
	}
	d.metrics.SetScheduleStats(d.scheduleStats)
	addr := dc.HTTPAddr
	if addr == "" {
		addr = "127.0.0.1:8787"
	}
	if err := d.startHTTP(addr); err != nil {
		return nil, err
	}
	d.sched.Start(ctx)
	d.stopNode = d.node.Watch(context.WithoutCancel(ctx), false, d.whileNodeUp)
	d.log.Info("fleetd started", "http", d.http.Addr(), "specialists", len(snap.personas), "data_dir", dc.DataDir)
	return d, nil
}

// HTTPAddr is the address the HTTP side listens on.
func (d *Daemon) HTTPAddr() string { return d.http.Addr() }

// Runner is the daemon's runner (tests watch its runs).
func (d *Daemon) Runner() *fleet.Runner { return d.runner }

// Scheduler is the daemon's triggers (tests fire them).
func (d *Daemon) Scheduler() *triggers.Scheduler { return d.sched }

// Env is the daemon's tools environment.
func (d *Daemon) Env() *runner.Env { return d.env }

// Console is the operator's console.
func (d *Daemon) Console() *console.Console { return d.console }

// recoverCrashed makes start-up safe after a crash: it finishes the cleanup
// of every run whose process died (names released, funds swept), closes
// their run records with a harness_error footer, and posts the outbox.
func (d *Daemon) recoverCrashed(ctx context.Context) {
	r := runner.Recover(ctx, d.env, d.cfg().DataDir, "the daemon at start")
	if r.Closed() < len(r.Runs) {
		d.abandoned.Store(true) // whileNodeUp tries again
	}
	if r.Err != nil {
		d.log.Error("recover crashed runs", "err", r.Err)
	}
	d.logRecovery(r, "reconciled a crashed run", "crashed run still holds names; its keys are kept funded")
	if d.env.Poster != nil {
		if posted, left, err := d.env.Poster.Flush(ctx); err != nil {
			d.log.Warn("outbox not flushed", "posted", posted, "left", left, "err", err)
		} else if posted > 0 {
			d.log.Info("outbox flushed", "posted", posted)
		}
	}
	d.publishSpecialists(ctx) // the node answers: the fleet says what it runs
}

// logRecovery logs what a recovery did: each run it closed (closed, the
// message), each it left open (open, with what it holds and why), each
// record it closed with a footer.
func (d *Daemon) logRecovery(r runner.Recovery, closed, open string, args ...any) {
	for _, c := range r.Runs {
		if c.Closed {
			d.log.Warn(closed, "run_id", c.RunID, "names", len(c.Released))
		} else {
			d.log.Error(open, append([]any{"run_id", c.RunID, "held", c.Held, "kept_keys", len(c.Kept), "err", c.Err}, args...)...)
		}
	}
	for _, id := range r.Footers {
		d.log.Warn("closed a crashed run's record", "run_id", id)
	}
}

// TriageName is the runner's name for a triage pass (no persona may take it).
const TriageName = "triage"

// specs are snap's personas' schedules plus triage's: its own interval and
// every new feedback entry, when there is a feedback log to read.
func (d *Daemon) specs(snap *Snapshot) []triggers.Spec {
	var out []triggers.Spec
	if !snap.Config.NoSpecialists {
		out = SpecsOf(snap.loaded)
	}
	return append(out, d.passSpecs(snap.Config)...)
}

// passSpecs are the daemon's own passes' schedules: triage's and the fix
// stage's.
func (d *Daemon) passSpecs(c Config) []triggers.Spec {
	var out []triggers.Spec
	if d.env.Log != nil {
		every := c.TriageEvery
		if every <= 0 {
			every = 5 * time.Minute
		}
		out = append(out, triggers.Spec{Specialist: TriageName, Every: every, Events: []string{"feedback"}})
	}
	return append(out, fixSpecs(c)...) // the fix stage: fix.go
}

// runOne is the runner's RunFunc: one specialist run, its budget capped by
// what is left of the day, or a triage pass. It runs on the snapshot current
// when it starts, to its end.
func (d *Daemon) runOne(ctx context.Context, specialist, reason string) (fleet.RunResult, error) {
	snap := d.snap.Load()
	if specialist == TriageName {
		return d.triagePass(ctx, snap)
	}
	if specialist == FixName {
		return d.fixPass(ctx, snap) // fix.go
	}
	p, ok := snap.personas[specialist]
	if !ok {
		return fleet.RunResult{}, fmt.Errorf("no specialist %q", specialist)
	}
	res, err := snap.Work.Run(ctx, d.env, p, runner.Options{
		Logger: d.opts.Logger, Narrate: d.turnHook(specialist), Budget: d.daily.Remaining,
	})
	if res.RunID != "" && !sandbox.Closed(snap.Config.SandboxDir, res.RunID) {
		d.abandoned.Store(true)
		// The run's "finished" line says only its outcome: say here why
		// its names and keys are left for reconciliation.
		why := res.Summary
		if _, c, ok := strings.Cut(why, "cleanup failed: "); ok {
			why = c
		}
		d.log.Warn("run did not clean up: its sandbox is left for reconciliation", "specialist", specialist, "run_id", res.RunID,
			"outcome", res.Outcome, "why", why)
	}
	return res, err
}

// triagePass is one triage run; its result's Summary is the narration line
// (what was read and what changed), empty when nothing did.
func (d *Daemon) triagePass(ctx context.Context, snap *Snapshot) (fleet.RunResult, error) {
	start := time.Now()
	if !d.lastReportOK {
		// The first pass after a start compares with the saved report, so a
		// restart does not call every cluster new.
		d.lastReport, _ = triage.LoadReport(snap.Config.ReportsDir)
		d.lastReportOK = true
	}
	read, rep, err := snap.Work.Triage(ctx, d.env.Poster)
	out := fleet.RunResult{RunID: "triage", Outcome: trajectory.OutcomeDone}
	out.Totals.DurationMS = time.Since(start).Milliseconds()
	if err != nil {
		out.Outcome, out.Summary = trajectory.OutcomeHarnessError, err.Error()
		return out, err
	}
	changes := triage.Diff(d.lastReport, rep)
	d.publishChanges(changes)
	out.Summary = triageLine(read, changes, rep)
	d.lastReport = rep
	return out, nil
}

// triageLine says what a triage pass did: entries read, clusters, what
// changed and, when something did, the top three. Empty when it read nothing
// and nothing changed: silence is better than a line of zeros.
func triageLine(read int, ch triage.Changes, r fleet.Report) string {
	if read == 0 && ch.Empty() {
		return ""
	}
	var b strings.Builder
	switch read {
	case 0:
		b.WriteString("ranked")
	case 1:
		b.WriteString("read 1 new entry;")
	default:
		fmt.Fprintf(&b, "read %d new entries;", read)
	}
	b.WriteString(" " + Plural(len(r.Clusters), "cluster", "clusters"))
	var parts []string
	for _, p := range []struct {
		n    int
		what string
	}{{len(ch.New), "new"}, {len(ch.Regressed), "regressed"}, {len(ch.Resolved), "resolved"}} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", p.n, p.what))
		}
	}
	if len(parts) == 0 {
		b.WriteString(", no change")
		return b.String()
	}
	fmt.Fprintf(&b, " (%s); top:", strings.Join(parts, ", "))
	for i, row := range r.Clusters {
		if i == 3 {
			break
		}
		fmt.Fprintf(&b, " %d. [%s %s] %s", row.Rank, row.Severity, Dash(string(row.Surface)), Clip(row.Title, 60))
		if i < 2 && i < len(r.Clusters)-1 {
			b.WriteString(";")
		}
	}
	return b.String()
}

// runLine says how a run ended, with its findings and refusals.
func runLine(r fleet.RunResult) string {
	var b strings.Builder
	outcome := string(r.Outcome)
	if r.Outcome == trajectory.OutcomeCancelled && strings.Contains(r.Summary, fleet.ErrYielded.Error()) {
		outcome = "yielded its slot" // to a start waiting for one (triggers' fair share)
	}
	fmt.Fprintf(&b, "%s in %s (%d calls)", outcome, (time.Duration(r.Totals.DurationMS) * time.Millisecond).Round(100*time.Millisecond), r.Totals.ToolCalls)
	var parts []string
	if n := r.Totals.Findings; n > 0 {
		// A repeat run files what is already on the log again: say how
		// many were new and how many the reporter deduplicated.
		fresh, dup := FindingCounts(r)
		parts = append(parts, fmt.Sprintf("%s (%d new, %d deduplicated)", Plural(n, "finding", "findings"), fresh, dup))
	}
	if n := r.Totals.Refusals; n > 0 {
		parts = append(parts, Plural(n, "call refused by the dial", "calls refused by the dial"))
	}
	if len(parts) == 0 {
		b.WriteString(", nothing found")
	} else {
		b.WriteString(": " + strings.Join(parts, ", "))
	}
	for _, d := range r.Degraded {
		fmt.Fprintf(&b, "; %s", d)
	}
	fmt.Fprintf(&b, " (fleetd runs show %s)", r.RunID)
	return b.String()
}

// Plural is n with the noun that fits it: "1 finding", "3 findings"
// (the one plural of the daemon's and cmd/fleetd's messages).
func Plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func (d *Daemon) status() httpapi.Status {
	dial, _ := d.env.Control.Dial()
	paused, _ := d.env.Control.Paused()
	st := httpapi.Status{Dial: dial.String(), Paused: paused, Running: d.runner.Running(), Specialists: map[string]any{}, StartedAt: d.started, Node: d.node.Status()}
	for name := range d.snap.Load().personas {
		finished, skipped := d.runner.Counts(name)
		st.Specialists[name] = map[string]int{"finished": finished, "skipped": skipped}
	}
	for name, ts := range d.sched.Stats() {
		if ts.Starved {
			if st.Starved == nil {
				st.Starved = map[string]string{}
			}
			st.Starved[name] = ts.StarvedReason
		}
	}
	if d.env.Poster != nil {
		items, _ := d.env.Poster.Pending()
		st.Outbox = len(items)
		f := d.env.Poster.Funds()
		st.Posting = &httpapi.Posting{Paused: f.Dry, Since: f.Since, Error: f.Error}
		if f.Dry {
			st.Posting.Sponsor = f.Payer.String()
		}
	}
	return st
}

// ShareLine says how the run slots were shared: each specialist's finished
// runs, the longest a start waited for a slot and who waited it, and any
// specialist that starved or never ran, with why.
func (d *Daemon) ShareLine() string {
	stats := d.sched.Stats()
	names := slices.Sorted(maps.Keys(d.snap.Load().personas))
	var runs, notes []string
	var longest time.Duration
	var who string
	for _, name := range names {
		finished, _ := d.runner.Counts(name)
		runs = append(runs, fmt.Sprintf("%s %d", name, finished))
		st := stats[name]
		if st.LongestWait > longest {
			longest, who = st.LongestWait, name
		}
		switch {
		case st.Starved:
			notes = append(notes, name+" starved: "+st.StarvedReason)
		case finished == 0 && st.LastSkip != "":
			notes = append(notes, name+" never ran: "+st.LastSkip)
		case finished == 0:
			notes = append(notes, name+" never ran")
		}
	}
	limit := d.cfg().MaxConcurrent
	if limit <= 0 {
		limit = 2 // the runner's default
	}
	line := fmt.Sprintf("runs per specialist (cap %d at once): %s", limit, strings.Join(runs, ", "))
	if who != "" {
		line += fmt.Sprintf("; longest wait for a slot: %s (%s)", longest.Round(100*time.Millisecond), who)
	} else {
		line += "; no start waited for a slot"
	}
	for _, n := range notes {
		line += "\n  " + n
	}
	return line
}

// scheduleStats is the triggers' fair-share figures for /metrics.
func (d *Daemon) scheduleStats() []httpapi.ScheduleStat {
	now := time.Now()
	var out []httpapi.ScheduleStat
	for name, st := range d.sched.Stats() {
		s := httpapi.ScheduleStat{Specialist: name, Starved: st.Starved, LongestWait: st.LongestWait}
		if !st.PendingSince.IsZero() {
			s.Waiting = now.Sub(st.PendingSince)
		}
		out = append(out, s)
	}
	return out
}

// Reload re-reads the config file and the personas (SIGHUP) into a new
// snapshot and swaps it in whole; runs already going keep theirs. An
// invalid new set is logged with its error and the old one kept.
func (d *Daemon) Reload() {
	next, err := d.opts.Reload()
	if err != nil {
		d.log.Error("reload: keeping the running configuration", "err", err)
		return
	}
	if err := d.sched.Replace(d.specs(next)); err != nil {
		d.log.Error("reload: keeping the running schedules", "err", err)
		return
	}
	d.snap.Store(next)
	if d.node.Up() {
		d.publishSpecialists(context.Background())
	}
	d.log.Info("reloaded", "specialists", len(next.personas), "note", "chain:, target: and daemon: changes take effect at restart")
}

// Shutdown stops everything in reverse start order within timeout: triggers
// stop firing, runs are cancelled and finish their cleanup and footers, the
// runs whose cleanup failed are reconciled (finishAbandoned), the outbox is
// flushed, the HTTP side and the chain connection close. What it could not
// finish is logged, not returned: it is the next start's (or fleetd
// reconcile's) to finish, not a failed stop.
func (d *Daemon) Shutdown(timeout time.Duration) error {
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var errs []error
	if err := d.sched.Stop(ctx); err != nil {
		errs = append(errs, fmt.Errorf("stop triggers: %w", err))
	}
	drained := true
	if err := d.runner.Shutdown(ctx); err != nil {
		errs = append(errs, err)
		drained = false
	}
	if d.stopNode != nil {
		d.stopNode()
	}
	if drained {
		// No run of this daemon is live and the node's watch is stopped:
		// finish what a cancelled run's cleanup could not, as the watch
		// would have within 30 s had the daemon gone on.
		d.finishAbandoned(ctx)
	}
	if d.env.Poster != nil {
		fctx, fcancel := context.WithTimeout(ctx, 10*time.Second)
		if _, left, err := d.env.Poster.Flush(fctx); err != nil && left > 0 {
			d.log.Warn("outbox left for the next start", "left", left, "err", err)
		}
		fcancel()
	}
	if err := d.http.Shutdown(ctx); err != nil {
		errs = append(errs, fmt.Errorf("http: %w", err))
	}
	d.env.Close()
	return errors.Join(errs...)
}

// onEvent feeds metrics and narration.
func (d *Daemon) onEvent(e fleet.RunnerEvent) {
	d.metrics.Observe(e)
	d.publishRunner(e)
	switch e.Kind {
	case "started":
		d.log.Info("run started", "specialist", e.Specialist, "reason", e.Reason)
		if e.Specialist != TriageName && e.Specialist != FixName {
			d.say(e.Specialist, "started (%s)", e.Reason)
		}
	case "skipped":
		d.log.Debug("run skipped", "specialist", e.Specialist, "reason", e.Reason)
	case "finished":
		if d.sched != nil {
			d.sched.RunEnded(e.Specialist) // a held event start may go now
		}
		r := e.Result
		attrs := []any{"specialist", e.Specialist, "run_id", r.RunID, "outcome", r.Outcome, "turns", r.Totals.Turns, "findings", r.Totals.Findings}
		if e.Err != nil {
			d.log.Error("run failed", append(attrs, "err", e.Err)...)
			d.say(e.Specialist, "failed: %v", e.Err)
			return
		}
		d.log.Info("run finished", attrs...)
		switch {
		case e.Specialist == FixName:
			// fixPass narrates what it takes and opens itself; an idle pass is silent.
		case e.Specialist != TriageName:
			d.say(e.Specialist, "%s", runLine(r))
		case r.Summary != "":
			d.say(e.Specialist, "%s", r.Summary)
		}
	}
}

// narrateTurn returns the loop's narration hook for the human output.
func (d *Daemon) narrateTurn(specialist string) func(fleet.TurnEvent) {
	if d.opts.Narrate == nil {
		return nil
	}
	return func(e fleet.TurnEvent) {
		switch {
		case e.Tool == "qa_report" && e.Verdict == fleet.VerdictOK:
			switch status, _ := e.Result["status"].(string); status {
			case "posted", "queued":
				d.say(specialist, "FINDING %s", FindingLine(e.Args))
			default:
				if d.opts.Verbose {
					d.say(specialist, "finding %s (%s)", FindingLine(e.Args), status)
				}
			}
		case d.opts.Verbose || e.Verdict == fleet.VerdictRefused:
			d.say(specialist, "%s", e.SummaryLine())
		}
	}
}

// say writes one narration line: time, specialist, text.
func (d *Daemon) say(specialist, format string, args ...any) {
	if d.opts.Narrate == nil {
		return
	}
	d.narrateMu.Lock()
	defer d.narrateMu.Unlock()
	fmt.Fprintf(d.opts.Narrate, "%s  %-9s %s\n", time.Now().Format("15:04:05"), specialist, Sanitize(fmt.Sprintf(format, args...)))
}

// stopReconcile bounds how long Shutdown spends on runs whose cleanup
// failed (finishAbandoned); stopMargin is what it leaves of the shutdown
// timeout for the outbox and the HTTP side.
var (
	stopReconcile = 10 * time.Second
	stopMargin    = 5 * time.Second
)

// finishAbandoned is Shutdown's reconciliation, after the runner drained:
// a run cancelled by the stop whose cleanup failed once left its sandbox
// without the closed marker, its names held and its keys funded. While the
// daemon runs, the node's watch finishes such runs (whileNodeUp); at the
// stop nothing would until the next start. So runner.Finish reconciles
// them here, for at most stopReconcile (less when the shutdown timeout
// leaves less than stopMargin after it), and each run it finished and each
// it leaves is logged, with what is still held.
func (d *Daemon) finishAbandoned(ctx context.Context) {
	if !d.abandoned.Load() {
		return
	}
	within := stopReconcile
	if dl, ok := ctx.Deadline(); ok {
		within = min(within, time.Until(dl)-stopMargin)
	}
	dataDir := d.cfg().DataDir
	if within <= 0 {
		d.log.Error("stopping with runs not cleaned up: no time left to reconcile them", "data_dir", dataDir,
			"fix", "fleetd reconcile (or the next start) releases their names and sweeps their keys")
		return
	}
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	r := runner.Finish(ctx, d.env, dataDir, "the daemon at its stop")
	d.logRecovery(r, "finished a run's cleanup at the stop", "stopping with a run not cleaned up: its names stay held and its keys funded",
		"fix", "fleetd reconcile (or the next start) releases them and sweeps the keys")
	if r.Closed() == len(r.Runs) {
		d.abandoned.Store(false)
	}
	if r.Err != nil {
		d.log.Error("reconcile at the stop", "err", r.Err)
	}
}
