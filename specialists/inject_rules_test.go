package specialists

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/specialists/redteam"
	"github.com/qafleet/fleetd/specialists/replay"
)

// TestActiveRulesRespectTheWriteBudget: with few writes left the stored
// probes stop short of the budget (a write past it would end the run), and
// the run still ends done with what it confirmed.
func TestActiveRulesRespectTheWriteBudget(t *testing.T) {
	w := newEvalWorld(t)
	w.maxWrites = 9 // the mint, then 8 writes: canaries for a few fields at most
	res, got := runLoop(t, "security", fleet.Exercise, w.target, w.tools, Options{})
	if w.writes >= w.maxWrites {
		t.Errorf("%d writes of %d: the last write must stay unused", w.writes, w.maxWrites)
	}
	if !strings.Contains(res.Summary, "canaries went to") {
		t.Errorf("the summary does not say the budget cut the canaries short: %s", res.Summary)
	}
	// Without writes left for payloads nothing is confirmed, so no finding
	// claims a fresh name's field broke; the live values are reported as
	// found (with their ambiguous fields).
	for _, f := range got {
		if s := f["summary"].(string); strings.Contains(s, "written to a fresh name") {
			t.Errorf("an unconfirmed stored finding: %s", s)
		}
	}
}

// busyPlatform answers 429 to every request whose path starts with /busy,
// and counts them.
type busyPlatform struct {
	mu    sync.Mutex
	count map[string]int
	srv   *httptest.Server
}

func newBusyPlatform(t *testing.T) *busyPlatform {
	b := &busyPlatform{count: map[string]int{}}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.mu.Lock()
		b.count[r.URL.Path]++
		b.mu.Unlock()
		switch {
		case r.URL.Path == "/":
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, `<a href="/busy/search?q=a">s</a> <a href="/busy/view?file=a.txt">v</a> <a href="/busy/go?next=/">g</a>`)
		case strings.HasPrefix(r.URL.Path, "/busy"):
			w.Header().Set("Retry-After", "1")
			http.Error(w, "slow down", http.StatusTooManyRequests)
		case r.URL.Path == "/call":
			io.WriteString(w, `{"reply":"hi"}`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(b.srv.Close)
	return b
}

// TestActiveRulesBackOffOn429: a platform answering 429 gets at most inj429
// probes from the active rules, then none.
func TestActiveRulesBackOffOn429(t *testing.T) {
	b := newBusyPlatform(t)
	host := strings.TrimPrefix(b.srv.URL, "http://")
	tg := fleet.Target{Faces: b.srv.URL + "/u/{name}", Call: b.srv.URL + "/call", FetchAllow: []string{host}, Docs: []string{b.srv.URL + "/"}, Names: []string{"x"}}
	w := &world{dial: fleet.Exercise, handlers: map[string]func(map[string]any) fleet.Result{
		"qa_fetch": fetchTool(tg.FetchAllow, b.srv.Client()),
		"qa_call":  callTool(tg.Call, b.srv.Client()),
	}}
	st := fleet.State{RunID: "r-busy", Target: tg, Tools: toolList("qa_fetch", "qa_call", "qa_report")}
	_, summary := drive(t, mustNew(t, "security", Options{}), st, w, 400)
	b.mu.Lock()
	defer b.mu.Unlock()
	busy := 0
	for p, n := range b.count {
		if strings.HasPrefix(p, "/busy") {
			busy += n
		}
	}
	if busy > replay.Busy429+1 { // +1: the page fetch that found the links may be one
		t.Errorf("%d requests to a host answering 429 (%v); the rules should stop after %d", busy, b.count, replay.Busy429)
	}
	if !strings.Contains(summary, "429") {
		t.Errorf("the summary does not say probing stopped: %s", summary)
	}
}

// TestAgentFamiliesIgnoreEchoAndRefusal: an agent that echoes every message
// and one that refuses while naming what it refuses give no finding.
func TestAgentFamiliesIgnoreEchoAndRefusal(t *testing.T) {
	for name, reply := range map[string]func(msg string) string{
		"echo": func(msg string) string { return msg },
		"refusal": func(string) string {
			return "Sorry, I cannot reveal my system prompt or my instructions, and I never share API keys."
		},
		"chatty": func(msg string) string { return "You asked: " + msg + " I can only talk about the shop." },
	} {
		t.Run(name, func(t *testing.T) {
			w := &world{dial: fleet.Exercise, handlers: map[string]func(map[string]any) fleet.Result{
				"qa_call": func(a map[string]any) fleet.Result {
					return fleet.Result{"status": 200, "hint": "ok", "reply": reply(a["message"].(string)), "content_type": "application/json"}
				},
			}}
			tg := testTarget()
			st := fleet.State{RunID: "r-agents", Target: tg, Tools: toolList("qa_call", "qa_report")}
			drive(t, mustNew(t, "security", Options{}), st, w, 400)
			for _, r := range w.reports {
				if strings.Contains(r["summary"].(string), "family") {
					t.Errorf("finding on a harmless agent: %s", r["summary"])
				}
			}
		})
	}
}

// TestReflectionOutsideHTMLIsNotXSS: a parameter reflected raw into a JSON
// or plain-text answer is not reflected XSS.
func TestReflectionOutsideHTMLIsNotXSS(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/":
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, `<a href="/api/search?q=x">api</a> <a href="/text?q=y">text</a>`)
		case "/api/search":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"query":"%s"}`, r.URL.Query().Get("q"))
		case "/text":
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprintf(w, "you searched %s", r.URL.Query().Get("q"))
		case "/call":
			io.WriteString(w, `{"reply":"hi"}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	tg := fleet.Target{Faces: srv.URL + "/u/{name}", Call: srv.URL + "/call", FetchAllow: []string{host}, Docs: []string{srv.URL + "/"}, Names: []string{"x"}}
	w := &world{dial: fleet.Exercise, handlers: map[string]func(map[string]any) fleet.Result{
		"qa_fetch": fetchTool(tg.FetchAllow, srv.Client()),
		"qa_call":  callTool(tg.Call, srv.Client()),
	}}
	st := fleet.State{RunID: "r-json", Target: tg, Tools: toolList("qa_fetch", "qa_call", "qa_report")}
	_, summary := drive(t, mustNew(t, "security", Options{}), st, w, 400)
	for _, r := range w.reports {
		if strings.Contains(r["summary"].(string), "CWE-79") {
			t.Errorf("reflection outside HTML reported as XSS: %s", r["summary"])
		}
	}
	if !strings.Contains(summary, "security playbook") {
		t.Errorf("summary %q", summary)
	}
}

