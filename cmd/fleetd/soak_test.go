package main

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/qafleet/fleetd/faultnet"
	"github.com/qafleet/fleetd/fleet"
)

// soakSample is the daemon process's figures at one moment, read from its
// own /metrics (the Go and process collectors, and the runner's).
type soakSample struct {
	at         time.Duration
	rss        float64 // process_resident_memory_bytes
	heap       float64 // go_memstats_heap_inuse_bytes
	goroutines float64 // go_goroutines
	fds        float64 // process_open_fds
	running    float64 // fleetd_runs_running
	finished   float64 // fleetd_runs_finished_total, every specialist and outcome
	kinds      int     // specialists with a finished run
}

// leakPerRunEnv makes the daemon process (this test binary under
// FLEETD_TEST_MAIN) leak one goroutine per run (testHookRunEnded).
const leakPerRunEnv = "FLEETD_TEST_LEAK_PER_RUN"

// TestSoak runs the daemon (a process of its own) against the testbed at
// the exercise rung with every specialist on a short interval, through the
// fault proxy dropping, delaying or cutting about one node answer in ten,
// for FLEETD_SOAK (a duration; default 60 s, the short version .ci/run
// runs), sampling its resident memory, heap, goroutines, open files and
// runs every FLEETD_SOAK_EVERY (default 1 s), and paused twice (after
// warm-up and at the end) to count its goroutines at rest. After warm-up
// (the first third) nothing may grow (soakGrowth), goroutines per run
// included. Then the daemon stops on SIGTERM with exit 0 and the fixture's
// invariants hold.
//
//	FLEETD_SOAK=30m FLEETD_SOAK_EVERY=30s go test -run TestSoak -timeout 40m -v ./cmd/fleetd/
func TestSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the daemon for a minute or more")
	}
	dur, every := 60*time.Second, time.Second
	if v := os.Getenv("FLEETD_SOAK"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 15*time.Second {
			t.Fatalf("FLEETD_SOAK=%q: want a duration of at least 15s", v)
		}
		dur = d
	}
	if v := os.Getenv("FLEETD_SOAK_EVERY"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second {
			t.Fatalf("FLEETD_SOAK_EVERY=%q: want a duration of at least 1s", v)
		}
		every = d
	}
	f, samples, idle := soakDaemon(t, dur, every, map[string]fleet.Trigger{
		"smoke": {Every: 4 * time.Second}, "security": {Every: 9 * time.Second}, "ux": {Every: 7 * time.Second},
		"perf": {Every: 15 * time.Second}, "fuzz": {Every: 20 * time.Second},
	})
	for _, p := range soakGrowth(samples, idle) {
		t.Error(p)
	}
	runs, findings := f.checkInvariants(t)
	t.Logf("%d runs, %d findings on chain over %s", runs, findings, dur)
}

// TestSoakCatchesALeak is a test of the soak's rule: the soak, with the
// daemon leaking one goroutine per run (testHookRunEnded), must fail it,
// and on goroutines per run. Only smoke runs, back to back, so a loaded
// machine still finishes enough runs in 45 s to judge.
func TestSoakCatchesALeak(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the daemon for 45 s or more")
	}
	_, samples, idle := soakDaemon(t, 45*time.Second, time.Second, map[string]fleet.Trigger{"smoke": {Every: time.Second}}, leakPerRunEnv+"=1")
	problems := soakGrowth(samples, idle)
	if !slices.ContainsFunc(problems, func(p string) bool { return strings.HasPrefix(p, "goroutines per run:") }) {
		t.Errorf("a daemon leaking a goroutine per run passes the soak's rule: %q", problems)
	}
	t.Logf("the rule says: %q", problems)
}

// soakIdle is the daemon at rest at one moment of the soak: paused, no run
// in flight for idleFor, its goroutines at their lowest over that time.
type soakIdle struct {
	at         time.Duration
	goroutines float64
	finished   float64
}

// soakRuns is how many runs must finish between the idle checkpoints to
// judge goroutines per run.
const soakRuns = 5

// idleFor is how long a checkpoint watches the paused daemon with no run
// in flight: its lowest goroutine count over that time leaves out what
// lives only for a request (a node check, a scrape), not what leaked.
const idleFor = 3 * time.Second

