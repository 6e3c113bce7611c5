package specialists

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/qafleet/fleetd/fleet"
)

func TestSmokeObserveReportsOnlyRealBreakage(t *testing.T) {
	tg := testTarget()
	w := &world{dial: fleet.Observe, handlers: map[string]func(map[string]any) fleet.Result{
		"qa_compile": func(a map[string]any) fleet.Result {
			if strings.Contains(a["source"].(string), "enum") {
				return fleet.Result{"outcome": "crashed", "exit_code": 2, "stderr_tail": "panic: index out of range"}
			}
			return fleet.Result{"outcome": "compiled"}
		},
		"qa_fetch": func(a map[string]any) fleet.Result {
			if a["url"] == tg.FaceURL("bob") {
				return fleet.Result{"status": 502, "body": "bad gateway"}
			}
			return fetchOK("fine", nil)
		},
	}}
	st := fleet.State{RunID: "r-1", Target: tg, Tools: toolList()}
	corpus := []string{"print 1;\n", "enum E { A }\nprint E.A;\n"}
	h, summary := drive(t, mustNew(t, "smoke", Options{Corpus: corpus}), st, w, 40)
	got := calls(h)
	for _, c := range got[1:] {
		if rungs[c] != fleet.Observe {
			t.Fatalf("an exercise tool after the refusal: %v", got)
		}
	}
	if len(w.reports) != 2 {
		t.Fatalf("want 2 findings (corpus crash, bob's face):%s", summaries(w.reports))
	}
	if r := findReport(w.reports, "crashed"); r == nil || r["surface"] != "compiler" || r["repro"] == nil {
		t.Errorf("no compiler finding with a repro:%s", summaries(w.reports))
	}
	if r := findReport(w.reports, "bob", "502"); r == nil || r["surface"] != "face" {
		t.Errorf("no face finding for bob:%s", summaries(w.reports))
	}
	if !strings.Contains(summary, "qa_create refused") {
		t.Errorf("summary %q does not say the exercise steps were skipped", summary)
	}
	checkEnvelopes(t, "qa-smoke", "r-1", w.reports)
}

func TestSmokeExerciseWalksTheMainPath(t *testing.T) {
	tg := testTarget()
	w := &world{dial: fleet.Exercise, handlers: map[string]func(map[string]any) fleet.Result{
		"qa_create":  func(map[string]any) fleet.Result { return fleet.Result{"name": "qa-r-1-0", "owner_verified": true} },
		"qa_compile": func(map[string]any) fleet.Result { return fleet.Result{"outcome": "compiled"} },
		"qa_publish": func(map[string]any) fleet.Result {
			return fleet.Result{"ok": false, "error": "qa_publish: execution reverted", "revert_reason": "TooLarge()"}
		},
		"qa_fetch": func(a map[string]any) fleet.Result { return fetchOK("page", nil) },
		"qa_call": func(a map[string]any) fleet.Result {
			if a["target"] == "qa-r-1-0" {
				return fleet.Result{"status": 500, "hint": "server_error", "reply": "oops"}
			}
			return fleet.Result{"status": 200, "hint": "ok", "reply": "pong"}
		},
	}}
	st := fleet.State{RunID: "r-1", Target: tg, Tools: toolList()}
	h, _ := drive(t, mustNew(t, "smoke", Options{Corpus: []string{"print 1;\n"}}), st, w, 40)
	want := []string{"qa_create", "qa_compile", "qa_publish", "qa_report", "qa_fetch", "qa_call", "qa_report"}
	if got := calls(h); len(got) < len(want) || strings.Join(got[:len(want)], " ") != strings.Join(want, " ") {
		t.Fatalf("calls %v, want to start %v", got, want)
	}
	if r := findReport(w.reports, "publishing", "TooLarge"); r == nil || r["repro"] != nil {
		t.Errorf("publish failure not reported without a repro:%s", summaries(w.reports))
	}
	if r := findReport(w.reports, "freshly minted", "500"); r == nil || strings.Contains(r["summary"].(string), "qa-r-1-0") {
		t.Errorf("call failure not reported, or it names the run's own name:%s", summaries(w.reports))
	}
	checkEnvelopes(t, "qa-smoke", "r-1", w.reports)
}

