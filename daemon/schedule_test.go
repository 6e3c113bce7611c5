package daemon

import (
	"context"
	"net"
	"strings"
	"testing"

	"github.com/qafleet/fleetd/httpapi"
)

// TestDoctorScheduleAsksTheRunningDaemon: doctor (ScheduleCheck) reads the starved
// specialists from the daemon's /api/status (a real httpapi server) and
// shows each with its reason as a warning; with nothing listening it says
// it could not check, and passes.
func TestDoctorScheduleAsksTheRunningDaemon(t *testing.T) {
	starved := map[string]string{}
	srv, err := httpapi.Start("127.0.0.1:0", httpapi.NewMetrics(), func() httpapi.Status {
		return httpapi.Status{Starved: starved}
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	check := func(addr string) ScheduleReport { return ScheduleCheck(t.Context(), addr) }

	if c := check(srv.Addr()); !c.OK || !strings.Contains(c.Detail, "every scheduled specialist ran") {
		t.Errorf("nothing starved: %+v", c)
	}
	starved["perf"] = "no run since 12:00:00 (3 periods of 40s): its start (every) has waited since 12:00:40 for a free slot: the fleet is at its concurrency cap"
	c := check(srv.Addr())
	if c.OK || !strings.Contains(c.Detail, "perf starved: no run since 12:00:00") || !strings.Contains(c.Detail, "concurrency cap") || !strings.Contains(c.Fix, "daemon.max_concurrent") {
		t.Errorf("perf starved: %+v", c)
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	free := l.Addr().String()
	l.Close()
	if c := check(free); !c.OK || !strings.Contains(c.Detail, "not checked: no running daemon answers at "+free) {
		t.Errorf("no daemon: %+v", c)
	}
	if c := check("127.0.0.1:0"); !c.OK || !strings.Contains(c.Detail, "names no fixed port") {
		t.Errorf("port 0: %+v", c)
	}
}
