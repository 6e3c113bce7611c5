package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/fleet/trajectory"
)

func TestServer(t *testing.T) {
	m := NewMetrics()
	m.Observe(fleet.RunnerEvent{Kind: "started", Specialist: "fuzz"})
	m.Observe(fleet.RunnerEvent{Kind: "finished", Specialist: "fuzz", Result: fleet.RunResult{Outcome: trajectory.OutcomeDone, Totals: trajectory.Totals{Findings: 2}}})
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
	for _, want := range []string{`fleetd_runs_finished_total{outcome="done",specialist="fuzz"} 1`, `fleetd_findings_total{specialist="fuzz"} 2`, `fleetd_runs_skipped_total{specialist="ux"} 1`, "fleetd_runs_running 0"} {
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
