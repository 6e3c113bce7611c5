package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/console"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/httpapi"
	"github.com/qafleet/fleetd/trajectory"
	"github.com/qafleet/fleetd/triage"
	"github.com/qafleet/fleetd/triggers"
)

// The daemon's console (console) reads the report files and
// run records itself; this file gives it the rest (log entries with their
// transactions, the fleet's schedules, budget, outbox and chain health) and
// the controls, each through the code path the CLI uses, and feeds its
// live feed from the runner, the loop and triage.

// startHTTP starts the HTTP side with the console on addr. The console's
// controls need the data dir's bearer token (made on first use); when the
// token cannot be had the console is read-only on a loopback address, and
// the daemon refuses to start on any other.
func (d *Daemon) startHTTP(addr string) error {
	tok, err := consoleToken(addr, d.opts.Token, d.log)
	if err != nil {
		return err
	}
	snap := d.snap.Load()
	src := &consoleSource{d: d, trusted: d.opts.Trusted}
	c, err := console.New(console.Config{
		ReportsDir: snap.Config.ReportsDir, RunsDir: filepath.Join(snap.Config.DataDir, trajectory.RunsDir),
		Control: d.env.Control, Source: src, Controls: src, Token: tok, Loopback: console.LoopbackAddr(addr),
		Logger: d.opts.Logger, Version: d.opts.Version,
	})
	if err != nil {
		return err
	}
	d.console = c
	if d.http, err = httpapi.StartWith(httpapi.Options{Addr: addr, Metrics: d.metrics, Status: d.status, Console: c, OnShutdown: c.Close, Logger: d.opts.Logger}); err != nil {
		return fmt.Errorf("daemon.http_addr %s: %w", addr, err)
	}
	return nil
}

// consoleToken returns the bearer token for the console's controls. Without
// one the console is read-only, which is acceptable on loopback only:
// anywhere else the daemon would expose the fleet's state with no way to
// tell operators from strangers, so it refuses to start.
func consoleToken(addr string, token func(create bool) (string, error), log *slog.Logger) (string, error) {
	tok, err := token(true)
	if err == nil {
		return tok, nil
	}
	if console.LoopbackAddr(addr) {
		log.Warn("console controls disabled: no usable HTTP token", "err", err)
		return "", nil
	}
	return "", fmt.Errorf("daemon.http_addr %s is not a loopback address and the console has no usable bearer token (%w): fix the token (fleetd http-token) or bind 127.0.0.1", addr, err)
}

// ConsoleURL is the console's address for people.
func (d *Daemon) ConsoleURL() string { return "http://" + d.http.Addr() + "/" }

// consoleSource is the console's view of the daemon.
type consoleSource struct {
	d       *Daemon
	trusted []fleet.Address
	txs     chain.TxCache // what the cluster pages' transaction lookups have read

	headMu  sync.Mutex
	head    console.ChainHealth
	headErr error
}

var (
	_ console.Source   = (*consoleSource)(nil)
	_ console.Controls = (*consoleSource)(nil)
)

// Entries reads entries from the chain (the log is the source of truth) and
// finds their transactions in the FeedbackSubmitted events.
func (s *consoleSource) Entries(ctx context.Context, indexes []uint64) ([]console.Entry, error) {
	env := s.d.env
	if env.Log == nil || env.Client == nil {
		return nil, fmt.Errorf("%w: no feedback log configured (chain.feedback_log)", console.ErrUnavailable)
	}
	n, err := env.Log.Count(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: the log cannot be read: %s", console.ErrUnavailable, s.hideRPC(err.Error()))
	}
	var want []uint64
	for _, i := range indexes {
		if i < n && !slices.Contains(want, i) {
			want = append(want, i)
		}
	}
	refs, _ := env.Log.EntryTxs(ctx, want, chain.TxSearch{Chunk: consoleTxChunk, Budget: consoleTxBudget, Cache: &s.txs})
	out := make([]console.Entry, 0, len(want))
	for _, i := range want {
		e, err := env.Log.At(ctx, i)
		if err != nil {
			return out, fmt.Errorf("%w: entry %d: %s", console.ErrUnavailable, i, s.hideRPC(err.Error()))
		}
		ce := console.Entry{Index: e.Index, Sender: e.Sender.String(), Trusted: slices.Contains(s.trusted, e.Sender), Time: e.Time, Text: e.Text}
		if r, ok := refs[i]; ok {
			ce.Tx, ce.Block = r.Tx, r.Block
		}
		out = append(out, ce)
	}
	return out, nil
}

