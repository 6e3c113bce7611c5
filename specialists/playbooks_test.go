package specialists

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/specialists/replay"
)

// hash64Hex is 64 hex digits: a hash on these pages, not a key.
var hash64Hex = "4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"

func TestSecurityScriptedHistory(t *testing.T) {
	m := mustNew(t, "security", Options{})
	st := fleet.State{RunID: "r-1", Target: testTarget(), Tools: toolList()}
	step, err := m.Next(context.Background(), &st)
	if err != nil || step.Call == nil || step.Call.Tool != "qa_chain" ||
		string(step.Call.Args) != `{"method":"simulate","params":["adminBurn(string[])"]}` {
		t.Fatalf("first step %+v, %v; want the admin simulation", step, err)
	}
	// The stranger's call went through: the next step replays it (a
	// critical finding must reproduce before it is filed), then reports it.
	went := fleet.Exchange{Call: *step.Call, Verdict: fleet.VerdictOK,
		Result: fleet.Result{"ok": true, "reverted": false, "from": "0xabc", "latency_ms": 4}}
	st.History = append(st.History, went)
	step, err = m.Next(context.Background(), &st)
	if err != nil || step.Call == nil || step.Call.Tool != "qa_chain" || string(step.Call.Args) != string(went.Call.Args) {
		t.Fatalf("after a non-reverting admin call: %+v, %v; want the same simulation replayed", step, err)
	}
	st.History = append(st.History, went)
	step, err = m.Next(context.Background(), &st)
	if err != nil || step.Call == nil || step.Call.Tool != "qa_report" {
		t.Fatalf("after the replay reproduced: %+v, %v; want qa_report", step, err)
	}
	a := argsOf(t, *step.Call)
	rp, _ := json.Marshal(a["repro"])
	if a["severity"] != "critical" || a["surface"] != "registry" ||
		string(rp) != `{"args":{"method":"simulate","params":["adminBurn(string[])"]},"tool":"qa_chain"}` {
		t.Errorf("report %v repro %s", a, rp)
	}
	// Reverted on the replay: filed at low, marked flaky.
	st.History[1].Result = fleet.Result{"ok": true, "reverted": true, "revert_reason": "NotAdmin()"}
	step, err = m.Next(context.Background(), &st)
	if err != nil || step.Call == nil || step.Call.Tool != "qa_report" {
		t.Fatalf("after the replay did not reproduce: %+v, %v; want qa_report", step, err)
	}
	if a := argsOf(t, *step.Call); a["severity"] != "low" || a["flaky"] != true {
		t.Errorf("a finding that did not reproduce filed as %v", a)
	}
	// Reverted: no report, the playbook moves on to the docs.
	st.History = st.History[:1]
	st.History[0].Result = fleet.Result{"ok": true, "reverted": true, "revert_reason": "NotAdmin()"}
	step, err = m.Next(context.Background(), &st)
	if err != nil || step.Call == nil || step.Call.Tool != "qa_fetch" || argsOf(t, *step.Call)["url"] != testTarget().Docs[0] {
		t.Fatalf("after a reverting admin call: %+v, %v; want the docs fetched", step, err)
	}
}

