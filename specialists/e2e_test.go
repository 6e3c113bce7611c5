package specialists

// End-to-end runs of every playbook through the real agent loop (fleet.Run:
// dial gate, validation, run record) against a small flawed platform of this
// test's own: a real HTTP server for faces, docs and the call endpoint, plus
// in-memory chain and compiler tools. Its flaws are the same classes as the
// testbed's but spelled differently (another language, other paths, other
// headers), which is the point: the playbooks must find them generically.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/fleet/fleettest"
	"github.com/qafleet/fleetd/specialists/replay"
	"github.com/qafleet/fleetd/trajectory"
)

const leakedStripe = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"

// platform is the flawed platform under test.
type platform struct {
	t    *testing.T
	srv  *httptest.Server
	host string
	mu   sync.Mutex
	meta map[string]map[string]string // name -> field -> value
	seq  int
	// stalls: how many of the next answers of a kind to a name ("face
	// carol", "call carol") stall for 250 ms, as a loaded machine's would,
	// besides dave's every answer.
	stalls map[string]int
}

// slow is whether the answer of kind ("face", "call") to name is slow now:
// dave's always, another's while it has stalls left.
func (pl *platform) slow(kind, name string) bool {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if k := kind + " " + name; pl.stalls[k] > 0 {
		pl.stalls[k]--
		return true
	}
	return name == "dave"
}

func newPlatform(t *testing.T) *platform {
	pl := &platform{t: t, meta: map[string]map[string]string{
		"carol": {"title": "Carol", "face": "<p>Carol's recipes</p>"},
		"dave":  {"title": "Dave", "face": "<p>Dave</p>", "bio": `I bake. <img src=x onerror=steal(document.cookie)>`},
		"erin":  {"title": "Erin", "face": "<p>Erin</p>"},
	}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /docs/index.md", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/markdown")
		fmt.Fprintf(w, "# Recipes platform\n\n- [API](%s/docs/api.md)\n- [Tutorial](/docs/tutorial.md)\n- [Config](/config.json)\n\nEvery user has a page at %s/u/{name}.\n", pl.srv.URL, pl.srv.URL)
	})
	mux.HandleFunc("GET /docs/api.md", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/markdown")
		io.WriteString(w, "# API\n\nAsk an agent:\n\n```\nGET /api/agent?target=NAME&q=hi\n```\n\n`POST /api/agent` also works.\n")
	})
	mux.HandleFunc("GET /config.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"env":"prod","billing":{"stripe_key":"%s"}}`, leakedStripe)
	})
	mux.HandleFunc("GET /.git/config", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "[core]\n\trepositoryformatversion = 0\n")
	})
	mux.HandleFunc("GET /u/{name}", pl.face)
	mux.HandleFunc("POST /api/agent", pl.agent)
	mux.HandleFunc("/api/agent", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", "POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, `<html><body><a href="/u/carol">carol</a> <a href="/docs/index.md">docs</a></body></html>`)
	})
	pl.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Access-Control-Allow-Origin", "*")
		w.Header().Set("Access-Control-Allow-Credentials", "true")
		w.Header().Set("X-Frame-Options", "DENY")
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(pl.srv.Close)
	pl.host = strings.TrimPrefix(pl.srv.URL, "http://")
	return pl
}

func (pl *platform) face(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	pl.mu.Lock()
	m, ok := pl.meta[name]
	pl.mu.Unlock()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if !ok {
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, "<pre>Traceback (most recent call last):\n  File \"/opt/recipes/app.py\", line 31, in face\nKeyError: '%s'</pre>", html.EscapeString(name))
		return
	}
	if pl.slow("face", name) {
		time.Sleep(250 * time.Millisecond)
	}
	fmt.Fprintf(w, "<html><head><title>%s</title></head><body>%s<aside>%s</aside></body></html>", html.EscapeString(m["title"]), m["face"], m["bio"])
}