// The console's transaction lookups (chain's EntryTxs over the log's
// FeedbackSubmitted events) read 10,000 blocks per eth_getLogs, newest
// first, for at most 3 s per request, and keep what they read in the
// source's cache: triage's store does not record transactions. On a long
// chain the first views of old entries show "not found" until the reads
// have reached them; a reorg after a block was read is not noticed.
const (
	consoleTxChunk  = 10_000
	consoleTxBudget = 3 * time.Second
)

// triggerStats fills sp's fields that come from the triggers.
func triggerStats(sp console.Specialist, st triggers.Stats) console.Specialist {
	sp.NextRun, sp.Fired, sp.Started, sp.Skipped, sp.LastSkip = st.NextRun, st.Fired, st.Started, st.Skipped, st.LastSkip
	sp.LastFired, sp.LastReason, sp.Held, sp.Retried = st.LastFired, st.LastReason, st.Pending, st.Retried
	sp.PendingReason, sp.PendingSince, sp.LongestWaitSeconds, sp.Yielded = st.PendingReason, st.PendingSince, st.LongestWait.Seconds(), st.Yielded
	sp.Starved, sp.StarvedReason = st.Starved, st.StarvedReason
	return sp
}

// Fleet reports the specialists and their triggers, today's budget, the
// outbox and the node's health.
func (s *consoleSource) Fleet(ctx context.Context) (console.Fleet, error) {
	d := s.d
	f := console.Fleet{Running: d.runner.Running(), StartedAt: d.started, Triage: d.env.Log != nil}
	stats := d.sched.Stats()
	snap := d.snap.Load() // one snapshot for the whole page
	personas := snap.personas
	names := make([]string, 0, len(personas))
	for n := range personas {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		p := personas[n]
		st := stats[n]
		f.Specialists = append(f.Specialists, triggerStats(console.Specialist{
			Name: n, Planner: p.Planner, Tools: p.Tools, Trigger: p.Trigger.String(), Running: slices.Contains(f.Running, n),
		}, st))
	}
	for _, sp := range d.passSpecs(snap.Config) { // the daemon's own passes
		st := stats[sp.Specialist]
		f.Passes = append(f.Passes, triggerStats(console.Specialist{
			Name: sp.Specialist, Trigger: fleet.Trigger{Cron: sp.Cron, Every: sp.Every, Continuous: sp.Continuous, Events: sp.Events}.String(),
			Running: slices.Contains(f.Running, sp.Specialist),
		}, st))
	}
	u := d.daily.Usage()
	f.Budget = console.DailyBudget{Date: u.Date, Runs: u.Runs, Writes: u.Writes, MaxWrites: uint64(max(u.Limits.MaxWrites, 0)),
		Tokens: u.Tokens, MaxTokens: uint64(max(u.Limits.MaxTokens, 0)), Wei: u.Wei, MaxWei: u.Limits.MaxWei}
	if d.env.Poster != nil {
		items, _ := d.env.Poster.Pending()
		f.Outbox = len(items)
	}
	f.Chain = s.chainHealth(ctx)
	f.Fuzz = ConsoleFuzzStats(snap.Config.FuzzDir)
	f.Published = d.published.Load()
	return f, nil
}

