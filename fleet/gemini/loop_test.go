package gemini

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/fleet/fleettest"
	"github.com/qafleet/fleetd/trajectory"
	"google.golang.org/genai"
)

// TestRunLoop drives the real agent loop with the Gemini model against the
// fake: the run record must show exactly the calls the fake's model chose,
// the loop's repair retry after a malformed reply, and outcome done.
func TestRunLoop(t *testing.T) {
	var fetched, reported []string
	reg := fleet.NewRegistry()
	for _, tool := range []fleet.Tool{
		fleet.NewTool("qa_fetch", "GET an allowlisted public URL", fleet.Observe, func(_ context.Context, a fetchArgs) (fleet.Result, error) {
			fetched = append(fetched, a.URL)
			return fleet.OK(map[string]any{"status": 200, "body": "<h1>demo</h1>"}), nil
		}),
		fleet.NewTool("qa_report", "post a finding", fleet.Observe, func(_ context.Context, a reportArgs) (fleet.Result, error) {
			reported = append(reported, a.Severity+": "+a.Summary)
			return fleet.OK(map[string]any{"entry_id": 7}), nil
		}),
	} {
		if err := reg.Add(tool); err != nil {
			t.Fatal(err)
		}
	}

	lastUser := func(t *testing.T, req captured) any {
		contents := path(t, req.Body, "contents").([]any)
		return contents[len(contents)-1]
	}
	malformedCall := &genai.GenerateContentResponse{
		Candidates:    []*genai.Candidate{{FinishReason: genai.FinishReasonMalformedFunctionCall, FinishMessage: "Malformed function call: qa_report("}},
		UsageMetadata: usageMeta(300, 0, 10),
	}
	f := newFake(t,
		check(func(t *testing.T, req captured) {
			var names []string
			for _, d := range path(t, req.Body, "tools", 0, "functionDeclarations").([]any) {
				names = append(names, path(t, d, "name").(string))
			}
			if d := cmp.Diff([]string{"qa_fetch", "qa_report"}, names); d != "" {
				t.Errorf("declared tools (-want +got):\n%s", d)
			}
			if sys := path(t, req.Body, "systemInstruction", "parts", 0, "text").(string); !strings.HasSuffix(sys, "You are the smoke specialist.") {
				t.Errorf("system instruction %q", sys)
			}
		}, reply(callReply("qa_fetch", map[string]any{"url": "https://demo.example/demo"}, "", []byte("sig-1")))),
		check(func(t *testing.T, req captured) {
			resp := path(t, lastUser(t, req), "parts", 0, "functionResponse")
			if path(t, resp, "name") != "qa_fetch" || path(t, resp, "response", "ok") != true || path(t, resp, "response", "status") != 200.0 {
				t.Errorf("functionResponse %v", resp)
			}
		}, reply(malformedCall)),
		check(func(t *testing.T, req captured) {
			note, _ := path(t, lastUser(t, req), "parts", 1, "text").(string)
			if !strings.Contains(note, "MALFORMED_FUNCTION_CALL") {
				t.Errorf("retry note %q", note)
			}
		}, reply(callReply("qa_report", map[string]any{"severity": "low", "summary": "face has no title"}, "", nil))),
		check(func(t *testing.T, req captured) {
			contents := path(t, req.Body, "contents").([]any)
			if len(contents) != 5 {
				t.Errorf("want goal + 2 exchanges, got %d turns", len(contents))
			}
			if got := path(t, lastUser(t, req), "parts", 0, "functionResponse", "response", "entry_id"); got != 7.0 {
				t.Errorf("qa_report result %v", got)
			}
			if parts := path(t, lastUser(t, req), "parts").([]any); len(parts) != 1 {
				t.Errorf("retry note still sent after a good reply: %v", parts)
			}
		}, reply(textReply("Fetched the demo face; filed one low finding (no title)."))),
	)
	m, _ := newModel(t, f, nil)

	const runID = "r-gemini-1"
	dir := t.TempDir()
	w, err := trajectory.Create(dir, runID, trajectory.Header{RunID: runID})
	if err != nil {
		t.Fatal(err)
	}
	res, err := fleet.Run(context.Background(), fleet.LoopConfig{
		RunID: runID, Specialist: "smoke", Goal: "check the demo face", Persona: "You are the smoke specialist.",
		Model: m, Tools: reg, Dial: fleettest.Dial(fleet.Observe), Meter: &fleettest.Meter{}, Record: w,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != trajectory.OutcomeDone || res.Summary != "Fetched the demo face; filed one low finding (no title)." || res.Err != nil {
		t.Fatalf("result %+v", res)
	}
	if len(res.Findings) != 1 || len(f.requests()) != 4 {
		t.Errorf("%d findings, %d requests", len(res.Findings), len(f.requests()))
	}
	if d := cmp.Diff([]string{"https://demo.example/demo"}, fetched); d != "" {
		t.Errorf("qa_fetch calls (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"low: face has no title"}, reported); d != "" {
		t.Errorf("qa_report calls (-want +got):\n%s", d)
	}

	rec, err := trajectory.ReadAll(w.Path())
	if err != nil {
		t.Fatal(err)
	}
	type turn struct {
		Tool, Args, Validation string
		Executed               bool
		In, Out                int64
	}
	var got []turn
	for _, tr := range rec.Turns() {
		x := turn{Validation: tr.Validation.Result, Executed: tr.ExecutedAction != nil, In: tr.ModelMetadata.TokensIn, Out: tr.ModelMetadata.TokensOut}
		if tr.ProposedAction != nil {
			x.Tool, x.Args = tr.ProposedAction.Tool, string(tr.ProposedAction.Args)
		}
		got = append(got, x)
	}
	want := []turn{
		{Tool: "qa_fetch", Args: `{"url":"https://demo.example/demo"}`, Validation: "ok", Executed: true, In: 120, Out: 45},
		{Validation: "invalid", In: 300, Out: 10},
		{Tool: "qa_report", Args: `{"severity":"low","summary":"face has no title"}`, Validation: "ok", Executed: true, In: 120, Out: 45},
		{Validation: "ok", In: 200, Out: 40},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("run record turns (-want +got):\n%s", d)
	}
	if rec.Footer == nil || rec.Footer.Outcome != trajectory.OutcomeDone || rec.Footer.Totals.ToolCalls != 2 ||
		rec.Footer.Totals.TokensIn != 740 || rec.Footer.Totals.TokensOut != 140 || rec.Footer.Totals.Findings != 1 {
		t.Errorf("footer %+v", rec.Footer)
	}
}

// TestLive makes one small request to the real Gemini API. It runs only
// with GEMINI_API_KEY or GOOGLE_API_KEY set (GEMINI_MODEL picks the model).
func TestLive(t *testing.T) {
	key := os.Getenv("GEMINI_API_KEY")
	if key == "" {
		key = os.Getenv("GOOGLE_API_KEY")
	}
	if key == "" {
		t.Skip("set GEMINI_API_KEY or GOOGLE_API_KEY to run the live Gemini test")
	}
	m, err := New(context.Background(), Config{APIKey: key, Model: os.Getenv("GEMINI_MODEL"), MaxRetries: 2})
	if err != nil {
		t.Fatal(err)
	}
	type echoArgs struct {
		Text string `json:"text" desc:"the text to echo"`
	}
	echo := fleet.NewTool("qa_echo", "echo a text back", fleet.Observe, func(_ context.Context, a echoArgs) (fleet.Result, error) {
		return fleet.OK(map[string]any{"text": a.Text}), nil
	})
	step, err := m.Next(t.Context(), &fleet.State{
		RunID: "r-live", Specialist: "smoke", Goal: `Call qa_echo once with text "ping".`,
		Persona: "You are a test probe. Be brief.", Tools: []fleet.Tool{echo},
	})
	if err != nil {
		t.Fatal(err)
	}
	if step.Usage.TokensIn == 0 {
		t.Errorf("no usage reported: %+v", step.Usage)
	}
	switch {
	case step.Call != nil:
		if step.Call.Tool != "qa_echo" {
			t.Errorf("the model called %q", step.Call.Tool)
		}
		t.Logf("call %s %s, usage %+v", step.Call.Tool, step.Call.Args, step.Usage)
	case step.Done:
		t.Logf("done without a call: %q, usage %+v", step.Summary, step.Usage)
	default:
		t.Errorf("step %+v", step)
	}
}
