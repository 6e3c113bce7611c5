package main

import (
	"context"

	fleetdaemon "github.com/qafleet/fleetd/daemon"
	"github.com/qafleet/fleetd/runner"
)

// recoverCrashed is runner.Recover over a's data dir.
func (a *app) recoverCrashed(ctx context.Context, env *fleetEnv, by string) runner.Recovery {
	return runner.Recover(ctx, env, a.dataDir(), by)
}

// sayRecovery is daemon.SayRecovery on stderr.
func (a *app) sayRecovery(r runner.Recovery) { fleetdaemon.SayRecovery(a.stderr, r) }

// leftOpen is runner.LeftOpen over a's data dir.
func (a *app) leftOpen(runID string) bool { return runner.LeftOpen(a.dataDir(), runID) }

// finishLeft finishes, before the command exits, the cleanup of a run that
// left its sandbox open (daemon.FinishLeft), saying on stderr what it did.
// It reports whether run runID is cleaned up now.
func (a *app) finishLeft(ctx context.Context, env *fleetEnv, runID, by string) bool {
	fleetdaemon.FinishLeft(ctx, env, a.dataDir(), by, a.stderr)
	return !a.leftOpen(runID)
}

// postQueued is daemon.PostQueued, saying on stderr what is left.
func (a *app) postQueued(ctx context.Context, env *fleetEnv) (posted, left int, err error) {
	return fleetdaemon.PostQueued(ctx, env, a.stderr)
}

var plural = fleetdaemon.Plural