// chainHealth asks the node for its head, at most every two seconds.
func (s *consoleSource) chainHealth(ctx context.Context) console.ChainHealth {
	s.headMu.Lock()
	defer s.headMu.Unlock()
	if time.Since(s.head.CheckedAt) < 2*time.Second {
		return s.head
	}
	cl := s.d.env.Client
	h := console.ChainHealth{RPC: PublicURL(s.d.cfg().ChainRPC), CheckedAt: time.Now()}
	if cl == nil {
		h.Error = "no chain configured"
		s.head = h
		return h
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	start := time.Now()
	n, _, t, err := cl.Head(ctx)
	h.LatencyMS = time.Since(start).Milliseconds()
	if err != nil {
		h.Error = s.hideRPC(err.Error())
	} else {
		h.OK, h.Head, h.HeadTime = true, n, t
	}
	s.head = h
	return h
}

// hideRPC replaces the configured RPC URL in an error message with its
// public form.
func (s *consoleSource) hideRPC(msg string) string {
	if rpc := s.d.cfg().ChainRPC; rpc != "" {
		msg = strings.ReplaceAll(msg, rpc, PublicURL(rpc))
	}
	return msg
}

// RunNow starts a specialist through the triggers' manual fire, which asks
// the runner (the runner's rules apply: never overlapping, the cap, the
// kill switch, the daily budget). It does not queue: it names the starts
// waiting for a slot that it went ahead of (triggers' Run now).
func (s *consoleSource) RunNow(ctx context.Context, specialist, user string) ([]string, error) {
	d := s.d
	if _, ok := (d.snap.Load().personas)[specialist]; !ok || specialist == TriageName {
		return nil, fmt.Errorf("%w: no specialist %q", console.ErrBadRequest, specialist)
	}
	started, why, ahead := d.sched.FireAhead(ctx, specialist, "console: "+user)
	if !started {
		return nil, fmt.Errorf("%w: %s not started: %s", console.ErrNotStarted, specialist, why)
	}
	return ahead, d.env.Control.Record("run", "run "+specialist+" now", user)
}

// TriageNow starts a triage pass through the runner, as the daemon's own
// schedule does, so it never overlaps one.
func (s *consoleSource) TriageNow(_ context.Context, user string) error {
	d := s.d
	if d.env.Log == nil {
		return fmt.Errorf("%w: no feedback log configured to triage", console.ErrUnavailable)
	}
	if _, err := d.runner.Start(TriageName, "console: "+user); err != nil {
		return fmt.Errorf("%w: triage not started: %v", console.ErrNotStarted, err)
	}
	return d.env.Control.Record("triage", "triage now", user)
}

// Mark posts a correction through the `fleetd findings mark` path.
func (s *consoleSource) Mark(ctx context.Context, req console.MarkRequest, user string) (console.MarkResult, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return s.d.snap.Load().Work.Mark(ctx, req, user)
}

// publishRunner feeds the live feed from the runner's events.
func (d *Daemon) publishRunner(e fleet.RunnerEvent) {
	if d.console == nil {
		return
	}
	ev := console.Event{Specialist: e.Specialist, Reason: e.Reason, Time: e.At.UTC()}
	switch e.Kind {
	case "started":
		ev.Kind = console.KindRunStarted
	case "skipped":
		ev.Kind = console.KindRunSkipped
	case "finished":
		r := e.Result
		ev.Kind, ev.RunID, ev.Outcome, ev.Findings = console.KindRunFinished, r.RunID, string(r.Outcome), r.Totals.Findings
		switch {
		case e.Err != nil:
			ev.Text = "failed: " + e.Err.Error()
		case e.Specialist == TriageName:
			ev.RunID, ev.Text = "", r.Summary
		default:
			ev.Text = runLine(r)
		}
	default:
		return
	}
	d.console.Publish(ev)
}

// turnHook is the loop's per-turn hook: narration (when narrating) and the
// console's run pages and live feed.
func (d *Daemon) turnHook(specialist string) func(fleet.TurnEvent) {
	narrate := d.narrateTurn(specialist)
	return func(e fleet.TurnEvent) {
		if narrate != nil {
			narrate(e)
		}
		if d.console == nil {
			return
		}
		d.console.Publish(console.Event{Kind: console.KindTurn, Specialist: specialist, RunID: e.RunID, Turn: e.Index,
			Tool: e.Tool, Verdict: string(e.Verdict), Text: e.SummaryLine()})
		if e.Tool != "qa_report" || e.Verdict != fleet.VerdictOK {
			return
		}
		status, _ := e.Result["status"].(string)
		if status != "posted" && status != "queued" {
			return
		}
		var a struct{ Severity, Surface, Summary string }
		json.Unmarshal(e.Args, &a)
		summary, _, _ := strings.Cut(a.Summary, "\n")
		d.console.Publish(console.Event{Kind: console.KindFinding, Specialist: specialist, RunID: e.RunID,
			Severity: a.Severity, Surface: a.Surface, State: status, Text: Clip(summary, 300)})
	}
}

// maxClusterEvents bounds the cluster events one triage pass publishes
// (the first pass over a big log makes every cluster new).
const maxClusterEvents = 50

// publishChanges puts what a triage pass changed on the live feed.
func (d *Daemon) publishChanges(ch triage.Changes) {
	if d.console == nil {
		return
	}
	n := 0
	for _, set := range []struct {
		rows  []fleet.Cluster
		state string
	}{{ch.Regressed, "regressed"}, {ch.New, "new"}, {ch.Resolved, ""}} {
		for _, r := range set.rows {
			if n == maxClusterEvents {
				more := len(ch.New) + len(ch.Regressed) + len(ch.Resolved) - n
				d.console.Publish(console.Event{Kind: console.KindCluster, Specialist: TriageName, Text: fmt.Sprintf("and %d more changed clusters: see the Health page", more)})
				return
			}
			state := set.state
			if state == "" {
				state = string(r.State)
			}
			d.console.Publish(console.Event{Kind: console.KindCluster, Specialist: TriageName, Cluster: r.ID, State: state,
				Severity: string(r.Severity), Surface: string(r.Surface), Text: r.Title})
			n++
		}
	}
}

// Fleet is what the console's Fleet page shows (the tests' view of it).
func (d *Daemon) Fleet(ctx context.Context) (console.Fleet, error) {
	return (&consoleSource{d: d}).Fleet(ctx)
}