func TestSecurityNoFalsePositivesOnACleanPlatform(t *testing.T) {
	tg := testTarget()
	clean := map[string]any{
		"content-type": "text/html", "content-security-policy": "default-src 'self'; frame-ancestors 'none'",
		"x-content-type-options": "nosniff", "access-control-allow-origin": "https://app.plat.test",
	}
	w := &world{dial: fleet.Exercise, handlers: map[string]func(map[string]any) fleet.Result{
		"qa_chain": func(a map[string]any) fleet.Result {
			if a["method"] == "simulate" {
				return fleet.Result{"reverted": true}
			}
			return fleet.Result{"result": "<script>alert(1)</script>"}
		},
		"qa_fetch": func(a map[string]any) fleet.Result {
			u := a["url"].(string)
			switch {
			case strings.HasSuffix(u, "/bob/"):
				// Active content in the metadata, escaped in the face.
				return fetchOK("<p>tx 0x"+hash64Hex+"</p>&lt;script&gt;alert(1)&lt;/script&gt;", clean)
			case strings.HasSuffix(u, "llms.txt"):
				return fetchOK("# docs\nsha256: "+hash64Hex+"\n[face](/alice/)", map[string]any{"content-type": "text/plain"})
			case strings.Contains(u, "/alice/") || strings.HasSuffix(u, ":8080/"):
				return fetchOK("<h1>alice</h1><script src=/app.js></script>", clean)
			}
			return fleet.Result{"status": 404, "body": "not found", "headers": map[string]any{"content-type": "text/plain"}}
		},
		"qa_call": func(a map[string]any) fleet.Result {
			return fleet.Result{"status": 200, "hint": "ok", "reply": "You are " + map[bool]string{true: "admin", false: "anonymous"}[a["from"] == "admin"] + ".",
				"content_type": "application/json"}
		},
		"qa_create":  func(map[string]any) fleet.Result { return fleet.Result{"name": "qa-r-1-0"} },
		"qa_publish": func(map[string]any) fleet.Result { return fleet.Result{"tx": "0x1"} },
	}}
	st := fleet.State{RunID: "r-1", Target: tg, Tools: toolList()}
	_, summary := drive(t, mustNew(t, "security", Options{Corpus: []string{`print "hi";`}}), st, w, 400)
	if len(w.reports) != 0 {
		t.Errorf("findings on a clean platform:%s", summaries(w.reports))
	}
	if !strings.Contains(summary, "no findings") {
		t.Errorf("summary %q", summary)
	}
}

func TestFuzzMinimizesBeforeReporting(t *testing.T) {
	crashes := func(src string) bool { return strings.Contains(src, "{}") }
	var compiled []string
	w := &world{dial: fleet.Observe, handlers: map[string]func(map[string]any) fleet.Result{
		"qa_compile": func(a map[string]any) fleet.Result {
			src := a["source"].(string)
			compiled = append(compiled, src)
			if crashes(src) {
				return fleet.Result{"outcome": "crashed", "exit_code": 2, "stderr_tail": "panic: empty block at 0x4f2a1c\n"}
			}
			return fleet.Result{"outcome": "rejected", "exit_code": 1, "stderr_tail": "1:1: syntax error"}
		},
	}}
	tg := testTarget()
	st := fleet.State{RunID: "r-1", Target: tg, Tools: toolList("qa_compile", "qa_report")}
	corpus := []string{"fn main() {\n  print 1;\n}\n"}
	h, summary := drive(t, mustNew(t, "fuzz", Options{Corpus: corpus, Caps: map[string]int{"fuzz": 80}}), st, w, 100)
	if len(w.reports) != 1 {
		t.Fatalf("want one crash finding (one signature):%s", summaries(w.reports))
	}
	r := w.reports[0]
	src := r["repro"].(map[string]any)["args"].(map[string]any)["source"]
	if src != "{}" || r["surface"] != "compiler" || r["severity"] != "high" {
		t.Errorf("finding %v, want the minimized reproducer {}", r)
	}
	// The tiny seed "{}" crashes first; everything compiled is distinct
	// but the repro, which is replayed once before it is reported.
	seen := map[string]int{}
	for _, s := range compiled {
		if seen[s]++; seen[s] > 1 && (s != "{}" || seen[s] > 2) {
			t.Errorf("compiled %q %d times", s, seen[s])
		}
	}
	if seen["{}"] != 2 {
		t.Errorf("the repro {} was compiled %d times, want 2 (found, replayed)", seen["{}"])
	}
	if r["state"] == nil || r["flaky"] != nil {
		t.Errorf("want a crash state and no flaky mark: %v", r)
	}
	if len(h) > 80 || !strings.Contains(summary, "1 distinct crash") {
		t.Errorf("%d calls, summary %q", len(h), summary)
	}
}

