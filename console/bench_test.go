//go:build unix

package console

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/qafleet/fleetd/fleet"
)

// cpuNow is the process's user+system CPU time. Reported per op next to
// the wall time: on a shared machine it moves much less with the load.
func cpuNow(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func reportCPU(b *testing.B, since time.Duration) {
	b.ReportMetric(float64((cpuNow(b)-since).Microseconds())/1000/float64(b.N), "cpu-ms/op")
}

// bigReport is a report of n clusters with realistic text lengths.
func bigReport(n int, now time.Time) fleet.Report {
	sevs := []fleet.Severity{fleet.SeverityCritical, fleet.SeverityHigh, fleet.SeverityMedium, fleet.SeverityLow, fleet.SeverityInfo}
	surfaces := []fleet.Surface{fleet.SurfaceCompiler, fleet.SurfaceFace, fleet.SurfaceRegistry, fleet.SurfaceDocs, fleet.SurfaceCall}
	states := []fleet.ClusterState{fleet.ClusterOpen, fleet.ClusterOpen, fleet.ClusterOpen, fleet.ClusterRegressed, fleet.ClusterResolved, fleet.ClusterFalsePositive}
	r := fleet.Report{Schema: 1, GeneratedAt: now, Head: uint64(3 * n), Totals: fleet.ReportTotals{Clusters: n}}
	for i := range n {
		st := states[i%len(states)]
		if st == fleet.ClusterOpen || st == fleet.ClusterRegressed {
			r.Totals.Open++
		}
		r.Clusters = append(r.Clusters, fleet.Cluster{
			Rank: i + 1, ID: fmt.Sprintf("%016x", i*7919), Score: float64(n - i), Severity: sevs[i%len(sevs)], Surface: surfaces[i%len(surfaces)],
			Title: fmt.Sprintf("Compiler crash on a %d-byte input (minimized with 40 compiles from a 380-byte mutant of a seed): panic: index out of range <%d>", i%97, i),
			State: st, Trusted: i%9 != 0, Count: 1 + i%13, Runs: 1 + i%5, Sources: []string{"qa-fuzz", "qa-security"},
			FirstSeen: now.Add(-time.Duration(i) * time.Minute), LastSeen: now.Add(-time.Duration(i) * time.Second),
			Repro:   &fleet.Repro{Tool: "qa_compile", Args: []byte(fmt.Sprintf(`{"source":"enum E%d{}"}`, i))},
			Entries: []uint64{uint64(i), uint64(i + n)},
		})
	}
	return r
}

// newBigFixture writes a 10,000-cluster latest report and 500 dated copies
// of 100 clusters each (triage's defaults).
func newBigFixture(b *testing.B) *fixture {
	f := newFixture(b)
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	writeJSONFile(b, filepath.Join(f.dir, "reports", latestJSON), bigReport(10_000, now))
	for i := range 500 {
		h := bigReport(100, now.Add(-time.Duration(500-i)*time.Hour))
		writeJSONFile(b, filepath.Join(f.dir, "reports", historyDir, h.GeneratedAt.Format(historyLayout)+".json"), h)
	}
	f.do("GET", "/", "", nil) // decode and cache once, as the first page view does
	return f
}

// BenchmarkHealthPage10k is the Health page (first 200 rows, the trend over
// 500 dated reports, a sparkline per row) on a report of 10,000 clusters,
// served from the cache.
func BenchmarkHealthPage10k(b *testing.B) {
	f := newBigFixture(b)
	for _, q := range []string{"/", "/?state=open&severity=high", "/?page=40"} {
		b.Run(strings.NewReplacer("/", "", "?", "", "&", ",").Replace(q), func(b *testing.B) {
			b.ReportAllocs()
			var n int
			c0 := cpuNow(b)
			for b.Loop() {
				w := f.do("GET", q, "", nil)
				if w.Code != 200 {
					b.Fatalf("%d", w.Code)
				}
				n = w.Body.Len()
			}
			reportCPU(b, c0)
			b.ReportMetric(float64(n), "page-bytes")
		})
	}
}

// BenchmarkHealthAll10k renders all 10,000 rows as the self-contained HTML
// report file.
func BenchmarkHealthAll10k(b *testing.B) {
	f := newBigFixture(b)
	rep, _ := f.c.reports.Latest()
	hist, _ := f.c.reports.History()
	b.ReportAllocs()
	var buf bytes.Buffer
	c0 := cpuNow(b)
	for b.Loop() {
		buf.Reset()
		if err := RenderReport(&buf, rep, hist, 0, time.Now()); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, c0)
	b.ReportMetric(float64(buf.Len()), "file-bytes")
}

// BenchmarkDecodeReport10k is the cost of a new latest.json (triage wrote
// one): decoding 10,000 rows.
func BenchmarkDecodeReport10k(b *testing.B) {
	f := newBigFixture(b)
	raw, _ := readFileForBench(filepath.Join(f.dir, "reports", latestJSON))
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if _, err := DecodeReport(raw); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSSEFanout100 publishes one event to 100 connected SSE clients
// (real HTTP on loopback) and waits until every client has read it.
func BenchmarkSSEFanout100(b *testing.B) {
	const clients = 100
	f := newFixture(b)
	f.c.cfg.Loopback = false
	srv := httptest.NewServer(f.c)
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan struct{}, clients*64)
	ready := make(chan struct{}, clients)
	tr := &http.Transport{MaxConnsPerHost: 0, MaxIdleConnsPerHost: clients}
	cl := &http.Client{Transport: tr}
	for range clients {
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/api/events", nil)
		resp, err := cl.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		go func() {
			defer resp.Body.Close()
			r := bufio.NewReader(resp.Body)
			ready <- struct{}{}
			for {
				line, err := r.ReadSlice('\n')
				if err != nil {
					return
				}
				if bytes.HasPrefix(line, []byte("data: ")) {
					got <- struct{}{}
				}
			}
		}()
	}
	for range clients {
		<-ready
	}
	for f.c.hub.Subscribers() < clients {
		time.Sleep(time.Millisecond)
	}
	b.ReportAllocs()
	c0 := cpuNow(b)
	for b.Loop() {
		f.c.Publish(Event{Kind: KindFinding, Severity: "high", Surface: "compiler", Text: "compile panic on enum E{} with no variants, expected a clean error"})
		for range clients {
			<-got
		}
	}
	reportCPU(b, c0) // server and the 100 clients: one process
	b.ReportMetric(float64(clients), "clients")
}

func readFileForBench(p string) ([]byte, error) {
	f, err := http.Dir(filepath.Dir(p)).Open(filepath.Base(p))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}
