package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/qafleet/fleetd/console"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/triage"
	"go.yaml.in/yaml/v3"
)

// TestTriageCatchesUpAfterABusyRun is the CI case made certain: with one
// run slot, feedback that lands while a ux run holds it is refused to
// triage (the fleet is at its cap); when the run ends, triage runs at once
// for it, rather than at its hourly interval.
func TestTriageCatchesUpAfterABusyRun(t *testing.T) {
	t.Parallel() // its own chain and data dir
	if testing.Short() {
		t.Skip("starts a daemon and a chain")
	}
	hour := fleet.Trigger{Every: time.Hour}
	f := newFleetFixture(t, fleet.Observe, map[string]fleet.Trigger{"smoke": hour, "security": hour, "ux": hour, "perf": hour, "fuzz": hour})
	b, err := os.ReadFile(f.config)
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := yaml.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	raw["daemon"].(map[string]any)["max_concurrent"] = 1
	raw["triage"] = map[string]any{"every": "1h"}
	if b, err = yaml.Marshal(raw); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.config, b, 0o600); err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	a := &app{stdin: strings.NewReader(""), stdout: io.Discard, stderr: &logs, configPath: f.config}
	if a.cfg, err = LoadConfig(f.config); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d, err := serviceCommands{a}.startDaemon(ctx, daemonOptions{logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Shutdown(30 * time.Second) })

	// A first ux run posts its findings; the second finds the same ones,
	// within poster.dedupe_window, so it posts nothing: no feedback event
	// comes after it ends to start triage by chance.
	if ok, why := d.Scheduler().Fire(ctx, "ux", "test"); !ok {
		t.Fatalf("ux not started: %s", why)
	}
	settle := time.Now().Add(60 * time.Second)
	for {
		n, err := f.dn.Log.Count(ctx)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := triage.LoadReport(a.reportsDir())
		if len(d.Runner().Running()) == 0 && err == nil && rep.Head >= n && n > 0 {
			break
		}
		if time.Now().After(settle) {
			t.Fatalf("the first ux run and its triage did not settle in 60s (running %v)", d.Runner().Running())
		}
		time.Sleep(200 * time.Millisecond)
	}
	before, err := f.dn.Log.Count(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ok, why := d.Scheduler().Fire(ctx, "ux", "test"); !ok {
		t.Fatalf("second ux run not started: %s", why)
	}
	uxStart := time.Now()
	postFinding(t, f, "qa/v1 source=qa-test sev=low surface=docs\nfirst entry while ux runs")
	postFinding(t, f, "qa/v1 source=qa-test sev=low surface=docs\nsecond entry while ux runs")
	// The poller (every 1s) sees them while ux still holds the slot.
	deadline := time.Now().Add(60 * time.Second)
	events := d.Scheduler().Stats()[triageName].Events
	for d.Scheduler().Stats()[triageName].Events < events+2 {
		if time.Now().After(deadline) {
			t.Fatalf("triage saw no feedback events: %+v", d.Scheduler().Stats()[triageName])
		}
		time.Sleep(100 * time.Millisecond)
	}
	if running := d.Runner().Running(); !slices.Contains(running, "ux") {
		t.Fatalf("ux ended (%s) before triage saw the entries: this test needs a longer run", time.Since(uxStart))
	}
	if st := d.Scheduler().Stats()[triageName]; st.PendingReason == "" {
		t.Fatalf("no start pending for triage while ux holds the only slot: %+v", st)
	}
	// The console shows it on triage's row (Fleet.Passes); the start is
	// surely still waiting if ux still runs after the read.
	fl, err := d.Fleet(ctx)
	uxRuns := slices.Contains(d.Runner().Running(), "ux")
	if i := slices.IndexFunc(fl.Passes, func(p console.Specialist) bool { return p.Name == triageName }); err != nil || i < 0 ||
		fl.Passes[i].Held < 1 || (uxRuns && fl.Passes[i].PendingReason == "") {
		t.Errorf("the console's passes do not show triage's held start (ux running: %v): %+v %v", uxRuns, fl.Passes, err)
	}
	for slices.Contains(d.Runner().Running(), "ux") {
		if time.Now().After(deadline) {
			t.Fatalf("ux still running after 60s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	uxEnd := time.Now()
	n, err := f.dn.Log.Count(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n != before+2 {
		t.Logf("the second ux run posted %d entries: a later event may start triage anyway", n-before-2)
	}
	for {
		rep, err := triage.LoadReport(a.reportsDir())
		if err == nil && rep.Head >= n {
			break
		}
		if time.Since(uxEnd) > 30*time.Second {
			head := uint64(0)
			if err == nil {
				head = rep.Head
			}
			t.Fatalf("the report covers [0, %d) of %d entries 30s after ux's run ended; triage %+v", head, n, d.Scheduler().Stats()[triageName])
		}
		time.Sleep(50 * time.Millisecond)
	}
	st := d.Scheduler().Stats()[triageName]
	if st.Retried < 1 {
		t.Errorf("triage stats %+v: no pending start was retried", st)
	}
	fl, err = d.Fleet(ctx)
	if i := slices.IndexFunc(fl.Passes, func(p console.Specialist) bool { return p.Name == triageName }); err != nil || i < 0 || fl.Passes[i].Retried < 1 {
		t.Errorf("the console's passes do not show triage's retried start: %+v %v", fl.Passes, err)
	}
	t.Logf("ux ran %s; the report covered all %d entries %s after it ended; triage %+v",
		uxEnd.Sub(uxStart).Round(100*time.Millisecond), n, time.Since(uxEnd).Round(100*time.Millisecond), st)
}
