package daemon

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/qafleet/fleetd/runner"
)

// SayRecovery writes to w what recovery did, one line each, for the
// one-shot commands.
func SayRecovery(w io.Writer, r runner.Recovery) {
	if n := r.Closed(); n > 0 {
		fmt.Fprintf(w, "reconciled %d crashed run(s): names released, funds swept\n", n)
	}
	sayFootersAndHeld(w, r, "fleetd reconcile retries")
}

// sayFootersAndHeld writes the lines both SayRecovery and FinishLeft end
// with: the crashed records given a footer, and the names still held,
// with what finishes them (retry).
func sayFootersAndHeld(w io.Writer, r runner.Recovery, retry string) {
	if len(r.Footers) > 0 {
		fmt.Fprintf(w, "closed %d crashed run record(s) with a footer: %s\n", len(r.Footers), strings.Join(r.Footers, ", "))
	}
	if h := r.Held(); len(h) > 0 {
		fmt.Fprintf(w, "still held (their keys kept funded; %s): %s\n", retry, strings.Join(h, ", "))
	}
}

// Outbox flushes at the end of one-shot commands: up to flushTries tries,
// flushBackoff, doubled, with jitter, between them (about 0.5 + 1 + 2 s).
const (
	flushTries   = 4
	flushBackoff = 500 * time.Millisecond
)

// PostQueued posts what the fleet identity's outbox holds before a one-shot
// command exits (a probe's findings the node did not acknowledge), and says
// on w what is still queued and what will post it when it cannot. It
// runs even when ctx is cancelled (a probe stopped by a signal), within
// its own bound.
func PostQueued(ctx context.Context, env *runner.Env, w io.Writer) (posted, left int, err error) {
	if env == nil || env.Poster == nil {
		return 0, 0, nil
	}
	bound := 30 * time.Second
	if ctx.Err() != nil {
		bound = 10 * time.Second // stopping: within a pod's grace period
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bound)
	defer cancel()
	posted, left, err = env.Poster.FlushRetry(fctx, flushTries, flushBackoff)
	if posted > 0 {
		fmt.Fprintf(w, "outbox: posted %s\n", Plural(posted, "queued entry", "queued entries"))
	}
	if left > 0 {
		fmt.Fprintf(w, "outbox: %s still queued in %s (%v); the next fleetd probe, fleetd reconcile or the daemon posts them\n",
			Plural(left, "entry", "entries"), env.Poster.OutboxDir(), err)
	}
	return posted, left, err
}

// stopFinishBound bounds FinishLeft: a stopping one-shot command (a
// probe's pod in its grace period) does not wait longer than this for a
// reconcile.
var stopFinishBound = 10 * time.Second

// FinishLeft is the stop of a one-shot command (fleetd probe, fleetd mcp)
// one of whose runs left its sandbox open (runner.LeftOpen: its cleanup
// failed once). It finishes the run with runner.Finish within
// stopFinishBound, even when ctx is cancelled (the command was stopped by
// a signal), and says on w what it finished and what it leaves held, with
// the command that finishes that. Without it the names stayed held and the
// keys funded until the next command or start, and for good for a user
// who ran one probe.
func FinishLeft(ctx context.Context, env *runner.Env, dataDir, by string, w io.Writer) runner.Recovery {
	if w == nil {
		w = io.Discard
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopFinishBound)
	defer cancel()
	r := runner.Finish(ctx, env, dataDir, by)
	for _, c := range r.Runs {
		if c.Closed {
			fmt.Fprintf(w, "finished run %s's cleanup on a second try: %d name(s) released, its keys swept\n", c.RunID, len(c.Released))
		}
	}
	sayFootersAndHeld(w, r, "fleetd reconcile or the next start finishes them")
	if r.Err != nil {
		fmt.Fprintf(w, "the cleanup's second try: %v\n", r.Err)
	}
	return r
}
