package main

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/qafleet/fleetd/httpapi"
)

// How the daemon watches its chain node: every nodeCheckEvery while it
// answers; while it is down, after nodeRetryMin, doubling to nodeRetryMax,
// each wait plus up to half again of jitter.
var (
	nodeCheckEvery = 5 * time.Second
	nodeRetryMin   = time.Second
	nodeRetryMax   = 30 * time.Second
	// abandonedRetry spaces the reconciliations of runs that could not
	// clean up, so a name that keeps failing to release is not retried at
	// every check.
	abandonedRetry = 30 * time.Second
)

// nodeState is the daemon's view of its chain node (/api/status "node",
// /metrics fleetd_node_up). While the node is down no run starts (starter):
// a run would only fail on fleetd's own network.
type nodeState struct {
	mu      sync.Mutex
	known   bool
	up      bool
	since   time.Time
	err     string
	outages int
}

// set records a check's result and reports whether the node was up before
// and whether this check changed anything.
func (n *nodeState) set(err error, now time.Time) (wasUp, changed bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	wasUp, up := n.up, err == nil
	changed = !n.known || up != n.up
	if changed {
		n.since = now
		if !up {
			n.outages++
		}
	}
	n.known, n.up = true, up
	n.err = ""
	if err != nil {
		n.err = err.Error()
	}
	return wasUp, changed
}

// Up reports whether the node answered the last check.
func (n *nodeState) Up() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.up
}

func (n *nodeState) status() *httpapi.Node {
	n.mu.Lock()
	defer n.mu.Unlock()
	return &httpapi.Node{Up: n.up, Since: n.since, Error: n.err, Outages: n.outages}
}

// checkNode asks the node once and records the answer; it returns whether
// the node just came back (or answered for the first time after a start
// without it), which is when the daemon catches up.
func (d *daemon) checkNode(ctx context.Context) (up, back bool) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err := d.env.client.Ping(cctx)
	cancel()
	if ctx.Err() != nil {
		return d.node.Up(), false
	}
	wasUp, changed := d.node.set(err, time.Now())
	up = err == nil
	d.metrics.SetNodeUp(up, changed && !up)
	switch {
	case changed && up:
		d.log.Info("chain node answers", "rpc", publicURL(d.a().cfg.Chain.RPC))
	case changed && !up:
		d.log.Error("chain node down: no run starts until it answers", "rpc", publicURL(d.a().cfg.Chain.RPC), "err", err)
	}
	return up, up && !wasUp
}

// watchNode checks the node until ctx ends: on a schedule while it is up,
// with backoff and jitter while it is down; when it comes back the daemon
// catches up (crashed runs reconciled, records closed, the outbox posted).
// While it is up, a run that ended without cleaning up is reconciled at the
// next check.
func (d *daemon) watchNode(ctx context.Context) {
	wait := nodeRetryMin
	var lastReconcile time.Time
	for {
		next := nodeCheckEvery
		if !d.node.Up() {
			next = wait + time.Duration(rand.Int64N(int64(wait)/2+1))
			wait = min(wait*2, nodeRetryMax)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(next):
		}
		if up, back := d.checkNode(ctx); back {
			d.recoverCrashed(ctx)
		} else if up {
			wait = nodeRetryMin
			if time.Since(lastReconcile) >= abandonedRetry && d.abandoned.Swap(false) {
				// A run could not clean up while the node stalled or
				// restarted between two checks: finish it now, not at the
				// next start (issue 25).
				lastReconcile = time.Now()
				d.recoverCrashed(ctx)
			}
			d.retryDryPosting(ctx)
			d.settleLanded(ctx)
		}
	}
}

// settleLanded checks what the outbox posted against the log (the
// poster's Settle: an entry a reorg or a node that lost its last blocks
// took off the log goes back into the outbox) and posts what came back.
func (d *daemon) settleLanded(ctx context.Context) {
	if d.env.poster == nil {
		return
	}
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	n, err := d.env.poster.Settle(sctx)
	if err != nil {
		d.log.Warn("outbox: posted entries not checked against the log", "err", err)
	}
	if n > 0 {
		posted, left, err := d.env.poster.Flush(sctx)
		d.log.Warn("outbox: entries taken off the log posted again", "requeued", n, "posted", posted, "left", left, "err", err)
	}
}

// retryDryPosting tries the outbox again while posting is paused for a
// sponsor run dry, so what queued during the pause is posted soon after the
// sponsor is funded, not at the next start or the next finding. It sets
// fleetd_posting_paused.
func (d *daemon) retryDryPosting(ctx context.Context) {
	if d.env.poster == nil {
		return
	}
	if d.env.poster.Funds().Dry {
		fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		if posted, _, _ := d.env.poster.Flush(fctx); posted > 0 {
			d.log.Info("outbox flushed after posting resumed", "posted", posted)
		}
		cancel()
	}
	d.metrics.SetPostingPaused(d.env.poster.Funds().Dry)
}