func TestFuzzSeedComesFromTheRun(t *testing.T) {
	w := &world{dial: fleet.Observe, handlers: map[string]func(map[string]any) fleet.Result{
		"qa_compile": func(map[string]any) fleet.Result { return fleet.Result{"outcome": "rejected"} },
	}}
	run := func(runID string, seed uint64) []fleet.Exchange {
		st := fleet.State{RunID: runID, Target: testTarget(), Tools: toolList("qa_compile", "qa_report")}
		h, _ := drive(t, mustNew(t, "fuzz", Options{Corpus: []string{"let a = 1;\nwhile a < 3 { a = a + 1; }\n"}, Seed: seed, Caps: map[string]int{"fuzz": 60}}), st, w, 80)
		return h
	}
	a, b, c := run("r-1", 0), run("r-1", 0), run("r-2", 0)
	if !reflect.DeepEqual(a, b) {
		t.Error("the same run id gave different mutations")
	}
	if reflect.DeepEqual(a, c) {
		t.Error("another run id gave the same mutations")
	}
	if d, e := run("r-1", 7), run("r-2", 7); !reflect.DeepEqual(d, e) {
		t.Error("Options.Seed does not override the run id")
	}
}

func TestPerfJudgesOnlyWhatItShould(t *testing.T) {
	tg := testTarget()
	tg.SLO = fleet.SLO{} // no objective: measure, do not judge
	w := &world{dial: fleet.Observe, handlers: map[string]func(map[string]any) fleet.Result{
		"qa_fetch": func(map[string]any) fleet.Result { r := fetchOK("ok", nil); r["latency_ms"] = int64(900); return r },
		"qa_compile": func(a map[string]any) fleet.Result {
			// A linear compiler with a 20 ms startup.
			return fleet.Result{"outcome": "compiled", "duration_ms": 20 + len(a["source"].(string))/1000}
		},
	}}
	st := fleet.State{RunID: "r-1", Target: tg, Tools: toolList()}
	_, summary := drive(t, mustNew(t, "perf", Options{Corpus: []string{"let n = 42;\nprint n;\n"}, Samples: 3}), st, w, 120)
	if len(w.reports) != 0 {
		t.Errorf("findings without an SLO and with a linear compiler:%s", summaries(w.reports))
	}
	for _, want := range []string{"slo.p95_ms not set", "p95 900 ms", "compile growth: exponent", "qa_call refused"} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary lacks %q: %s", want, summary)
		}
	}
}

func TestUXStaysOnTheAllowlist(t *testing.T) {
	tg := testTarget()
	var fetched []string
	w := &world{dial: fleet.Observe, handlers: map[string]func(map[string]any) fleet.Result{
		"qa_fetch": func(a map[string]any) fleet.Result {
			u := a["url"].(string)
			fetched = append(fetched, u)
			if strings.HasSuffix(u, "llms.txt") {
				return fetchOK("- [ext](https://elsewhere.test/x)\n- [in](/guide.md)\n- [tpl](http://plat.test:8080/{name}/)", map[string]any{"content-type": "text/plain"})
			}
			return fetchOK("<p>fine</p>", nil)
		},
	}}
	st := fleet.State{RunID: "r-1", Target: tg, Tools: toolList()}
	_, summary := drive(t, mustNew(t, "ux", Options{}), st, w, 60)
	for _, u := range fetched {
		if !replay.AllowedURL(tg.FetchAllow, u) {
			t.Errorf("fetched %s, off the allowlist", u)
		}
	}
	if !strings.Contains(strings.Join(fetched, " "), "http://plat.test:8080/guide.md") {
		t.Errorf("same-host link not followed: %v", fetched)
	}
	if strings.Contains(strings.Join(fetched, " "), "{name}") || strings.Contains(strings.Join(fetched, " "), "%7Bname%7D") {
		t.Errorf("a template link was fetched unfilled: %v", fetched)
	}
	if len(w.reports) != 0 || !strings.Contains(summary, "off the allowlist") {
		t.Errorf("reports:%s\nsummary: %s", summaries(w.reports), summary)
	}
}