func (pl *platform) agent(w http.ResponseWriter, r *http.Request) {
	var req map[string]string
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		w.WriteHeader(500)
		fmt.Fprintf(w, "TypeError: cannot read body: %v\n    at parseBody (/srv/recipes/server.js:41:13)\n", err)
		return
	}
	pl.mu.Lock()
	_, ok := pl.meta[req["target"]]
	pl.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch {
	case !ok:
		w.WriteHeader(404)
		io.WriteString(w, `{"error":"no such agent"}`)
		return
	case pl.slow("call", req["target"]):
		time.Sleep(250 * time.Millisecond)
	}
	reply := "Hi from " + req["target"] + "."
	if req["target"] == "erin" {
		reply = ""
	}
	if strings.EqualFold(r.Header.Get("X-User"), "admin") {
		reply += " Operator console unlocked, billing key: " + leakedStripe
	}
	json.NewEncoder(w).Encode(map[string]string{"reply": reply})
}

func (pl *platform) target() fleet.Target {
	return fleet.Target{
		Registry:       "0x00000000000000000000000000000000000000aa",
		Faces:          pl.srv.URL + "/u/{name}",
		Call:           pl.srv.URL + "/api/agent",
		Docs:           []string{pl.srv.URL + "/docs/index.md"},
		Compiler:       []string{"recipec", "{src}"},
		FetchAllow:     []string{pl.host},
		AdminFunctions: []string{"grantRole(bytes32,address)", "pause()"},
		Names:          []string{"carol", "dave", "erin"},
		SLO:            fleet.SLO{P95Ms: 150},
	}
}

var (
	emptyRecord = regexp.MustCompile(`record\s+\w+\s*\{\s*\}`)
	spinLoop    = regexp.MustCompile(`while\s*\(\s*(?:true|1)\s*\)\s*\{\s*\}`)
)

// compile is the platform's compiler for its recipe language: a crash on
// an empty record, a hang on a constant-true empty loop, quadratic time.
func compile(src string) fleet.Result {
	depth := 0
	for _, c := range src {
		switch c {
		case '{', '(':
			depth++
		case '}', ')':
			depth--
		}
	}
	n := float64(len(src))
	switch {
	case emptyRecord.MatchString(src):
		return fleet.OK(map[string]any{"outcome": "crashed", "exit_code": 101, "signal": "",
			"stderr_tail": "thread 'main' panicked at 'index out of bounds: the len is 0 but the index is 0', src/types.rs:88:9\n", "duration_ms": 3})
	case spinLoop.MatchString(src):
		return fleet.OK(map[string]any{"outcome": "timeout", "exit_code": -1, "signal": "SIGKILL", "stderr_tail": "", "duration_ms": 10000})
	case depth != 0:
		return fleet.OK(map[string]any{"outcome": "rejected", "exit_code": 1, "stderr_tail": "1:1: unbalanced brackets", "duration_ms": 2})
	}
	return fleet.OK(map[string]any{"outcome": "compiled", "exit_code": 0, "signal": "", "stderr_tail": "", "bytes": len(src), "duration_ms": int64(2 + n*n/2e8)})
}

var recipeCorpus = []string{
	"// cakes\nrecord Cake { flour, sugar }\nlet size = 3;\nwhile (size > 0) { size = size - 1; }\nprint \"done\";\n",
	"let n = 42;\nprint n;\n",
}

