package main

import (
	"context"

	fleetdaemon "github.com/qafleet/fleetd/daemon"
	"github.com/qafleet/fleetd/doctor"
)

// scheduleCheck is doctor's schedule line: daemon.ScheduleCheck against
// daemon.http_addr, a warning when a specialist starves.
func (a serviceCommands) scheduleCheck(ctx context.Context) doctor.Check {
	r := fleetdaemon.ScheduleCheck(ctx, a.cfg.Daemon.HTTPAddr)
	return doctor.Check{Name: "schedule", Warn: true, OK: r.OK, Detail: r.Detail, Fix: r.Fix}
}
