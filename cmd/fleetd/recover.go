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

// postQueued is daemon.PostQueued, saying on stderr what is left.
func (a *app) postQueued(ctx context.Context, env *fleetEnv) (posted, left int, err error) {
	return fleetdaemon.PostQueued(ctx, env, a.stderr)
}

var plural = fleetdaemon.Plural
