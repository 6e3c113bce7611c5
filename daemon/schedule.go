package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/qafleet/fleetd/httpapi"
)

// ScheduleReport is what ScheduleCheck found: OK, or the starved
// specialists in Detail and what to change in Fix.
type ScheduleReport struct {
	OK          bool
	Detail, Fix string
}

// ScheduleCheck asks the daemon running on addr (daemon.http_addr), if one
// answers, which specialists it calls starved (no run in three of their
// periods: the triggers' fair share) and why (`fleetd doctor`'s schedule
// line; a starved specialist is a warning: the daemon runs, but that probe
// does not).
func ScheduleCheck(ctx context.Context, addr string) ScheduleReport {
	var c ScheduleReport
	if addr == "" {
		addr = "127.0.0.1:8787"
	}
	if _, port, err := net.SplitHostPort(addr); err != nil || port == "0" {
		c.OK, c.Detail = true, "not checked: daemon.http_addr "+addr+" names no fixed port to ask a running daemon"
		return c
	}
	st, err := ReadStatus(ctx, "http://"+addr+"/api/status")
	if err != nil {
		c.OK, c.Detail = true, fmt.Sprintf("not checked: no running daemon answers at %s (%v)", addr, err)
		return c
	}
	if len(st.Starved) == 0 {
		c.OK, c.Detail = true, fmt.Sprintf("the daemon at %s: every scheduled specialist ran within three of its periods", addr)
		return c
	}
	var lines []string
	for _, name := range slices.Sorted(maps.Keys(st.Starved)) {
		lines = append(lines, name+" starved: "+st.Starved[name])
	}
	c.Detail = fmt.Sprintf("the daemon at %s: %s", addr, strings.Join(lines, "; "))
	c.Fix = "raise daemon.max_concurrent, or give the specialists longer periods (a tick refused at the cap waits its turn, but runs longer than the periods leave no turn)"
	return c
}

// ReadStatus reads a running daemon's /api/status at url.
func ReadStatus(ctx context.Context, url string) (httpapi.Status, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var st httpapi.Status
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return st, err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return st, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return st, fmt.Errorf("GET %s: %s", url, res.Status)
	}
	if err := json.NewDecoder(res.Body).Decode(&st); err != nil {
		return st, fmt.Errorf("GET %s: %w", url, err)
	}
	return st, nil
}