// TestSmokeHostDownIsConfirmedOnce: a target host that gives no answer at
// all costs one re-try and one control check per run, not one per page;
// every outage finding then says the control answered, and the call to a
// public name is confirmed the same way.
func TestSmokeHostDownIsConfirmedOnce(t *testing.T) {
	tg := testTarget()
	down := func(map[string]any) fleet.Result {
		return fleet.Result{"ok": false, "error": "dial tcp: connect: connection refused", "hint": "unreachable"}
	}
	w := &world{dial: fleet.Exercise, handlers: map[string]func(map[string]any) fleet.Result{
		"qa_create": func(map[string]any) fleet.Result { return fleet.Result{"ok": false, "error": "qa_create: node busy"} },
		"qa_fetch":  down,
		"qa_call":   down,
		"qa_chain": func(a map[string]any) fleet.Result {
			if a["method"] != "eth_blockNumber" {
				t.Errorf("control call %v, want eth_blockNumber", a)
			}
			return fleet.Result{"result": "0x2a"}
		},
	}}
	st := fleet.State{RunID: "r-1", Target: tg, Tools: toolList()}
	h, _ := drive(t, mustNew(t, "smoke", Options{RetryDelay: time.Millisecond}), st, w, 40)
	want := "qa_create qa_fetch qa_fetch qa_chain qa_report qa_fetch qa_report qa_fetch qa_report qa_call qa_report"
	if got := strings.Join(calls(h), " "); got != want {
		t.Errorf("calls\n%s\nwant\n%s", got, want)
	}
	if len(w.reports) != 4 {
		t.Fatalf("want 4 outage findings (alice, bob, docs, call):%s", summaries(w.reports))
	}
	for _, r := range w.reports {
		if s := r["summary"].(string); !strings.Contains(s, "the chain node fleetd uses (qa_chain eth_blockNumber), answered") {
			t.Errorf("a finding does not name the control: %s", s)
		}
	}
	if r := findReport(w.reports, "Re-tried after 1ms"); r == nil || !strings.Contains(r["summary"].(string), "/alice/") {
		t.Errorf("the first finding does not say it was re-tried:%s", summaries(w.reports))
	}
	if r := findReport(w.reports, "Calling public name", "got no answer"); r == nil || r["surface"] != "call" {
		t.Errorf("no call finding:%s", summaries(w.reports))
	}
}

// TestSmokeOwnNetworkEndsTheReplay: the playbook itself stops with
// ErrOwnNetwork when the target and the control give no answer, and never
// asks for qa_report.
func TestSmokeOwnNetworkEndsTheReplay(t *testing.T) {
	tg := testTarget()
	down := func(map[string]any) fleet.Result {
		return fleet.Result{"ok": false, "error": "dial tcp: lookup plat.test: no such host", "hint": "unreachable"}
	}
	w := &world{dial: fleet.Observe, handlers: map[string]func(map[string]any) fleet.Result{
		"qa_fetch": down,
		"qa_chain": func(map[string]any) fleet.Result {
			return fleet.Result{"ok": false, "error": `qa_chain eth_blockNumber: node unreachable: Post "http://node.test:8545": i/o timeout`, "hint": "timeout"}
		},
	}}
	st := fleet.State{RunID: "r-1", Target: tg, Tools: toolList()}
	m := mustNew(t, "smoke", Options{RetryDelay: time.Millisecond})
	for turn := 0; turn < 10; turn++ {
		step, err := m.Next(context.Background(), &st)
		if err != nil {
			if !errors.Is(err, ErrOwnNetwork) || errors.Is(err, fleet.ErrMalformed) || !strings.Contains(err.Error(), "node.test:8545") {
				t.Fatalf("error %v, want ErrOwnNetwork naming the node", err)
			}
			if got := strings.Join(calls(st.History), " "); got != "qa_create qa_fetch qa_fetch qa_chain" {
				t.Errorf("calls %q before stopping", got)
			}
			return
		}
		if step.Done {
			t.Fatalf("done without an error: %s (findings:%s)", step.Summary, summaries(w.reports))
		}
		if step.Call.Tool == "qa_report" {
			t.Fatalf("qa_report asked for: %s", step.Call.Args)
		}
		st.History = append(st.History, w.answer(*step.Call))
	}
	t.Fatal("the replay never stopped")
}