// tools builds the run's registry over the platform.
func (pl *platform) tools(runID string, findings *[]map[string]any) *fleet.Registry {
	reg := fleet.NewRegistry()
	add := func(name string, rung fleet.Dial, fn func(a map[string]any) fleet.Result) {
		tool, _ := fleettest.Tool(name, rung, func(ctx context.Context, raw json.RawMessage) (fleet.Result, error) {
			var a map[string]any
			if err := json.Unmarshal(raw, &a); err != nil {
				return fleet.Fail("bad args: %v", err), nil
			}
			return fn(a), nil
		})
		if err := reg.Add(tool); err != nil {
			pl.t.Fatal(err)
		}
	}
	add("qa_fetch", fleet.Observe, fetchTool([]string{pl.host}, pl.srv.Client()))
	add("qa_call", fleet.Exercise, callTool(pl.srv.URL+"/api/agent", pl.srv.Client()))
	add("qa_compile", fleet.Observe, func(a map[string]any) fleet.Result { return compile(fmt.Sprint(a["source"])) })
	add("qa_chain", fleet.Observe, func(a map[string]any) fleet.Result {
		params, _ := a["params"].([]any)
		switch a["method"] {
		case "simulate":
			return fleet.OK(map[string]any{"signature": params[0], "from": "0x1111111111111111111111111111111111111111", "reverted": params[0] == "pause()"})
		case "metadata":
			pl.mu.Lock()
			defer pl.mu.Unlock()
			v := pl.meta[fmt.Sprint(params[0])][fmt.Sprint(params[1])]
			return fleet.OK(map[string]any{"result": v, "bytes": len(v)})
		}
		return fleet.Fail("unknown method")
	})
	add("qa_create", fleet.Exercise, func(map[string]any) fleet.Result {
		pl.mu.Lock()
		defer pl.mu.Unlock()
		name := fmt.Sprintf("qa-%s-%d", runID, pl.seq)
		pl.seq++
		pl.meta[name] = map[string]string{}
		return fleet.OK(map[string]any{"name": name, "owner": "0x2222222222222222222222222222222222222222", "tx": "0xabc", "owner_verified": true})
	})
	add("qa_publish", fleet.Exercise, func(a map[string]any) fleet.Result {
		if key, ok := a["key"].(string); ok { // {name, key, text}
			pl.mu.Lock()
			defer pl.mu.Unlock()
			m, ok := pl.meta[fmt.Sprint(a["name"])]
			if !ok {
				return fleet.Fail("refused: not minted by this run")
			}
			m[key] = fmt.Sprint(a["text"])
			return fleet.OK(map[string]any{"tx": "0xdef", "gas_used": 40000})
		}
		src := fmt.Sprint(a["source"])
		if c := compile(src); c["outcome"] != "compiled" {
			return fleet.Fail("qa_publish: source did not compile (%v)", c["outcome"])
		}
		pl.mu.Lock()
		defer pl.mu.Unlock()
		m, ok := pl.meta[fmt.Sprint(a["name"])]
		if !ok {
			return fleet.Fail("refused: not minted by this run")
		}
		m["face"] = src
		return fleet.OK(map[string]any{"tx": "0xdef", "gas_estimated": 50000, "gas_used": 61000, "revert_reason": ""})
	})
	add("qa_report", fleet.Observe, func(a map[string]any) fleet.Result {
		*findings = append(*findings, a)
		return fleet.OK(map[string]any{"status": "posted", "entry_id": len(*findings)})
	})
	return reg
}

// fetchTool is qa_fetch over real HTTP, with the real tool's result fields.
func fetchTool(allow []string, client *http.Client) func(a map[string]any) fleet.Result {
	return func(a map[string]any) fleet.Result {
		u, _ := a["url"].(string)
		if !replay.AllowedURL(allow, u) {
			return fleet.Fail("not on the fetch allowlist: %s", u)
		}
		method, _ := a["method"].(string)
		if method == "" {
			method = http.MethodGet
		}
		req, err := http.NewRequest(method, u, nil)
		if err != nil {
			return fleet.Fail("bad url %q: %v", u, err)
		}
		if o, _ := a["origin"].(string); o != "" {
			req.Header.Set("Origin", o)
			if method == http.MethodOptions {
				req.Header.Set("Access-Control-Request-Method", http.MethodPost)
				req.Header.Set("Access-Control-Request-Headers", "content-type")
			}
		}
		resp, err := client.Do(req)
		if err != nil {
			return fleet.Fail("fetch %s: %v", u, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<10))
		hd := map[string]any{}
		for _, k := range []string{"Content-Type", "Content-Security-Policy", "X-Frame-Options", "X-Content-Type-Options", "Access-Control-Allow-Origin", "Access-Control-Allow-Credentials", "Access-Control-Allow-Methods", "Allow"} {
			if v := resp.Header.Get(k); v != "" {
				hd[strings.ToLower(k)] = v
			}
		}
		return fleet.OK(map[string]any{"method": method, "status": resp.StatusCode, "content_type": resp.Header.Get("Content-Type"), "body": string(b), "headers": hd, "bytes": len(b), "final_url": resp.Request.URL.String()})
	}
}

