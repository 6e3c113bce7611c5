package specialists

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/specialists/replay"
)

// rungs are the qa_* tools' rungs (DESIGN.md §5).
var rungs = map[string]fleet.Dial{
	"qa_create": fleet.Exercise, "qa_publish": fleet.Exercise, "qa_call": fleet.Exercise,
	"qa_compile": fleet.Observe, "qa_fetch": fleet.Observe, "qa_chain": fleet.Observe, "qa_report": fleet.Observe,
	"qa_fuzz": fleet.Observe, "qa_submit": fleet.Exercise, "qa_login": fleet.Exercise,
	"qa_authz": fleet.Exercise,
}

// toolList returns tool metadata (no handlers) for the named tools, or all.
func toolList(names ...string) []fleet.Tool {
	if len(names) == 0 {
		for n := range rungs {
			names = append(names, n)
		}
	}
	var out []fleet.Tool
	for _, n := range names {
		out = append(out, fleet.Tool{Name: n, Rung: rungs[n]})
	}
	return out
}

// world answers tool calls like the real tools would, by tool name; a
// missing handler answers ok with no fields. The dial gate is applied first.
type world struct {
	dial     fleet.Dial
	handlers map[string]func(args map[string]any) fleet.Result
	reports  []map[string]any
}

func (w *world) answer(c fleet.Call) fleet.Exchange {
	var args map[string]any
	if err := json.Unmarshal(c.Args, &args); err != nil {
		panic(fmt.Sprintf("call %s with args that are not an object: %s", c.Tool, c.Args))
	}
	rung, known := rungs[c.Tool]
	if !known {
		return fleet.Exchange{Call: c, Verdict: fleet.VerdictUnknown, Result: fleet.Result{"ok": false, "error": "unknown tool", "latency_ms": 0}}
	}
	if !w.dial.Allows(rung) {
		return fleet.Exchange{Call: c, Verdict: fleet.VerdictRefused,
			Result: fleet.Result{"ok": false, "error": fmt.Sprintf("refused: needs dial %s, dial is %s", rung, w.dial), "latency_ms": 0}}
	}
	if c.Tool == "qa_report" {
		w.reports = append(w.reports, args)
		if h := w.handlers["qa_report"]; h != nil {
			return fleet.Exchange{Call: c, Verdict: fleet.VerdictOK, Result: h(args)}
		}
		return fleet.Exchange{Call: c, Verdict: fleet.VerdictOK, Result: fleet.Result{"ok": true, "status": "posted", "latency_ms": 3}}
	}
	res := fleet.Result{"ok": true}
	if h := w.handlers[c.Tool]; h != nil {
		res = h(args)
	}
	if _, ok := res["ok"]; !ok {
		res["ok"] = true
	}
	if _, ok := res["latency_ms"]; !ok {
		res["latency_ms"] = int64(5)
	}
	v := fleet.VerdictOK
	if !res.IsOK() {
		v = fleet.VerdictError
	}
	return fleet.Exchange{Call: c, Verdict: v, Result: res}
}

// drive runs model against w like the loop does, checking at every turn
// that asking twice gives the same step (no hidden state). It returns the
// history and the final summary.
func drive(t *testing.T, m fleet.Model, st fleet.State, w *world, maxTurns int) ([]fleet.Exchange, string) {
	t.Helper()
	ctx := context.Background()
	for turn := 0; turn < maxTurns; turn++ {
		st.Turn = turn
		step, err := m.Next(ctx, &st)
		if err != nil {
			t.Fatalf("turn %d: Next: %v", turn, err)
		}
		again, err := m.Next(ctx, &st)
		if err != nil || !reflect.DeepEqual(step, again) {
			t.Fatalf("turn %d: Next is not deterministic: %+v then %+v (%v)", turn, step, again, err)
		}
		if step.Done {
			t.Logf("done after %d calls: %s", len(st.History), step.Summary)
			return st.History, step.Summary
		}
		if step.Call == nil {
			t.Fatalf("turn %d: neither done nor a call", turn)
		}
		st.History = append(st.History, w.answer(*step.Call))
	}
	t.Fatalf("not done after %d turns", maxTurns)
	return nil, ""
}

// calls lists the tool names of a history.
func calls(h []fleet.Exchange) []string {
	var out []string
	for _, ex := range h {
		out = append(out, ex.Call.Tool)
	}
	return out
}

// argsOf decodes a call's args.
func argsOf(t *testing.T, c fleet.Call) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(c.Args, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// mustNew builds a playbook or fails the test.
func mustNew(t *testing.T, name string, opts Options) fleet.Model {
	t.Helper()
	m, err := New(name, opts)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// findReport returns the first report whose summary contains all words.
func findReport(reports []map[string]any, words ...string) map[string]any {
	for _, r := range reports {
		s, _ := r["summary"].(string)
		ok := true
		for _, w := range words {
			ok = ok && strings.Contains(strings.ToLower(s), strings.ToLower(w))
		}
		if ok {
			return r
		}
	}
	return nil
}

// summaries lists report summaries, for failure messages.
func summaries(reports []map[string]any) string {
	var b strings.Builder
	for _, r := range reports {
		fmt.Fprintf(&b, "\n  [%v/%v] %v", r["severity"], r["surface"], r["summary"])
		if rp, ok := r["repro"]; ok {
			fmt.Fprintf(&b, "\n      repro %v", rp)
		}
	}
	return b.String()
}

// checkEnvelopes formats every report as the reporter would and fails on
// an envelope that does not fit or a repro that is not a qa_* call.
func checkEnvelopes(t *testing.T, source, run string, reports []map[string]any) {
	t.Helper()
	for _, r := range reports {
		f := fleet.Finding{Source: source, Severity: fleet.Severity(r["severity"].(string)), Surface: fleet.Surface(r["surface"].(string)),
			Run: run, Summary: r["summary"].(string), Fingerprint: "0123456789abcdef"}
		if rp, ok := r["repro"].(map[string]any); ok {
			args, _ := json.Marshal(rp["args"])
			f.Repro = &fleet.Repro{Tool: rp["tool"].(string), Args: args}
			if !strings.HasPrefix(f.Repro.Tool, "qa_") {
				t.Errorf("repro tool %q is not a qa_* tool", f.Repro.Tool)
			}
		}
		if len(f.Summary) > replay.MaxSummary {
			t.Errorf("summary of %d bytes: %s", len(f.Summary), f.Summary)
		}
		text, err := fleet.Format(f)
		if err != nil {
			t.Errorf("format %v: %v", r, err)
			continue
		}
		if len(text) > fleet.MaxEnvelopeBytes {
			t.Errorf("envelope of %d bytes", len(text))
		}
		back, err := fleet.Parse(text)
		if err != nil || (f.Repro != nil) != (back.Repro != nil) {
			t.Errorf("envelope does not parse back with its repro: %v\n%s", err, text)
		}
	}
}

func fetchOK(body string, hdr map[string]any) fleet.Result {
	if hdr == nil {
		hdr = map[string]any{"content-type": "text/html"}
	}
	return fleet.Result{"ok": true, "status": 200, "body": body, "headers": hdr, "content_type": hdr["content-type"]}
}
