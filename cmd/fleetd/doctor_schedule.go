package main

import (
	"context"

	fleetdaemon "github.com/qafleet/fleetd/daemon"
)

// scheduleCheck is doctor's schedule line: daemon.ScheduleCheck against
// daemon.http_addr, a warning when a specialist starves.
func (a serviceCommands) scheduleCheck(ctx context.Context) check {
	r := fleetdaemon.ScheduleCheck(ctx, a.cfg.Daemon.HTTPAddr)
	return check{name: "schedule", warn: true, ok: r.OK, detail: r.Detail, fix: r.Fix}
}