// callTool is qa_call over real HTTP, with the real tool's result fields.
func callTool(callURL string, client *http.Client) func(a map[string]any) fleet.Result {
	return func(a map[string]any) fleet.Result {
		body := []byte(fmt.Sprint(a["raw_body"]))
		if a["raw_body"] == nil {
			req := map[string]any{"target": a["target"], "message": a["message"]}
			if a["from"] != nil {
				req["from"] = a["from"]
			}
			body, _ = json.Marshal(req)
		}
		req, _ := http.NewRequest(http.MethodPost, callURL, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if ct, _ := a["content_type"].(string); ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		if h, ok := a["headers"].(map[string]any); ok {
			for k, v := range h {
				req.Header.Set(k, fmt.Sprint(v))
			}
		}
		resp, err := client.Do(req)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return fleet.Result{"ok": false, "error": err.Error(), "hint": "timeout"}
			}
			return fleet.Result{"ok": false, "error": err.Error(), "hint": "unreachable"}
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<10))
		var v struct{ Reply *string }
		reply, isJSON := string(raw), false
		if json.Unmarshal(raw, &v) == nil && v.Reply != nil {
			reply, isJSON = *v.Reply, true
		}
		hint := "ok"
		switch {
		case resp.StatusCode >= 500 && strings.Contains(string(raw), "goroutine "):
			hint = "server_error_with_trace"
		case resp.StatusCode >= 500:
			hint = "server_error"
		case resp.StatusCode == 405:
			hint = "method_not_allowed"
		case resp.StatusCode == 401 || resp.StatusCode == 403:
			hint = "unauthorized"
		case resp.StatusCode == 404:
			hint = "not_found"
		case resp.StatusCode >= 400:
			hint = "client_error"
		case !isJSON:
			hint = "not_json"
		case strings.TrimSpace(reply) == "":
			hint = "empty_reply"
		}
		return fleet.OK(map[string]any{"status": resp.StatusCode, "reply": reply, "json": isJSON, "hint": hint, "content_type": resp.Header.Get("Content-Type")})
	}
}

// run runs one playbook through fleet.Run at dial against the platform.
func (pl *platform) run(name string, dial fleet.Dial, opts Options) (fleet.RunResult, []map[string]any) {
	pl.t.Helper()
	return runLoop(pl.t, name, dial, pl.target(), pl.tools, opts)
}

// runLoop runs one playbook through the real agent loop with the tools
// tools builds, and checks that it ends done and that every finding fits
// a feedback entry.
func runLoop(t *testing.T, name string, dial fleet.Dial, target fleet.Target, tools func(runID string, findings *[]map[string]any) *fleet.Registry, opts Options) (fleet.RunResult, []map[string]any) {
	t.Helper()
	return runLoopIn(t, filepath.Join(t.TempDir(), "runs"), name, dial, target, tools, opts)
}