// soakDaemon runs the soak's daemon with triggers for dur, sampling every
// every, with env added to its environment, stops it and returns the
// fixture, the samples and the two idle checkpoints: after warm-up and at
// the end, the daemon is paused (the kill switch: running runs are
// cancelled at their next tool call) until no run is in flight, watched
// for idleFor, and resumed. A soak whose runs are slow (a loaded machine)
// goes on past dur, up to three times it, until every specialist finished
// a run before the first checkpoint and soakRuns runs finished after it.
func soakDaemon(t *testing.T, dur, every time.Duration, triggers map[string]fleet.Trigger, env ...string) (*faultFixture, []soakSample, []soakIdle) {
	t.Helper()
	f := newFaultFixture(t, fleet.Exercise, triggers)
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	f.proxy.SetRule(func(req []byte) faultnet.Fault {
		mu.Lock()
		defer mu.Unlock()
		if rpcMethod(req, "eth_sendRawTransaction") || rng.IntN(10) != 0 {
			return faultnet.Fault{} // sends are the fault harness's business; here the load is
		}
		switch rng.IntN(3) {
		case 0:
			return faultnet.Fault{Kind: faultnet.Latency, Delay: time.Duration(50+rng.IntN(450)) * time.Millisecond}
		case 1:
			return faultnet.Fault{Kind: faultnet.Reset, Bytes: rng.IntN(64)}
		}
		return faultnet.Fault{Kind: faultnet.Truncate, Bytes: rng.IntN(64)}
	})
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "run", "--config", f.config, "--log-level", "warn")
	cmd.Env = append(append(os.Environ(), "FLEETD_TEST_MAIN=1"), env...)
	stdout, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	r := bufio.NewReader(stdout)
	line, err := r.ReadString('\n')
	if err != nil || !strings.Contains(line, `"http"`) {
		t.Fatalf("daemon did not come up: %q %v\n%s", line, err, tail(stderr.String(), 20))
	}
	go io.Copy(io.Discard, r)
	base := strings.TrimSuffix(strings.Split(strings.Split(line, `"http":"`)[1], `"`)[0], "/")
	start := time.Now()
	var samples []soakSample
	var idle []soakIdle
	ctl := fleet.NewControl(f.dataDir)
	checkpoint := func() {
		t.Helper()
		if err := ctl.Pause("soak: idle checkpoint", "test"); err != nil {
			t.Fatal(err)
		}
		defer ctl.Resume("soak: idle checkpoint over", "test")
		var since time.Time
		var low soakIdle
		for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			s, err := scrapeSoak(base)
			if err != nil {
				t.Fatalf("scrape at %s: %v", time.Since(start).Round(time.Second), err)
			}
			switch {
			case s.running != 0:
				since = time.Time{}
			case since.IsZero() || s.goroutines < low.goroutines:
				if since.IsZero() {
					since = time.Now()
				}
				low = soakIdle{at: time.Since(start), goroutines: s.goroutines, finished: s.finished}
			}
			if !since.IsZero() && time.Since(since) >= idleFor {
				idle = append(idle, low)
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("paused at %s, the daemon still had %.0f runs in flight 90s later", time.Since(start).Round(time.Second), s.running)
			}
		}
	}
	for time.Since(start) < 3*dur && (time.Since(start) < dur || len(idle) == 0 || samples[len(samples)-1].finished-idle[0].finished < soakRuns) {
		time.Sleep(every)
		s, err := scrapeSoak(base)
		if err != nil {
			t.Fatalf("scrape at %s: %v", time.Since(start).Round(time.Second), err)
		}
		s.at = time.Since(start)
		samples = append(samples, s)
		// The first checkpoint once warm-up is over: a third of the way,
		// and every specialist has finished a run (a specialist's first
		// run starts what it keeps, which is no leak: measured, 8
		// goroutines more at rest after the first runs of three of them).
		if len(idle) == 0 && s.at >= dur/3 && s.kinds >= len(triggers) {
			checkpoint()
		}
	}
	checkpoint()
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Errorf("stop on SIGTERM: %v\n%s", err, tail(stderr.String(), 20))
	}
	f.proxy.SetRule(nil)
	t.Logf("faults injected: %v", f.proxy.Counts())
	var tbl strings.Builder
	tbl.WriteString("| time | RSS MiB | heap MiB | goroutines | open files | running | finished |\n|---|---|---|---|---|---|---|\n")
	for _, s := range samples {
		fmt.Fprintf(&tbl, "| %s | %.1f | %.1f | %.0f | %.0f | %.0f | %.0f |\n", s.at.Round(time.Second), s.rss/(1<<20), s.heap/(1<<20), s.goroutines, s.fds, s.running, s.finished)
	}
	t.Logf("\n%s", tbl.String())
	for _, c := range idle {
		t.Logf("idle at %s: %.0f goroutines, %.0f runs finished", c.at.Round(time.Second), c.goroutines, c.finished)
	}
	return f, samples, idle
}

