package mcpserver_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/qafleet/fleetd/fleet/fleettest"
	"github.com/qafleet/fleetd/mcpserver"
	"github.com/qafleet/fleetd/trajectory"
)

// TestHTTPSessionsAreRuns: over streamable HTTP each session is its own run;
// closing a session (DELETE) ends its run and cleans up.
func TestHTTPSessionsAreRuns(t *testing.T) {
	r := newRig(t)
	a, ts := r.http("agent-a", mcpserver.HTTPOptions{})
	b := r.connectHTTP(ts.URL, "agent-b")
	call(t, a, "qa_read", map[string]any{"who": "a"})
	call(t, b, "qa_read", map[string]any{"who": "b"})
	obj, isErr := call(t, b, "qa_write", map[string]any{})
	if !isErr || errText(obj) != "refused: needs dial exercise, dial is observe" {
		t.Errorf("qa_write over HTTP at observe: %v", obj)
	}
	if n := r.srv.Running(); n != 2 {
		t.Errorf("%d runs running, want 2", n)
	}
	a.Close()
	first := r.waitRun()
	b.Close()
	second := r.waitRun()
	if first.RunID == second.RunID || r.cleanup.Load() != 2 {
		t.Fatalf("runs %s and %s, %d cleanups", first.RunID, second.RunID, r.cleanup.Load())
	}
	for _, res := range []struct {
		id    string
		turns int
	}{{first.RunID, 2}, {second.RunID, 3}} {
		rec := r.record(res.id)
		var hc struct {
			MCPClient mcpserver.Client `json:"mcp_client"`
		}
		json.Unmarshal(rec.Header.Config.(json.RawMessage), &hc)
		if hc.MCPClient.Transport != "http" || hc.MCPClient.SessionID == "" || !strings.HasPrefix(hc.MCPClient.Name, "agent-") {
			t.Errorf("%s header client %+v", res.id, hc.MCPClient)
		}
		if len(rec.Turns()) != res.turns || rec.Footer.Outcome != trajectory.OutcomeDone {
			t.Errorf("%s: %d turns, footer %+v", res.id, len(rec.Turns()), rec.Footer)
		}
	}
}

// TestHTTPClientGoneIdlesOut: a client that disappears without closing its
// session (killed) holds its run until the idle timeout; then the run ends
// and cleans up.
func TestHTTPClientGoneIdlesOut(t *testing.T) {
	r := newRig(t)
	cs, _ := r.http("doomed", mcpserver.HTTPOptions{IdleTimeout: 400 * time.Millisecond})
	_ = cs // abandoned: never closed, as by a client killed mid-session
	// Timed from before the call: the idle timer can only start after the
	// call was sent, but its answer may reach this goroutine late (under
	// load), and timing from then could read less than the timeout.
	start := time.Now()
	call(t, cs, "qa_read", map[string]any{})
	res := r.waitRun()
	if res.Outcome != trajectory.OutcomeDone || !strings.Contains(res.Summary, "session closed") || r.cleanup.Load() != 1 {
		t.Errorf("run ended %s (%s), cleanups %d", res.Outcome, res.Summary, r.cleanup.Load())
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("run ended after %s, before the idle timeout", d)
	}
}

// TestMaxRuns: sessions beyond the cap get a tool error, not a run.
func TestMaxRuns(t *testing.T) {
	r := newRig(t, func(_ *rig, c *mcpserver.Config) { c.MaxRuns = 1 })
	a, ts := r.http("first", mcpserver.HTTPOptions{})
	b := r.connectHTTP(ts.URL, "second")
	call(t, a, "qa_read", map[string]any{})
	obj, isErr := call(t, b, "qa_read", map[string]any{})
	if !isErr || errText(obj) != "no run started: 1 sessions are already running a run (the limit): try again when one ends" {
		t.Errorf("second session: %v", obj)
	}
	a.Close()
	r.waitRun()
	fleettest.WaitFor(t, 10*time.Second, "the first session's run slot to be released", func() bool { return r.srv.Running() == 0 })
	if obj, isErr := call(t, b, "qa_read", map[string]any{}); isErr {
		t.Errorf("second session after the first ended: %v", obj)
	}
	b.Close()
	r.waitRun()
}

// TestHTTPRefusesRebindingAndCrossOrigin: a loopback server answers only
// loopback Host headers (DNS rebinding) and no cross-site browser requests.
func TestHTTPRefusesRebindingAndCrossOrigin(t *testing.T) {
	r := newRig(t)
	cs, ts := r.http("ok", mcpserver.HTTPOptions{})
	defer cs.Close()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	tests := []struct {
		name   string
		header map[string]string
		host   string
		want   int
	}{
		{"loopback host", nil, "", http.StatusOK},
		{"rebound host", nil, "evil.example.com", http.StatusForbidden},
		{"cross-site browser", map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example.com"}, "", http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			for k, v := range tt.header {
				req.Header.Set(k, v)
			}
			if tt.host != "" {
				req.Host = tt.host
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("status %d, want %d", resp.StatusCode, tt.want)
			}
		})
	}
}
