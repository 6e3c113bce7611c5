package specialists

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/qafleet/fleetd/fleet"
)

// grammarEndpoint answers the call grammar like a platform with three
// flaws: a message that is not a string crashes it with a trace, a
// whitespace message gets an empty 200, and deep nesting hangs it.
// flawed false is its correct twin: a clean 400 for all of those.
func grammarEndpoint(flawed bool) func(map[string]any) fleet.Result {
	return func(a map[string]any) fleet.Result {
		bad := fleet.Result{"status": 400, "reply": `{"error":"bad request"}`, "hint": "client_error"}
		if raw, ok := a["raw_body"].(string); ok {
			switch {
			case strings.Count(raw, "[") > 64 && flawed:
				return fleet.Result{"ok": false, "error": "context deadline exceeded", "hint": "timeout"}
			case strings.Contains(raw, `"message":7`) || strings.Contains(raw, `"message":true`):
				if flawed {
					return fleet.Result{"status": 500, "reply": "TypeError: x.trim is not a function\n    at handle (/srv/app/call.js:12:5)", "hint": "server_error_with_trace"}
				}
			}
			return bad
		}
		if m, _ := a["message"].(string); m != "" && strings.TrimSpace(m) == "" {
			if flawed {
				return fleet.Result{"status": 200, "reply": "", "json": true, "hint": "empty_reply"}
			}
			return bad
		}
		return fleet.Result{"status": 200, "reply": "hi", "json": true, "hint": "ok"}
	}
}

func TestCallGrammar(t *testing.T) {
	type finding struct {
		Severity, What string
		Flaky          bool
	}
	for _, tc := range []struct {
		name   string
		flawed bool
		want   []finding
	}{
		{"flawed", true, []finding{
			{"low", "a whitespace-only message", false},
			{"high", "message as a number", false},
			{"high", "deep nesting (shrunk to 500 units, the same behaviour)", false},
		}},
		{"correct twin", false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &world{dial: fleet.Exercise, handlers: map[string]func(map[string]any) fleet.Result{"qa_call": grammarEndpoint(tc.flawed)}}
			st := fleet.State{RunID: "r-1", Target: testTarget(), Tools: toolList("qa_call", "qa_report")}
			h, _ := drive(t, mustNew(t, "fuzz", Options{}), st, w, 120)
			var got []finding
			for _, r := range w.reports {
				s := r["summary"].(string)
				what := s[strings.Index(s, "Smallest: ")+len("Smallest: "):]
				got = append(got, finding{r["severity"].(string), strings.TrimSuffix(what, "."), r["flaky"] == true})
				if rp, ok := r["repro"].(map[string]any); !ok || rp["tool"] != "qa_call" {
					t.Errorf("no qa_call repro: %v", r)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("findings (-want +got):\n%s%s", diff, summaries(w.reports))
			}
			// Each high finding's repro was sent again right before it was
			// filed (the quality bar).
			for i, ex := range h {
				if ex.Call.Tool != "qa_report" {
					continue
				}
				var a map[string]any
				json.Unmarshal(ex.Call.Args, &a)
				if a["severity"] != "high" {
					continue
				}
				rp, _ := json.Marshal(a["repro"].(map[string]any)["args"])
				if prev := h[i-1]; prev.Call.Tool != "qa_call" || !sameArgs(prev.Call.Args, rp) {
					t.Errorf("high finding not replayed before it was filed: %s after %s %s", a["summary"], prev.Call.Tool, prev.Call.Args)
				}
			}
		})
	}
}

// TestCallGrammarFlaky: a behaviour that does not come back when its
// repro is replayed is filed at low, marked flaky.
func TestCallGrammarFlaky(t *testing.T) {
	n := 0
	w := &world{dial: fleet.Exercise, handlers: map[string]func(map[string]any) fleet.Result{"qa_call": func(a map[string]any) fleet.Result {
		if raw, _ := a["raw_body"].(string); raw == "[]" {
			n++
			if n == 1 { // only the first time
				return fleet.Result{"status": 502, "reply": "panic: boom\ngoroutine 1 [running]:\nmain.go:12", "hint": "server_error_with_trace"}
			}
		}
		return fleet.Result{"status": 400, "reply": "no", "hint": "client_error"}
	}}}
	st := fleet.State{RunID: "r-1", Target: testTarget(), Tools: toolList("qa_call", "qa_report")}
	drive(t, mustNew(t, "fuzz", Options{}), st, w, 120)
	if len(w.reports) != 1 || w.reports[0]["severity"] != "low" || w.reports[0]["flaky"] != true || !strings.Contains(w.reports[0]["summary"].(string), "flaky") {
		t.Errorf("want one low flaky finding:%s", summaries(w.reports))
	}
}

// sameArgs reports whether two argument blobs are the same JSON value.
func sameArgs(a, b json.RawMessage) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}