func TestFuzzCallEndpointThatFallsOver(t *testing.T) {
	down := false
	w := &world{dial: fleet.Exercise, handlers: map[string]func(map[string]any) fleet.Result{
		"qa_call": func(a map[string]any) fleet.Result {
			if a["raw_body"] == "[]" {
				down = true
			}
			if down {
				return fleet.Result{"ok": false, "error": "connection refused", "hint": "unreachable"}
			}
			return fleet.Result{"status": 400, "hint": "client_error", "reply": `{"error":"bad request"}`}
		},
	}}
	st := fleet.State{RunID: "r-1", Target: testTarget(), Tools: toolList("qa_call", "qa_report")}
	drive(t, mustNew(t, "fuzz", Options{}), st, w, 60)
	r := findReport(w.reports, "stops answering", "grammar requests")
	if r == nil || r["severity"] != "high" {
		t.Fatalf("no finding for an endpoint brought down by a body:%s", summaries(w.reports))
	}
	if args := r["repro"].(map[string]any)["args"].(map[string]any); args["raw_body"] != "[]" {
		t.Errorf("repro %v, want the body that brought it down", args)
	}

	// An endpoint that never answers is not probed further.
	w = &world{dial: fleet.Exercise, handlers: map[string]func(map[string]any) fleet.Result{
		"qa_call": func(map[string]any) fleet.Result {
			return fleet.Result{"ok": false, "error": "target.call is not configured"}
		},
	}}
	h, summary := drive(t, mustNew(t, "fuzz", Options{}), st, w, 60)
	if len(h) != 1 || len(w.reports) != 0 || !strings.Contains(summary, "did not answer") {
		t.Errorf("%d calls, %d reports, summary %q", len(h), len(w.reports), summary)
	}
}

func TestSinglePageAppIsNotManyFindings(t *testing.T) {
	// A single-page app answers 200 with the same index for every path, and
	// its bundle embeds a browser API key: one exposure, not one per path.
	spa := `<html><script>const maps = "AIza` + strings.Repeat("Sy9", 11) + `Zq";</script></html>`
	w := &world{dial: fleet.Observe, handlers: map[string]func(map[string]any) fleet.Result{
		"qa_chain": func(map[string]any) fleet.Result { return fleet.Result{"reverted": true} },
		"qa_fetch": func(map[string]any) fleet.Result {
			return fetchOK(spa, map[string]any{"content-type": "text/html", "content-security-policy": "default-src 'self'",
				"x-content-type-options": "nosniff", "x-frame-options": "DENY"})
		},
	}}
	st := fleet.State{RunID: "r-1", Target: testTarget(), Tools: toolList()}
	drive(t, mustNew(t, "security", Options{}), st, w, 80)
	if len(w.reports) != 1 || findReport(w.reports, "Google API key") == nil {
		t.Errorf("want one secret finding:%s", summaries(w.reports))
	}
}

func TestUXEchoedPathIsNotALeak(t *testing.T) {
	w := &world{dial: fleet.Observe, handlers: map[string]func(map[string]any) fleet.Result{
		"qa_fetch": func(a map[string]any) fleet.Result {
			u := a["url"].(string)
			if strings.HasSuffix(u, "llms.txt") {
				return fetchOK("- [guide](/usr/guide)", map[string]any{"content-type": "text/plain"})
			}
			if strings.Contains(u, "/usr/guide") || strings.Contains(u, "qa-no-such") {
				path := u[strings.Index(u, ":8080")+5:]
				return fleet.Result{"status": 404, "body": "Cannot GET " + path, "headers": map[string]any{"content-type": "text/html"}}
			}
			return fetchOK("<p>ok</p>", nil)
		},
	}}
	st := fleet.State{RunID: "r-1", Target: testTarget(), Tools: toolList()}
	drive(t, mustNew(t, "ux", Options{}), st, w, 60)
	if len(w.reports) != 1 || findReport(w.reports, "dead link", "/usr/guide") == nil {
		t.Errorf("want only the dead link:%s", summaries(w.reports))
	}
}
