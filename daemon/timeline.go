package daemon

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/qafleet/fleetd/sandbox"
	"github.com/qafleet/fleetd/trajectory"
)

// Timeline writes a run for a person: header, one line per turn with
// the salient fields of its result, disabled tools, and the footer.
func Timeline(w io.Writer, run *trajectory.Run) error {
	h := run.Header
	fmt.Fprintf(w, "run %s  specialist %s  model %s  dial %s\n", h.RunID, h.Specialist, Dash(h.Model), Dash(h.Dial))
	if of := replayOf(h); of != "" {
		fmt.Fprintf(w, "replay of run %s (fleetd runs replay)\n", of)
	}
	fmt.Fprintf(w, "goal: %s\n", Sanitize(h.Goal))
	fmt.Fprintf(w, "started %s  budget: turns %d, writes %d, tokens %d, deadline %s\n\n",
		h.StartedAt.Local().Format(time.RFC3339), h.Budget.MaxTurns, h.Budget.MaxWrites, h.Budget.MaxTokens, time.Duration(h.Budget.DeadlineMS)*time.Millisecond)
	var left []string // what the calls' results list as left on the platform (qa_authz)
	for _, r := range run.Records {
		switch r := r.(type) {
		case trajectory.Turn:
			fmt.Fprintln(w, turnLine(r))
			undone, l := undoLists(r)
			for _, s := range undone {
				fmt.Fprintf(w, "      undone: %s\n", Clip(Sanitize(s), 300))
			}
			for _, s := range l {
				fmt.Fprintf(w, "      left on the platform: %s\n", Clip(Sanitize(s), 300))
			}
			left = append(left, l...)
			if h := hangLine(r); h != "" {
				fmt.Fprintln(w, h)
			}
			for _, pw := range r.PageWrites {
				fmt.Fprintln(w, pageWriteLine(pw))
			}
		case trajectory.ToolDisabled:
			fmt.Fprintf(w, "      tool %s disabled from turn %d (%s)\n", r.Tool, r.Turn, r.Reason)
		}
	}
	if run.Torn {
		fmt.Fprintln(w, "      (the record ends in a torn line)")
	}
	if f := run.Footer; f != nil {
		t := f.Totals
		fmt.Fprintf(w, "\n%s: %s\n", strings.ToUpper(string(f.Outcome)), Sanitize(f.FinalSummary))
		if f.HarnessError != "" {
			fmt.Fprintf(w, "harness error: %s\n", Sanitize(f.HarnessError))
		}
		for _, d := range f.Degraded {
			fmt.Fprintf(w, "DEGRADED: %s\n", Sanitize(d.String()))
		}
		if len(left) > 0 {
			fmt.Fprintf(w, "LEFT ON THE PLATFORM by the calls above (%d): %s\n", len(left), Clip(Sanitize(strings.Join(left, "; ")), 2000))
		}
		fmt.Fprintf(w, "turns %d, tool calls %d, refusals %d, findings %d, writes %d, held writes %d, tokens %d in / %d out, %s\n",
			t.Turns, t.ToolCalls, t.Refusals, t.Findings, t.Writes, t.HeldWrites, t.TokensIn, t.TokensOut, (time.Duration(t.DurationMS) * time.Millisecond).Round(time.Millisecond))
	} else {
		fmt.Fprintln(w, "\nno footer: the run crashed or is still running")
	}
	return nil
}

// undoLists are what a turn's result says its call wrote back (undone)
// and left on the platform (left_on_platform): qa_authz undoes its own
// writes and lists the rest.
func undoLists(t trajectory.Turn) (undone, left []string) {
	raw, ok := t.Result.(json.RawMessage)
	if !ok || len(raw) == 0 {
		return nil, nil
	}
	var res struct {
		Undone []string `json:"undone"`
		Left   []string `json:"left_on_platform"`
	}
	json.Unmarshal(raw, &res)
	return res.Undone, res.Left
}

// hangLine is how a qa_fuzz replay's hang was judged, under its turn:
// whose loop it is (the library's or the harness's), at which frame, why,
// and which replay gave the stack; "" when the turn judged no hang.
func hangLine(t trajectory.Turn) string {
	raw, ok := t.Result.(json.RawMessage)
	if !ok || len(raw) == 0 {
		return ""
	}
	var res struct {
		Verdict string `json:"hang_verdict"`
		Frame   string `json:"hang_frame"`
		Why     string `json:"hang_why"`
		By      string `json:"hang_replayed_by"`
	}
	if json.Unmarshal(raw, &res) != nil || res.Verdict == "" {
		return ""
	}
	line := "      hang: " + res.Verdict
	if res.Frame != "" {
		line += " at " + res.Frame
	}
	if res.Why != "" {
		line += " (" + res.Why + ")"
	}
	if res.By != "" {
		line += ", replayed by " + res.By
	}
	return Clip(Sanitize(line), 400)
}

