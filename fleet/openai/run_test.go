package openai_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/fleet/fleettest"
	"github.com/qafleet/fleetd/trajectory"
)

// runLoop runs the real agent loop with model over a registry of qa_fetch
// and qa_report and returns the result and the run record.
func runLoop(ctx context.Context, t *testing.T, model fleet.Model, goal string) (fleet.RunResult, *trajectory.Run) {
	t.Helper()
	reg := fleet.NewRegistry()
	for _, tool := range []fleet.Tool{fetchTool(), reportTool()} {
		if err := reg.Add(tool); err != nil {
			t.Fatal(err)
		}
	}
	const runID = "r-openai-1"
	w, err := trajectory.Create(filepath.Join(t.TempDir(), "runs"), runID, trajectory.Header{RunID: runID})
	if err != nil {
		t.Fatal(err)
	}
	res, err := fleet.Run(ctx, fleet.LoopConfig{
		RunID: runID, Specialist: "smoke", Goal: goal, Persona: "You are the smoke specialist.",
		Model: model, Tools: reg, Dial: fleettest.Dial(fleet.Observe), Meter: &fleettest.Meter{}, Record: w,
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	rec, err := trajectory.ReadAll(w.Path())
	if err != nil {
		t.Fatal(err)
	}
	return res, rec
}

// TestRunEndToEnd drives fleet.Run with the model against the fake: a
// fetch, a call with broken arguments the loop has the model repair, a
// report, and a final answer.
func TestRunEndToEnd(t *testing.T) {
	lastTwo := func(req request) (map[string]any, map[string]any) {
		msgs := req.messages()
		return msgs[len(msgs)-2], msgs[len(msgs)-1]
	}
	f := newFake(t,
		check(func(t testing.TB, req request) {
			if n := len(req.messages()); n != 2 {
				t.Errorf("turn 0: %d messages, want 2", n)
			}
			var names []string
			for _, tool := range req.Body["tools"].([]any) {
				names = append(names, tool.(map[string]any)["function"].(map[string]any)["name"].(string))
			}
			if diff := cmp.Diff([]string{"qa_fetch", "qa_report"}, names); diff != "" {
				t.Errorf("turn 0 tools (-want +got):\n%s", diff)
			}
		}, toolCall("call_f1", "qa_fetch", `{"url":"http://127.0.0.1:8080/face/qa-demo"}`)),
		check(func(t testing.TB, req request) {
			call, result := lastTwo(req)
			if call["role"] != "assistant" || result["role"] != "tool" || result["tool_call_id"] != "call_f1" ||
				!strings.Contains(result["content"].(string), `"body":"hello from http://127.0.0.1:8080/face/qa-demo"`) {
				t.Errorf("turn 1: last messages %v, %v", call, result)
			}
		}, toolCall("call_r1", "qa_report", `{"severity": `)),
		check(func(t testing.TB, req request) {
			msgs := req.messages()
			note := msgs[len(msgs)-1]
			if len(msgs) != 5 || note["role"] != "user" || !strings.Contains(note["content"].(string), "arguments are not valid JSON") {
				t.Errorf("turn 2: want the history plus a note on the broken call, got %d messages ending %v", len(msgs), note)
			}
		}, toolCall("call_r2", "qa_report", `{"severity":"low","summary":"face has no title"}`)),
		check(func(t testing.TB, req request) {
			_, result := lastTwo(req)
			if result["tool_call_id"] != "call_r2" || !strings.Contains(result["content"].(string), `"entry_id":7`) {
				t.Errorf("turn 3: last message %v", result)
			}
			if n := len(req.messages()); n != 6 {
				t.Errorf("turn 3: %d messages, want 6 (the broken call is not history)", n)
			}
		}, text("Fetched the face of qa-demo and reported one finding.")),
	)
	res, rec := runLoop(context.Background(), t, mustModel(t, f, nil), "Check the face of qa-demo.")

	if res.Outcome != trajectory.OutcomeDone || res.Summary != "Fetched the face of qa-demo and reported one finding." || res.Err != nil {
		t.Fatalf("result: %s %q %v", res.Outcome, res.Summary, res.Err)
	}
	if len(res.Findings) != 1 {
		t.Errorf("%d findings, want 1", len(res.Findings))
	}
	type turn struct {
		Proposed, Executed string
		Args               string
		Validation         string
		Retries            int
		TokensIn           int64
	}
	var got []turn
	for _, tr := range rec.Turns() {
		g := turn{Validation: tr.Validation.Result, Retries: tr.Validation.Retries, TokensIn: tr.ModelMetadata.TokensIn}
		if tr.ProposedAction != nil {
			g.Proposed, g.Args = tr.ProposedAction.Tool, string(tr.ProposedAction.Args)
		}
		if tr.ExecutedAction != nil {
			g.Executed = tr.ExecutedAction.Tool
		}
		got = append(got, g)
	}
	want := []turn{
		{Proposed: "qa_fetch", Executed: "qa_fetch", Args: `{"url":"http://127.0.0.1:8080/face/qa-demo"}`, Validation: "ok", TokensIn: 120},
		{Validation: "invalid", Retries: 1, TokensIn: 120},
		{Proposed: "qa_report", Executed: "qa_report", Args: `{"severity":"low","summary":"face has no title"}`, Validation: "ok", TokensIn: 120},
		{Validation: "ok", TokensIn: 120},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("turns (-want +got):\n%s", diff)
	}
	if !strings.Contains(rec.Turns()[1].Validation.Reason, "tool call qa_report: arguments are not valid JSON") {
		t.Errorf("malformed turn reason = %q", rec.Turns()[1].Validation.Reason)
	}
	if rec.Footer.Outcome != trajectory.OutcomeDone || rec.Footer.Totals.TokensIn != 480 || rec.Footer.Totals.TokensOut != 120 || rec.Footer.Totals.ToolCalls != 2 {
		t.Errorf("footer = %+v", rec.Footer)
	}
	if n := len(f.requests()); n != 4 {
		t.Errorf("%d requests, want 4", n)
	}
}

// TestRunServerFailure: a server that refuses the request ends the run as a
// harness error, naming the status, with no tool run.
func TestRunServerFailure(t *testing.T) {
	f := newFake(t, status(401, nil, openAIError("Incorrect API key provided", "invalid_request_error", "invalid_api_key")))
	res, rec := runLoop(context.Background(), t, mustModel(t, f, nil), "Check the face of qa-demo.")
	if res.Outcome != trajectory.OutcomeHarnessError || !strings.Contains(rec.Footer.HarnessError, "status 401") {
		t.Fatalf("result %s, footer %+v", res.Outcome, rec.Footer)
	}
	if strings.Contains(rec.Footer.HarnessError, testKey) {
		t.Error("the record holds the API key")
	}
	if rec.Footer.Totals.ToolCalls != 0 {
		t.Errorf("%d tool calls", rec.Footer.Totals.ToolCalls)
	}
}
