package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/qafleet/fleetd/fleet"
)

// TestReloadUnderLoad reloads the daemon's config every 200 ms, each time
// with another triage interval (so the schedules are replaced too), while
// specialists run, triage passes read the config and the console, the
// status and the metrics are read in a loop. Every reload must take, every
// request answer, the runs go on, and the daemon stop cleanly with its
// invariants kept. Under -race (.ci/run) it is the proof that a reload
// swaps a snapshot no reader shares.
func TestReloadUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a daemon and a chain")
	}
	fast := map[string]fleet.Trigger{"smoke": {Every: 2 * time.Second}, "security": {Every: 3 * time.Second},
		"ux": {Every: 2 * time.Second}, "perf": {Every: 3 * time.Second}, "fuzz": {Continuous: true}}
	f := newFleetFixture(t, fleet.Observe, fast)
	var variants [2][]byte
	for i, every := range []string{"2s", "3s"} {
		p := editConfig(t, f.config, func(c map[string]any) { c["triage"] = map[string]any{"every": every} })
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		variants[i] = b
	}
	if err := fleet.WriteFileAtomic(f.config, variants[0], 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d := startTestDaemon(t, ctx, f.config)

	const load = 15 * time.Second
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var requests, failures atomic.Int64
	var firstFailure atomic.Value
	for _, path := range []string{"/api/fleet", "/api/status", "/metrics", "/fleet", "/api/runs"} {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				res, err := http.Get(d.base + path)
				if err == nil {
					io.Copy(io.Discard, res.Body)
					res.Body.Close()
					if res.StatusCode != http.StatusOK {
						err = &statusError{path, res.Status}
					}
				}
				requests.Add(1)
				if err != nil {
					failures.Add(1)
					firstFailure.CompareAndSwap(nil, err.Error())
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
	reloads := 0
	for end := time.Now().Add(load); time.Now().Before(end); reloads++ {
		if err := fleet.WriteFileAtomic(f.config, variants[(reloads+1)%2], 0o600); err != nil {
			t.Fatal(err)
		}
		d.reload <- struct{}{}
		time.Sleep(200 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	waitFor(t, 10*time.Second, "every reload logged", func() bool {
		return strings.Count(d.errb.String(), `"msg":"reloaded"`) == reloads
	})
	cancel()
	if code := <-d.done; code != 0 {
		t.Errorf("fleetd run exited %d:\n%s", code, tail(d.errb.String(), 20))
	}
	logs := d.errb.String()
	if strings.Contains(logs, "reload: keeping") {
		t.Errorf("a reload was refused:\n%s", tail(logs, 20))
	}
	started, finished := strings.Count(logs, `"msg":"run started"`), strings.Count(logs, `"msg":"run finished"`)
	if failures.Load() > 0 || requests.Load() < 50 || started < 4 || finished < 2 {
		t.Errorf("%d requests, %d failed (first: %v); %d runs started, %d finished; %d reloads", requests.Load(), failures.Load(), firstFailure.Load(), started, finished, reloads)
	}
	t.Logf("%d reloads, %d requests, %d runs started, %d finished", reloads, requests.Load(), started, finished)
	f.checkInvariants(t)
}

type statusError struct{ path, status string }

func (e *statusError) Error() string { return e.path + ": " + e.status }
