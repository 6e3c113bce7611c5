package daemon

import (
	"context"
	"log/slog"
	"time"

	"github.com/qafleet/fleetd/httpapi"
	"github.com/qafleet/fleetd/runner"
)

// newNode is the daemon's watcher of its chain node (Node, shared
// with fleetd mcp): when the node answers for the first time or comes back,
// crashed runs are reconciled, their records closed and the outbox posted.
func (d *Daemon) newNode() *Node {
	return &Node{Ping: d.env.Client.Ping, RPC: d.cfg().ChainRPC, Log: d.log, Metrics: d.metrics, OnBack: d.recoverCrashed}
}

// whileNodeUp runs at each check that finds the node answering: a run that
// ended without cleaning up is reconciled (at most every
// daemon.AbandonedRetry), a posting paused for a dry sponsor is tried again,
// and what the outbox posted is checked against the log.
func (d *Daemon) whileNodeUp(ctx context.Context) {
	if time.Since(d.lastReconcile) >= AbandonedRetry && d.abandoned.Swap(false) {
		// A run could not clean up while the node stalled or restarted
		// between two checks: finish it now, not at the next start (issue 25).
		d.lastReconcile = time.Now()
		d.recoverCrashed(ctx)
	}
	d.retryDryPosting(ctx)
	d.settleLanded(ctx)
}

// settleLanded checks what the outbox posted against the log (the
// poster's Settle: an entry a reorg or a node that lost its last blocks
// took off the log goes back into the outbox) and posts what came back.
func (d *Daemon) settleLanded(ctx context.Context) {
	if d.env.Poster == nil {
		return
	}
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	n, err := d.env.Poster.Settle(sctx)
	if err != nil {
		d.log.Warn("outbox: posted entries not checked against the log", "err", err)
	}
	if n > 0 {
		posted, left, err := d.env.Poster.Flush(sctx)
		d.log.Warn("outbox: entries taken off the log posted again", "requeued", n, "posted", posted, "left", left, "err", err)
	}
}

// retryDryPosting tries the outbox again while posting is paused for a
// sponsor run dry, so what queued during the pause is posted soon after the
// sponsor is funded, not at the next start or the next finding. It sets
// fleetd_posting_paused.
func (d *Daemon) retryDryPosting(ctx context.Context) {
	if d.env.Poster == nil {
		return
	}
	if d.env.Poster.Funds().Dry {
		fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		if posted, _, _ := d.env.Poster.Flush(fctx); posted > 0 {
			d.log.Info("outbox flushed after posting resumed", "posted", posted)
		}
		cancel()
	}
	d.metrics.SetPostingPaused(d.env.Poster.Funds().Dry)
}

// NewNode is the daemon's watcher of env's node for a command that runs no
// daemon (fleetd mcp): when the node answers for the first time or comes
// back, crashed runs in cfg's data dir are reconciled, their records closed
// and the outbox posted; no specialist set is published (no personas).
func NewNode(env *runner.Env, cfg Config, log *slog.Logger) *Node {
	d := &Daemon{env: env, log: log, metrics: httpapi.NewMetrics()}
	d.snap.Store(&Snapshot{Config: cfg})
	return d.newNode()
}
