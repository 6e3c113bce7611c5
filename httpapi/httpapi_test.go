package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/trajectory"
)

func TestServer(t *testing.T) {
	m := NewMetrics()
	m.Observe(fleet.RunnerEvent{Kind: "started", Specialist: "fuzz"})
	m.Observe(fleet.RunnerEvent{Kind: "finished", Specialist: "fuzz", Result: fleet.RunResult{Outcome: trajectory.OutcomeDone, Totals: trajectory.Totals{Findings: 2},
		Degraded: []trajectory.Degradation{{Component: "libfuzzer engine", Fallback: "go test -fuzz", Cause: "on FuzzX: x_test.go:3:1: undefined: y"}}}})
	m.Observe(fleet.RunnerEvent{Kind: "skipped", Specialist: "ux"})
	s, err := Start("127.0.0.1:0", m, func() Status { return Status{Dial: "observe", Running: []string{"perf"}} }, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + s.Addr() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("healthz %d %q", code, body)
	}
	code, body := get("/metrics")
	for _, want := range []string{`fleetd_runs_finished_total{outcome="done",specialist="fuzz"} 1`, `fleetd_findings_total{specialist="fuzz"} 2`, `fleetd_runs_skipped_total{specialist="ux"} 1`, "fleetd_runs_running 0", `fleetd_runs_degraded_total{component="libfuzzer engine",specialist="fuzz"} 1`} {
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	_, body = get("/api/status")
	var st Status
	if err := json.Unmarshal([]byte(body), &st); err != nil || st.Dial != "observe" || st.Running[0] != "perf" {
		t.Errorf("status %q %v", body, err)
	}
	if code, _ := get("/nope"); code != 404 {
		t.Errorf("unknown path %d", code)
	}
}

func TestStartWithConsole(t *testing.T) {
	closed := make(chan struct{})
	console := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("console " + r.URL.Path)) })
	s, err := StartWith(Options{Addr: "127.0.0.1:0", Metrics: NewMetrics(), Status: func() Status { return Status{Dial: "observe"} },
		Console: console, OnShutdown: func() { close(closed) }, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string) string {
		resp, err := http.Get("http://" + s.Addr() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if got := get("/healthz"); got != "ok\n" {
		t.Errorf("healthz went to %q", got)
	}
	if got := get("/api/status"); !strings.Contains(got, `"dial":"observe"`) {
		t.Errorf("status %q", got)
	}
	if got := get("/runs"); got != "console /runs" {
		t.Errorf("other paths: %q", got)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Error("OnShutdown did not run")
	}
}

// TestMetricsFuzzStats: the fuzz statistics are read at each scrape and
// exported per target and engine; a figure an engine does not have (edges
// of the built-in engine, new coverage never found) is left out.
func TestMetricsFuzzStats(t *testing.T) {
	m := NewMetrics()
	scrape := func() string {
		w := httptest.NewRecorder()
		promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}).ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
		return w.Body.String()
	}
	if body := scrape(); strings.Contains(body, "fleetd_fuzz_") {
		t.Errorf("fuzz series without statistics:\n%s", body)
	}
	n := 0
	m.SetFuzzStats(func() []FuzzStat {
		n++
		return []FuzzStat{
			{Target: "go-0123456789abcdef", Engine: "libfuzzer", Sessions: 3, ExecsPerSec: 3200, ExecsPerCPUSec: 3410, Coverage: 812, Features: 2400, CorpusSize: 57, SinceNewCoverage: 90 * time.Second, CrashStates: 2},
			{Target: "compiler-fedcba9876543210", Engine: "builtin", Sessions: 1, ExecsPerSec: 150, CorpusSize: 9, SinceNewCoverage: -1},
		}
	})
	body := scrape()
	for _, want := range []string{
		`fleetd_fuzz_execs_per_second{engine="libfuzzer",target="go-0123456789abcdef"} 3200`,
		`fleetd_fuzz_execs_per_cpu_second{engine="libfuzzer",target="go-0123456789abcdef"} 3410`,
		`fleetd_fuzz_coverage_edges{engine="libfuzzer",target="go-0123456789abcdef"} 812`,
		`fleetd_fuzz_coverage_features{engine="libfuzzer",target="go-0123456789abcdef"} 2400`,
		`fleetd_fuzz_corpus_size{engine="builtin",target="compiler-fedcba9876543210"} 9`,
		`fleetd_fuzz_seconds_since_new_coverage{engine="libfuzzer",target="go-0123456789abcdef"} 90`,
		`fleetd_fuzz_crash_states{engine="libfuzzer",target="go-0123456789abcdef"} 2`,
		`fleetd_fuzz_sessions{engine="builtin",target="compiler-fedcba9876543210"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	for _, absent := range []string{`fleetd_fuzz_coverage_edges{engine="builtin"`, `fleetd_fuzz_seconds_since_new_coverage{engine="builtin"`} {
		if strings.Contains(body, absent) {
			t.Errorf("metrics hold %q", absent)
		}
	}
	if n != 1 {
		t.Errorf("statistics read %d times for one scrape", n)
	}
}

// TestMetricsScheduleStats: the triggers' fair-share figures are read at
// each scrape, one series per specialist.
func TestMetricsScheduleStats(t *testing.T) {
	m := NewMetrics()
	scrape := func() string {
		w := httptest.NewRecorder()
		promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}).ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
		return w.Body.String()
	}
	if body := scrape(); strings.Contains(body, "fleetd_specialist_") {
		t.Errorf("schedule series before any statistics:\n%s", body)
	}
	m.SetScheduleStats(func() []ScheduleStat {
		return []ScheduleStat{
			{Specialist: "perf", Starved: true, Waiting: 130 * time.Second, LongestWait: 21 * time.Second},
			{Specialist: "smoke"},
		}
	})
	body := scrape()
	for _, want := range []string{
		`fleetd_specialist_starved{specialist="perf"} 1`,
		`fleetd_specialist_starved{specialist="smoke"} 0`,
		`fleetd_specialist_waiting_seconds{specialist="perf"} 130`,
		`fleetd_specialist_longest_wait_seconds{specialist="perf"} 21`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}
