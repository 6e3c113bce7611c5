package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/qafleet/fleetd/qatools"
	"github.com/qafleet/fleetd/sandbox"
	"github.com/qafleet/fleetd/trajectory"
)

// recovery is what the recovery of crashed runs did in one data dir: the
// sandboxes reconciled (or still holding names), the run records closed
// with a footer.
type recovery struct {
	runs    []qatools.Reconciled
	footers []string // run ids whose record got a harness_error footer
	err     error
}

// held lists the names still held after reconciliation, "name (run)".
func (r recovery) held() []string {
	var out []string
	for _, c := range r.runs {
		for _, n := range c.Held {
			out = append(out, fmt.Sprintf("%s (run %s)", n, c.RunID))
		}
	}
	return out
}

// closed counts the sandboxes reconciliation closed.
func (r recovery) closed() int {
	n := 0
	for _, c := range r.runs {
		if c.Closed {
			n++
		}
	}
	return n
}

// recoverCrashed finishes what crashed runs left, for the daemon at start,
// `fleetd probe`, `fleetd tool call` and `fleetd reconcile`: every sandbox
// without a closed marker and not held by a live process is reconciled
// (names released, keys swept, qatools.Reconcile), and every run record
// without a footer whose run is not live gets a harness_error footer saying
// why (trajectory.Recover), the reconciled runs' included. by names who
// recovered it, for the footer ("fleetd reconcile").
func (a *app) recoverCrashed(ctx context.Context, env *fleetEnv, by string) recovery {
	var r recovery
	var errs []error
	base := a.sandboxDir()
	if env != nil && env.Env != nil {
		var err error
		r.runs, err = qatools.Reconcile(ctx, env.Env, base)
		if err != nil {
			errs = append(errs, err)
		}
	}
	files, _ := filepath.Glob(filepath.Join(a.dataDir(), trajectory.RunsDir, "*.jsonl"))
	for _, f := range files {
		s, err := trajectory.Summary(f)
		if err != nil || s.Outcome != trajectory.OutcomeCrashed || sandbox.Live(base, s.RunID) {
			continue
		}
		ok, err := trajectory.Recover(f, "the process running it died; recovered by "+by)
		if err != nil {
			errs = append(errs, fmt.Errorf("recover run record %s: %w", s.RunID, err))
			continue
		}
		if ok {
			r.footers = append(r.footers, s.RunID)
		}
	}
	r.err = errors.Join(errs...)
	return r
}

// say writes what recovery did, one line each, for the one-shot commands.
func (r recovery) say(a *app) {
	if n := r.closed(); n > 0 {
		fmt.Fprintf(a.stderr, "reconciled %d crashed run(s): names released, funds swept\n", n)
	}
	if len(r.footers) > 0 {
		fmt.Fprintf(a.stderr, "closed %d crashed run record(s) with a footer: %s\n", len(r.footers), strings.Join(r.footers, ", "))
	}
	if h := r.held(); len(h) > 0 {
		fmt.Fprintf(a.stderr, "still held (their keys kept funded; fleetd reconcile retries): %s\n", strings.Join(h, ", "))
	}
}

// Outbox flushes at the end of one-shot commands: up to flushTries tries,
// flushBackoff, doubled, with jitter, between them (about 0.5 + 1 + 2 s).
const (
	flushTries   = 4
	flushBackoff = 500 * time.Millisecond
)

// postQueued posts what the fleet identity's outbox holds before a one-shot
// command exits (a probe's findings the node did not acknowledge), and says
// on stderr what is still queued and what will post it when it cannot. It
// runs even when ctx is cancelled (a probe stopped by a signal), within
// its own bound.
func (a *app) postQueued(ctx context.Context, env *fleetEnv) (posted, left int, err error) {
	if env == nil || env.poster == nil {
		return 0, 0, nil
	}
	bound := 30 * time.Second
	if ctx.Err() != nil {
		bound = 10 * time.Second // stopping: within a pod's grace period
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bound)
	defer cancel()
	posted, left, err = env.poster.FlushRetry(fctx, flushTries, flushBackoff)
	if posted > 0 {
		fmt.Fprintf(a.stderr, "outbox: posted %s\n", plural(posted, "queued entry", "queued entries"))
	}
	if left > 0 {
		fmt.Fprintf(a.stderr, "outbox: %s still queued in %s (%v); the next fleetd probe, fleetd reconcile or the daemon posts them\n",
			plural(left, "entry", "entries"), env.poster.OutboxDir(), err)
	}
	return posted, left, err
}