// pageWriteLine is one write a rendered page tried, under its turn: held
// (and why) or sent, with method and URL.
func pageWriteLine(w trajectory.PageWrite) string {
	verdict := "sent"
	if w.Held {
		verdict = "HELD"
	}
	line := fmt.Sprintf("      page write %s %s %s", verdict, w.Method, w.URL)
	if w.Reason != "" {
		line += " (" + w.Reason + ")"
	}
	if w.Via != "" {
		line += " via " + w.Via
	}
	return Clip(Sanitize(line), 300)
}

// resultKeys are the result fields worth a place on a timeline line.
var resultKeys = []string{"outcome", "status", "hint", "name", "entry_id", "reverted", "bytes", "exit_code", "signal", "error"}

func turnLine(t trajectory.Turn) string {
	tool := "(done)"
	if t.ProposedAction != nil {
		tool = t.ProposedAction.Tool
	}
	verdict := t.Validation.Result
	var res map[string]any
	if raw, ok := t.Result.(json.RawMessage); ok && len(raw) > 0 {
		json.Unmarshal(raw, &res)
	}
	if verdict == trajectory.ValidationOK && res != nil {
		if ok, _ := res["ok"].(bool); !ok {
			verdict = "error"
		}
	}
	var parts []string
	for _, k := range resultKeys {
		if v, ok := res[k]; ok && v != nil && v != "" {
			parts = append(parts, fmt.Sprintf("%s=%v", k, v))
		}
	}
	if tool == "qa_fuzz" {
		parts = append(parts, fuzzParts(res)...)
	}
	if t.Validation.Reason != "" && res == nil {
		parts = append(parts, "reason="+t.Validation.Reason)
	}
	line := fmt.Sprintf("#%-3d %s  %-10s %-8s %5dms  %s", t.Index, t.StartedAt.Local().Format("15:04:05"), tool, verdict, t.LatencyMS, strings.Join(parts, " "))
	if t.Findings > 0 {
		line += "  [finding]"
	}
	return Clip(Sanitize(line), 220)
}

// fuzzParts are a qa_fuzz session's figures as a person reads them:
// engine, inputs, inputs/s, coverage and features, corpus, crash states,
// and whether it found new coverage (or how long the plateau is).
func fuzzParts(res map[string]any) []string {
	if hs, ok := res["harnesses"].([]any); ok { // qa_fuzz harness=list
		dropped, _ := res["dropped"].([]any)
		crashes, _ := res["harness_crashes"].(float64)
		return []string{fmt.Sprintf("generated=%d dropped=%d harness_crashes=%.0f", len(hs), len(dropped), crashes)}
	}
	if v, ok := res["verdict"].(string); ok { // a generated harness's replay, judged
		return []string{"verdict=" + v}
	}
	if _, ok := res["execs"]; !ok {
		return nil // a replay or an error: resultKeys said it
	}
	num := func(k string) (float64, bool) { v, ok := res[k].(float64); return v, ok }
	var parts []string
	if h, ok := res["harness"].(string); ok {
		parts = append(parts, "harness="+h) // a generated fuzz target: its own statistics
	}
	if e, ok := res["engine"].(string); ok {
		parts = append(parts, "engine="+e)
	}
	if v, ok := num("execs"); ok {
		parts = append(parts, fmt.Sprintf("inputs=%.0f", v))
	}
	if v, ok := num("execs_per_sec"); ok {
		parts = append(parts, fmt.Sprintf("%.0f/s", v))
	}
	if v, ok := num("execs_per_cpu_sec"); ok {
		parts = append(parts, fmt.Sprintf("%.0f/CPU-s", v))
	}
	for _, k := range []string{"coverage", "features", "corpus_size", "started_from", "pruned"} {
		if v, ok := num(k); ok {
			parts = append(parts, fmt.Sprintf("%s=%.0f", strings.TrimSuffix(k, "_size"), v))
		}
	}
	if cs, ok := res["crashers"].([]any); ok {
		states := map[string]bool{}
		for _, c := range cs {
			if m, ok := c.(map[string]any); ok {
				s, _ := m["crash_state"].(string)
				states[s] = true
			}
		}
		parts = append(parts, fmt.Sprintf("crashers=%d states=%d", len(cs), len(states)))
	}
	switch nc, _ := res["new_coverage"].(bool); {
	case nc:
		parts = append(parts, "new coverage")
	case res["plateau_sessions"] != nil:
		if v, _ := num("plateau_sessions"); v > 0 {
			parts = append(parts, fmt.Sprintf("plateau %.0f sessions", v))
		}
	}
	return parts
}

// replayOf is the run a replay's header names (its config's replay_of), ""
// for a run that is not a replay.
func replayOf(h trajectory.Header) string {
	raw, ok := h.Config.(json.RawMessage)
	if !ok {
		return ""
	}
	var c struct {
		ReplayOf string `json:"replay_of"`
	}
	if json.Unmarshal(raw, &c) != nil || !sandbox.ValidRunID(c.ReplayOf) {
		return ""
	}
	return c.ReplayOf
}