// soakGrowth is the soak's rule, one line per figure that grows after
// warm-up (the first third of the samples):
//   - memory: the last third's median within 50 % of the middle third's;
//   - goroutines and open files follow the runs in flight at the moment of
//     a sample (16-42 files over the 30-minute soak), so the last third's
//     floor must stay below the middle third's ceiling plus a constant;
//   - goroutines per run: at rest (idle, the two checkpoints) the daemon
//     has no run's goroutines, so what it gained between them is what the
//     runs in between left behind. More than half a goroutine per run (at
//     least five in all) fails: one leaked per run shows within a minute,
//     where the slack above, which the runs in flight need, hides 25.
func soakGrowth(samples []soakSample, idle []soakIdle) []string {
	if len(samples) < 6 {
		return []string{fmt.Sprintf("%d samples: too few to judge", len(samples))}
	}
	var out []string
	third := len(samples) / 3
	mid, last := samples[third:2*third], samples[2*third:]
	vals := func(ss []soakSample, get func(soakSample) float64) []float64 {
		v := make([]float64, len(ss))
		for i, s := range ss {
			v[i] = get(s)
		}
		return v
	}
	med := func(ss []soakSample, get func(soakSample) float64) float64 {
		v := vals(ss, get)
		slices.Sort(v)
		return v[len(v)/2]
	}
	for _, c := range []struct {
		what  string
		get   func(soakSample) float64
		ratio float64
	}{
		{"resident memory", func(s soakSample) float64 { return s.rss }, 1.5},
		{"heap in use", func(s soakSample) float64 { return s.heap }, 1.5},
	} {
		if m, l := med(mid, c.get), med(last, c.get); l > m*c.ratio {
			out = append(out, fmt.Sprintf("%s grows after warm-up: median %.0f in the middle third, %.0f in the last", c.what, m, l))
		}
	}
	for _, c := range []struct {
		what string
		get  func(soakSample) float64
		plus float64
	}{
		{"goroutines", func(s soakSample) float64 { return s.goroutines }, 25},
		{"open files", func(s soakSample) float64 { return s.fds }, 10},
	} {
		if ceil, floor := slices.Max(vals(mid, c.get)), slices.Min(vals(last, c.get)); floor > ceil+c.plus {
			out = append(out, fmt.Sprintf("%s grow after warm-up: at least %.0f all through the last third, at most %.0f in the middle third", c.what, floor, ceil))
		}
	}
	if len(idle) != 2 {
		return append(out, fmt.Sprintf("%d idle checkpoints, want 2: warm-up (every specialist finishing a run) never ended", len(idle)))
	}
	runs, grew := idle[1].finished-idle[0].finished, idle[1].goroutines-idle[0].goroutines
	switch {
	case runs < soakRuns:
		out = append(out, fmt.Sprintf("%.0f runs between the idle checkpoints: too few to judge goroutines per run", runs))
	case grew > max(4, runs/2):
		out = append(out, fmt.Sprintf("goroutines per run: %.0f more at rest after %.0f runs (%.0f at %s, %.0f at %s): %.2f per run",
			grew, runs, idle[0].goroutines, idle[0].at.Round(time.Second), idle[1].goroutines, idle[1].at.Round(time.Second), grew/runs))
	}
	return out
}

// scrapeSoak reads the daemon's figures from its /metrics.
func scrapeSoak(base string) (soakSample, error) {
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		return soakSample{}, err
	}
	defer resp.Body.Close()
	var s soakSample
	want := map[string]*float64{"process_resident_memory_bytes": &s.rss, "go_memstats_heap_inuse_bytes": &s.heap,
		"go_goroutines": &s.goroutines, "process_open_fds": &s.fds, "fleetd_runs_running": &s.running}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	seen := 0
	kinds := map[string]bool{}
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		v, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if !ok || err != nil {
			continue
		}
		if p, hit := want[name]; hit {
			*p = v
			seen++
		}
		if strings.HasPrefix(name, "fleetd_runs_finished_total{") {
			s.finished += v // one series per specialist and outcome
			if _, rest, ok := strings.Cut(name, `specialist="`); ok && v > 0 {
				kinds[strings.SplitN(rest, `"`, 2)[0]] = true
			}
		}
	}
	s.kinds = len(kinds)
	if seen != len(want) {
		return s, fmt.Errorf("/metrics has %d of the %d figures", seen, len(want))
	}
	return s, sc.Err()
}