// runLoopIn is runLoop writing the run record under dir.
func runLoopIn(t *testing.T, dir, name string, dial fleet.Dial, target fleet.Target, tools func(runID string, findings *[]map[string]any) *fleet.Registry, opts Options) (fleet.RunResult, []map[string]any) {
	t.Helper()
	runID := "r-" + name + "-" + dial.String()
	w, err := trajectory.Create(dir, runID, trajectory.Header{RunID: runID, Specialist: name})
	if err != nil {
		t.Fatal(err)
	}
	var findings []map[string]any
	res, err := fleet.Run(context.Background(), fleet.LoopConfig{
		RunID: runID, Specialist: name, Target: target, Model: mustNew(t, name, opts),
		Tools: tools(runID, &findings), Dial: fleettest.Dial(dial),
		Meter: &fleettest.Meter{Budget: fleet.Budget{MaxTurns: 400}}, Record: w,
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Outcome != trajectory.OutcomeDone {
		t.Fatalf("%s at %s ended %s: %s (%v)", name, dial, res.Outcome, res.Summary, res.Err)
	}
	checkEnvelopes(t, "qa-"+name, runID, findings)
	t.Logf("%s at %s: %d turns, %d refusals\nsummary: %s\nfindings:%s", name, dial, res.Totals.Turns, res.Totals.Refusals, res.Summary, summaries(findings))
	return res, findings
}

// expect checks that each want (a list of words) matches one finding with
// the given surface, and that there are no findings beyond those.
func expect(t *testing.T, findings []map[string]any, want map[string][]string) {
	t.Helper()
	for label, words := range want {
		surface, words := words[0], words[1:]
		r := findReport(findings, words...)
		if r == nil || r["surface"] != surface {
			t.Errorf("missing %s finding (%s %v):%s", label, surface, words, summaries(findings))
		}
	}
	if len(findings) != len(want) {
		t.Errorf("%d findings, want %d:%s", len(findings), len(want), summaries(findings))
	}
}

func TestEndToEndSecurity(t *testing.T) {
	pl := newPlatform(t)
	_, got := pl.run("security", fleet.Exercise, Options{Corpus: recipeCorpus})
	expect(t, got, map[string][]string{
		"admin function":   {"registry", "grantRole(bytes32,address)", "does not revert"},
		"secret in config": {"web", "/config.json", "Stripe live key"},
		"exposed git":      {"web", "git repository metadata"},
		// One bug, one finding: the bio field renders unescaped; the canary
		// proves it and the existing name "dave" already serving a live
		// payload there is named in the same finding.
		"stored xss face":  {"face", "CWE-79", `field "face"`, "element text", "became an element"},
		"stored xss bio":   {"face", "CWE-79", `field "bio"`, "element text", "became an element", `"dave"`},
		"spoofed header":   {"call", "X-User", "Stripe live key"},
		"cors":             {"cors", "Access-Control-Allow-Credentials"},
		"security headers": {"headers", "Content-Security-Policy", "X-Content-Type-Options"},
	})
	for _, f := range got {
		if strings.Contains(fmt.Sprint(f), leakedStripe) {
			t.Errorf("a finding repeats the secret: %v", f)
		}
	}
	if r := findReport(got, "admin function"); r != nil {
		if rp, _ := json.Marshal(r["repro"]); string(rp) != `{"args":{"method":"simulate","params":["grantRole(bytes32,address)"]},"tool":"qa_chain"}` {
			t.Errorf("admin repro %s", rp)
		}
	}
}

func TestEndToEndSecurityObserve(t *testing.T) {
	pl := newPlatform(t)
	res, got := pl.run("security", fleet.Observe, Options{Corpus: recipeCorpus})
	expect(t, got, map[string][]string{
		"admin function":   {"registry", "grantRole"},
		"secret in config": {"web", "/config.json"},
		"exposed git":      {"web", "git repository metadata"},
		"stored xss (bio)": {"face", "stored xss", `"bio"`},
		"cors":             {"cors", "Access-Control-Allow-Credentials"},
		"security headers": {"headers", "Content-Security-Policy"},
	})
	if res.Totals.Refusals > 2 {
		t.Errorf("%d refused calls at observe; the playbook should stop trying", res.Totals.Refusals)
	}
}

func TestEndToEndFuzz(t *testing.T) {
	pl := newPlatform(t)
	res, got := pl.run("fuzz", fleet.Exercise, Options{Corpus: recipeCorpus})
	expect(t, got, map[string][]string{
		"crash":          {"compiler", "crash", "index out of bounds"},
		"hang":           {"compiler", "hang"},
		"malformed body": {"call", "HTTP 500", "grammar requests", "stack trace"},
	})
	for _, f := range got {
		rp, _ := f["repro"].(map[string]any)
		args, _ := rp["args"].(map[string]any)
		if f["surface"] != "compiler" {
			continue
		}
		src, _ := args["source"].(string)
		if len(src) > 20 {
			t.Errorf("reproducer not minimized (%d bytes): %q", len(src), src)
		}
		if out := compile(src)["outcome"]; out != "crashed" && out != "timeout" {
			t.Errorf("minimized reproducer %q no longer fails: %v", src, out)
		}
	}
	if res.Totals.ToolCalls > DefaultCap("fuzz") {
		t.Errorf("%d calls over the cap", res.Totals.ToolCalls)
	}
}

func TestEndToEndUX(t *testing.T) {
	pl := newPlatform(t)
	_, got := pl.run("ux", fleet.Exercise, Options{})
	expect(t, got, map[string][]string{
		"dead link":        {"docs", "dead link", "/docs/tutorial.md", "404"},
		"docs promise GET": {"docs", "promise GET", "/api/agent", "405"},
		"leak on unknown":  {"face", "does not exist", "stack trace", "/opt/recipes/app.py"},
		"empty reply":      {"call", "erin", "empty reply"},
	})
}

func TestEndToEndPerf(t *testing.T) {
	pl := newPlatform(t)
	res, got := pl.run("perf", fleet.Exercise, Options{Corpus: recipeCorpus, Samples: 4})
	expect(t, got, map[string][]string{
		"slow face":   {"perf", `face of "dave"`, "over the SLO"},
		"slow call":   {"perf", `call to "dave"`, "over the SLO"},
		"gas":         {"registry", "estimate", "below"},
		"superlinear": {"compiler", "super-linearly", "let n = 42;"},
	})
	if !strings.Contains(res.Summary, "history") {
		t.Errorf("summary does not mention the missing history: %s", res.Summary)
	}
}

// TestPerfDefaultSamples: at the default 8 samples a series, the series
// measured again do not take the gas check's and compile growth's room
// under the cap (they did in 5f0679f: 72 calls of latency, neither ran).
// What latency has no room left to confirm is still filed, and says so.
func TestPerfDefaultSamples(t *testing.T) {
	pl := newPlatform(t)
	res, got := pl.run("perf", fleet.Exercise, Options{Corpus: recipeCorpus})
	expect(t, got, map[string][]string{
		"slow face":   {"perf", `face of "dave"`, "over the SLO", "N=16", "confirmed by a second series"},
		"slow call":   {"perf", `call to "dave"`, "over the SLO"},
		"gas":         {"registry", "estimate", "below"},
		"superlinear": {"compiler", "super-linearly", "let n = 42;"},
	})
	if res.Totals.ToolCalls > DefaultCap("perf") {
		t.Errorf("%d calls over the cap %d", res.Totals.ToolCalls, DefaultCap("perf"))
	}
}

// TestPerfStallIsNotAFinding: one stalled answer in a series (a loaded
// machine's; stop 41's CI filed carol's face at p95 214 ms on p50 4 ms)
// is measured again and noted as a transient, not filed; what is slow on
// every answer (dave) still is, confirmed by the second series.
func TestPerfStallIsNotAFinding(t *testing.T) {
	pl := newPlatform(t)
	pl.stalls = map[string]int{"face carol": 1, "call carol": 1}
	res, got := pl.run("perf", fleet.Exercise, Options{Corpus: recipeCorpus, Samples: 4})
	expect(t, got, map[string][]string{
		"slow face":   {"perf", `face of "dave"`, "over the SLO", "N=8", "confirmed by a second series"},
		"slow call":   {"perf", `call to "dave"`, "over the SLO", "N=8", "confirmed by a second series"},
		"gas":         {"registry", "estimate", "below"},
		"superlinear": {"compiler", "super-linearly", "let n = 42;"},
	})
	for _, who := range []string{`the face of "carol"`, `a call to "carol"`} {
		if !strings.Contains(res.Summary, who) || !strings.Contains(res.Summary[strings.Index(res.Summary, who):], "a transient, not filed") {
			t.Errorf("the summary does not note %s's stall as a transient: %s", who, res.Summary)
		}
	}
}

func TestEndToEndSmoke(t *testing.T) {
	pl := newPlatform(t)
	_, got := pl.run("smoke", fleet.Exercise, Options{Corpus: recipeCorpus})
	if len(got) != 0 {
		t.Errorf("smoke found breakage on a platform whose main path works:%s", summaries(got))
	}
	_, got = pl.run("smoke", fleet.Observe, Options{Corpus: recipeCorpus})
	if len(got) != 0 {
		t.Errorf("smoke at observe:%s", summaries(got))
	}
}

// TestEndToEndObserveNeverWrites checks every playbook at observe: the loop
// refuses exercise tools, and the playbooks stop asking after a refusal.
func TestEndToEndObserveNeverWrites(t *testing.T) {
	pl := newPlatform(t)
	for _, name := range Names() {
		res, _ := pl.run(name, fleet.Observe, Options{Corpus: recipeCorpus, Samples: 2})
		if res.Totals.Refusals > 2 {
			t.Errorf("%s: %d refusals at observe", name, res.Totals.Refusals)
		}
		if !strings.Contains(res.Summary, "refused") && name != "fuzz" && name != "perf" {
			t.Errorf("%s: summary does not say what the dial skipped: %s", name, res.Summary)
		}
	}
}
