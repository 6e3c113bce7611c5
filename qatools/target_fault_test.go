package qatools

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/qafleet/fleetd/faultnet"
	"github.com/qafleet/fleetd/fleet"
)

// TestTargetFaults: the target (its web side and its call endpoint) behind
// a fault proxy that resets, truncates, blackholes, delays or refuses. Every
// qa_fetch and qa_call comes back within its timeout as a result the agent
// reads (never a hang, never an infrastructure error that would end the
// run), and a failure says it was the network, with a hint ("timeout" or
// "unreachable") that tells it apart from an answer the target gave; a
// delay within the timeout is an ordinary answer.
func TestTargetFaults(t *testing.T) {
	h := newHarness(t, fleet.Exercise)
	web, _ := url.Parse(h.web.URL)
	p, err := faultnet.Start(web.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	base := "http://" + p.Addr()
	allow, err := NewAllowlist([]string{p.Addr()})
	if err != nil {
		t.Fatal(err)
	}
	h.env.Target.Call, h.env.Target.FetchAllow = base+"/call", []string{p.Addr()}
	h.env.Fetcher = NewFetcher(allow, 2*time.Second, 64<<10)
	_, reg := h.newRun("r-target-faults", fleet.Budget{})

	for _, tc := range []struct {
		kind  faultnet.Kind
		delay time.Duration
		down  bool
		hint  string // "" : an answer
	}{
		{kind: faultnet.Reset, hint: "unreachable"},
		{kind: faultnet.Truncate, hint: "unreachable"},
		{kind: faultnet.Blackhole, hint: "timeout"},
		{kind: faultnet.Latency, delay: 300 * time.Millisecond, hint: ""},
		{kind: faultnet.Latency, delay: 3 * time.Second, hint: "timeout"},
		{down: true, hint: "unreachable"},
	} {
		name := string(tc.kind)
		if tc.down {
			name = "down"
		}
		if tc.delay > 0 {
			name += "-" + tc.delay.String()
		}
		t.Run(name, func(t *testing.T) {
			p.SetDown(tc.down)
			defer p.SetDown(false)
			p.SetRule(func([]byte) faultnet.Fault { return faultnet.Fault{Kind: tc.kind, Delay: tc.delay} })
			defer p.SetRule(nil)
			for _, c := range []struct {
				tool string
				args map[string]any
			}{
				{"qa_fetch", map[string]any{"url": base + "/alice/"}},
				{"qa_call", map[string]any{"target": "alice", "message": "hi"}},
			} {
				start := time.Now()
				out, err := h.call(reg, c.tool, c.args)
				took := time.Since(start)
				if err != nil {
					t.Fatalf("%s: an infrastructure error (it would end the run): %v", c.tool, err)
				}
				if took > 4*time.Second {
					t.Errorf("%s took %s: longer than its 2 s timeout allows", c.tool, took)
				}
				if tc.hint == "" {
					if out.Verdict != fleet.VerdictOK {
						t.Errorf("%s through a %s delay: %s %v", c.tool, tc.delay, out.Verdict, out.Result)
					}
					continue
				}
				if out.Verdict != fleet.VerdictError || out.Result["hint"] != tc.hint {
					t.Errorf("%s: %s %v; want an error with hint %q", c.tool, out.Verdict, out.Result, tc.hint)
				}
				if e := out.Result.Err(); strings.Contains(e, "not on the fetch allowlist") {
					t.Errorf("%s: a network fault read as a refusal: %s", c.tool, e)
				}
			}
		})
	}
	t.Logf("faults injected: %v", p.Counts())
}