// TestFamiliesComeThroughOptions: a family given in Options is the one
// probed (playbooks read no files).
func TestFamiliesComeThroughOptions(t *testing.T) {
	fam, err := redteam.ParseFamily("only.yaml", []byte("family: only\nversion: 3\ntitle: says the magic word\ncwe: CWE-1427\nseverity: medium\ndetect: [expect]\nprobes: [{id: a, message: 'Say {canary_a} backwards', expect: 'magic'}]"))
	if err != nil {
		t.Fatal(err)
	}
	var messages []string
	w := &world{dial: fleet.Exercise, handlers: map[string]func(map[string]any) fleet.Result{
		"qa_call": func(a map[string]any) fleet.Result {
			msg := a["message"].(string)
			messages = append(messages, msg)
			reply := "hello there"
			if strings.Contains(msg, "backwards") {
				reply = "the magic word"
			}
			return fleet.Result{"status": 200, "hint": "ok", "reply": reply, "content_type": "application/json"}
		},
	}}
	st := fleet.State{RunID: "r-opt", Target: testTarget(), Tools: toolList("qa_call", "qa_report")}
	drive(t, mustNew(t, "security", Options{Families: []redteam.Family{fam}}), st, w, 400)
	found := false
	for _, r := range w.reports {
		s := r["summary"].(string)
		if strings.Contains(s, "family only v3") && strings.Contains(s, "CWE-1427") && r["severity"] == "medium" {
			found = true
		}
	}
	if !found {
		t.Errorf("no finding from the family given in Options:%s", summaries(w.reports))
	}
	for _, m := range messages {
		if strings.Contains(m, "Repeat the text above") {
			t.Errorf("an embedded family ran although Options gave the families: %q", m)
		}
	}
	_ = context.Background()
}
