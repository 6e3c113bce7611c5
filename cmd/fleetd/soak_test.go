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
// own /metrics (the Go and process collectors).
type soakSample struct {
	at         time.Duration
	rss        float64 // process_resident_memory_bytes
	heap       float64 // go_memstats_heap_inuse_bytes
	goroutines float64 // go_goroutines
	fds        float64 // process_open_fds
}

// TestSoak runs the daemon (a process of its own) against the testbed at
// the exercise rung with every specialist on a short interval, through the
// fault proxy dropping, delaying or cutting about one node answer in ten,
// for FLEETD_SOAK (a duration; default 60 s, the short version .ci/run
// runs), sampling its resident memory, heap, goroutines and open files
// every FLEETD_SOAK_EVERY (default 5 s). After warm-up (the first third)
// they must stay flat: the last third's median memory within 50 % of the
// middle third's, and its lowest goroutines (+25) and open files (+10)
// counts no higher than the middle third's highest. Then the
// daemon stops on SIGTERM with exit 0 and the fixture's invariants hold.
//
//	FLEETD_SOAK=30m FLEETD_SOAK_EVERY=30s go test -run TestSoak -timeout 40m -v ./cmd/fleetd/
func TestSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the daemon for a minute or more")
	}
	dur, every := 60*time.Second, 5*time.Second
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
	f := newFaultFixture(t, fleet.Exercise, map[string]fleet.Trigger{
		"smoke": {Every: 4 * time.Second}, "security": {Every: 9 * time.Second}, "ux": {Every: 7 * time.Second},
		"perf": {Every: 15 * time.Second}, "fuzz": {Every: 20 * time.Second},
	})
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
	cmd.Env = append(os.Environ(), "FLEETD_TEST_MAIN=1")
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
	for time.Since(start) < dur {
		time.Sleep(every)
		s, err := scrapeSoak(base)
		if err != nil {
			t.Fatalf("scrape at %s: %v", time.Since(start).Round(time.Second), err)
		}
		s.at = time.Since(start)
		samples = append(samples, s)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Errorf("stop on SIGTERM: %v\n%s", err, tail(stderr.String(), 20))
	}
	f.proxy.SetRule(nil)
	t.Logf("faults injected: %v", f.proxy.Counts())
	var tbl strings.Builder
	tbl.WriteString("| time | RSS MiB | heap MiB | goroutines | open files |\n|---|---|---|---|---|\n")
	for _, s := range samples {
		fmt.Fprintf(&tbl, "| %s | %.1f | %.1f | %.0f | %.0f |\n", s.at.Round(time.Second), s.rss/(1<<20), s.heap/(1<<20), s.goroutines, s.fds)
	}
	t.Logf("\n%s", tbl.String())
	if len(samples) < 6 {
		t.Fatalf("%d samples: too few to judge", len(samples))
	}
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
	// Memory: the last third's median within 50 % of the middle third's.
	// Goroutines and open files follow the runs in flight at the moment of
	// a sample (16-42 files over the 30-minute soak), and a third of the
	// 60 s version is four samples: its median or floor moves with the
	// schedule. What a leak does is lift the whole last third above where
	// the middle third ever was: its floor above the middle third's
	// ceiling plus a small constant.
	for _, c := range []struct {
		what  string
		get   func(soakSample) float64
		ratio float64
	}{
		{"resident memory", func(s soakSample) float64 { return s.rss }, 1.5},
		{"heap in use", func(s soakSample) float64 { return s.heap }, 1.5},
	} {
		if m, l := med(mid, c.get), med(last, c.get); l > m*c.ratio {
			t.Errorf("%s grows after warm-up: median %.0f in the middle third, %.0f in the last", c.what, m, l)
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
			t.Errorf("%s grow after warm-up: at least %.0f all through the last third, at most %.0f in the middle third", c.what, floor, ceil)
		}
	}
	runs, findings := f.checkInvariants(t)
	t.Logf("%d runs, %d findings on chain over %s", runs, findings, dur)
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
		"go_goroutines": &s.goroutines, "process_open_fds": &s.fds}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	seen := 0
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if p, hit := want[name]; ok && hit {
			if v, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil {
				*p = v
				seen++
			}
		}
	}
	if seen != len(want) {
		return s, fmt.Errorf("/metrics has %d of the %d figures", seen, len(want))
	}
	return s, sc.Err()
}
