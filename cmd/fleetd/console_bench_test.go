package main

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/qafleet/fleetd/fleet"
	"github.com/spf13/cobra"
)

// cpuTime is the process's user+system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkDaemonIdle measures the CPU an idle daemon uses (no trigger due
// for an hour; the chain-event poller on its 1s interval) over a 20 s
// window, with the console closed and with a browser's worth of console
// open (the Health page and the live feed, each holding an SSE stream).
// The dev chain and the testbed run in this process too, so the console's
// own cost is the difference between the two. Run with -benchtime 1x.
func BenchmarkDaemonIdle(b *testing.B) {
	f := newFleetFixture(b, fleet.Observe, map[string]fleet.Trigger{
		"smoke": {Every: time.Hour}, "security": {Every: time.Hour}, "ux": {Every: time.Hour},
		"perf": {Every: time.Hour}, "fuzz": {Every: time.Hour},
	})
	a := &app{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard, configPath: f.config}
	cfg, err := LoadConfig(f.config)
	if err != nil {
		b.Fatal(err)
	}
	a.cfg = cfg
	findingsCommands{a}.runTriage(context.Background(), a.resolve(&connFlags{cmd: &cobra.Command{}}), nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d, err := serviceCommands{a}.startDaemon(ctx, daemonOptions{logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Shutdown(30 * time.Second)
	base := d.ConsoleURL()
	const window = 20 * time.Second
	measure := func(b *testing.B) {
		time.Sleep(2 * time.Second) // settle
		var used time.Duration
		for b.Loop() {
			c0 := cpuTime(b)
			time.Sleep(window)
			used = cpuTime(b) - c0
		}
		b.ReportMetric(float64(used.Milliseconds())/window.Seconds(), "cpu-ms/s")
	}
	b.Run("console=closed", measure)
	b.Run("console=open", func(b *testing.B) {
		sctx, scancel := context.WithCancel(context.Background())
		defer scancel()
		for _, p := range []string{"", "feed"} {
			resp, err := http.Get(base + p) // the page itself
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			req, _ := http.NewRequestWithContext(sctx, "GET", base+"api/events", nil)
			ev, err := http.DefaultClient.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			go func() {
				defer ev.Body.Close()
				r := bufio.NewReader(ev.Body)
				for {
					if _, err := r.ReadString('\n'); err != nil {
						return
					}
				}
			}()
		}
		for d.Console().Hub().Subscribers() < 2 {
			time.Sleep(10 * time.Millisecond)
		}
		measure(b)
	})
}
