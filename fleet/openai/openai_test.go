package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/fleet/openai"
)

const testKey = "sk-test-5ecret-k3y-do-not-print"

type fetchArgs struct {
	URL string `json:"url" desc:"an allowlisted URL"`
}

type reportArgs struct {
	Severity string `json:"severity" enum:"high,medium,low" desc:"how bad it is"`
	Summary  string `json:"summary" maxlen:"200"`
	Repro    string `json:"repro,omitempty"`
}

type noArgs struct{}

func fetchTool() fleet.Tool {
	return fleet.NewTool("qa_fetch", "GET an allowlisted public URL", fleet.Observe, func(_ context.Context, a fetchArgs) (fleet.Result, error) {
		return fleet.OK(map[string]any{"status": 200, "body": "hello from " + a.URL}), nil
	})
}

func reportTool() fleet.Tool {
	return fleet.NewTool("qa_report", "post a finding", fleet.Observe, func(_ context.Context, a reportArgs) (fleet.Result, error) {
		return fleet.OK(map[string]any{"entry_id": 7}), nil
	})
}

func createTool() fleet.Tool {
	return fleet.NewTool("qa_create", "mint a sandbox name", fleet.Exercise, func(context.Context, noArgs) (fleet.Result, error) {
		return fleet.OK(map[string]any{"name": "qa-r-1"}), nil
	})
}

// mustModel returns a model pointed at f; mut adjusts the config.
func mustModel(tb testing.TB, f *fake, mut func(*openai.Config)) *openai.Model {
	tb.Helper()
	cfg := openai.Config{BaseURL: f.URL(), APIKey: testKey, Model: "qwen2.5:7b", MaxRetries: 2}
	if mut != nil {
		mut(&cfg)
	}
	m, err := openai.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

func state(tools ...fleet.Tool) *fleet.State {
	return &fleet.State{RunID: "r-1", Specialist: "smoke", Goal: "Check that the face of qa-demo loads.", Persona: "You are the smoke specialist.", Tools: tools}
}

func asJSON(tb testing.TB, s string) any {
	tb.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		tb.Fatalf("bad JSON %s: %v", s, err)
	}
	return v
}

func TestNewValidates(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  openai.Config
		want string // "" = ok
	}{
		{"ok", openai.Config{BaseURL: "http://127.0.0.1:11434/v1", Model: "llama3.1"}, ""},
		{"default base url", openai.Config{Model: "gpt-4o-mini", APIKey: "k"}, ""},
		{"no model", openai.Config{BaseURL: "http://127.0.0.1:11434/v1"}, "model: required"},
		{"blank model", openai.Config{BaseURL: "http://127.0.0.1:11434/v1", Model: "  "}, "model: required"},
		{"unparsable", openai.Config{BaseURL: "http://[::1", Model: "m"}, "base url"},
		{"relative", openai.Config{BaseURL: "127.0.0.1:11434/v1", Model: "m"}, "base url"},
		{"not http", openai.Config{BaseURL: "ftp://example.com/v1", Model: "m"}, "absolute http(s) URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := openai.New(tc.cfg)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("New: %v", err)
			case tc.want == "" && m == nil:
				t.Fatal("New returned nil")
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("New: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestRequestWireShape records the JSON the SDK sends for a first turn and
// checks every field we set.
func TestRequestWireShape(t *testing.T) {
	f := newFake(t, answer(text("nothing to do")))
	temp := 0.2
	m := mustModel(t, f, func(c *openai.Config) { c.Temperature = &temp; c.MaxTokens = 512 })
	st := state(createTool(), fetchTool(), reportTool())
	if _, err := m.Next(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	reqs := f.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	req := reqs[0]
	if got := req.Header.Get("Authorization"); got != "Bearer "+testKey {
		t.Errorf("Authorization = %q", got)
	}
	if got := req.Header.Get("Content-Type"); got != "application/json" {
		t.Errorf("Content-Type = %q", got)
	}
	sys := req.messages()[0]["content"].(string)
	for _, want := range []string{"QA probe", "one tool", "qa_report", "Never invent tool results", "plain text without a tool call", "\n\nYou are the smoke specialist."} {
		if !strings.Contains(sys, want) {
			t.Errorf("system message lacks %q:\n%s", want, sys)
		}
	}
	want := asJSON(t, `{
		"model": "qwen2.5:7b",
		"messages": [
			{"role": "system", "content": `+mustQuote(t, sys)+`},
			{"role": "user", "content": "Check that the face of qa-demo loads."}
		],
		"tools": [
			{"type": "function", "function": {"name": "qa_create", "description": "mint a sandbox name",
				"parameters": {"type": "object", "properties": {}, "additionalProperties": false}}},
			{"type": "function", "function": {"name": "qa_fetch", "description": "GET an allowlisted public URL",
				"parameters": {"type": "object", "additionalProperties": false, "required": ["url"],
					"properties": {"url": {"type": "string", "description": "an allowlisted URL"}}}}},
			{"type": "function", "function": {"name": "qa_report", "description": "post a finding",
				"parameters": {"type": "object", "additionalProperties": false, "required": ["severity", "summary"],
					"properties": {
						"severity": {"type": "string", "description": "how bad it is", "enum": ["high", "medium", "low"]},
						"summary": {"type": "string", "maxLength": 200},
						"repro": {"type": "string"}}}}}
		],
		"tool_choice": "auto",
		"parallel_tool_calls": false,
		"temperature": 0.2,
		"max_tokens": 512
	}`)
	if diff := cmp.Diff(want, any(req.Body)); diff != "" {
		t.Errorf("request body (-want +got):\n%s\nraw: %s", diff, req.Raw)
	}
}

func mustQuote(tb testing.TB, s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// TestRequestWithoutTools leaves out tool_choice and parallel_tool_calls,
// which OpenAI refuses without tools, and the optional knobs.
func TestRequestWithoutTools(t *testing.T) {
	f := newFake(t, answer(text("done")))
	m := mustModel(t, f, func(c *openai.Config) { c.APIKey = "" })
	st := state()
	st.Persona = ""
	if _, err := m.Next(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	req := f.requests()[0]
	for _, k := range []string{"tools", "tool_choice", "parallel_tool_calls", "temperature", "max_tokens"} {
		if v, ok := req.Body[k]; ok {
			t.Errorf("%s = %v, want it omitted", k, v)
		}
	}
	if got := req.Header.Get("Authorization"); got != "" {
		t.Errorf("Authorization = %q without an API key", got)
	}
	if sys := req.messages()[0]["content"].(string); strings.Contains(sys, "\n\n") {
		t.Errorf("system message has a persona section without a persona: %q", sys)
	}
}

// TestEnvironmentIgnored: the SDK's NewClient reads OPENAI_* variables; the
// model must not, or an OpenAI key would go to a local server.
func TestEnvironmentIgnored(t *testing.T) {
	other := newFake(t)
	t.Setenv("OPENAI_API_KEY", "sk-from-the-environment")
	t.Setenv("OPENAI_BASE_URL", other.URL())
	t.Setenv("OPENAI_CUSTOM_HEADERS", "X-Leak: yes")
	f := newFake(t, answer(text("done")))
	m := mustModel(t, f, func(c *openai.Config) { c.APIKey = "" })
	if _, err := m.Next(context.Background(), state(fetchTool())); err != nil {
		t.Fatal(err)
	}
	req := f.requests()[0]
	if got := req.Header.Get("Authorization"); got != "" {
		t.Errorf("Authorization = %q, want none", got)
	}
	if got := req.Header.Get("X-Leak"); got != "" {
		t.Errorf("X-Leak = %q, want none", got)
	}
	if n := len(other.requests()); n != 0 {
		t.Errorf("OPENAI_BASE_URL server got %d requests", n)
	}
}

// TestMultiTurn plays a tool call, feeds its result back, and checks the
// second request carries the call and its result under one id.
func TestMultiTurn(t *testing.T) {
	f := newFake(t,
		answer(toolCall("call_Xy12", "qa_fetch", `{"url":"http://127.0.0.1:8080/face/qa-demo"}`)),
		check(func(t testing.TB, req request) {
			msgs := req.messages()
			if len(msgs) != 4 {
				t.Errorf("%d messages, want 4: %s", len(msgs), req.Raw)
				return
			}
			want := asJSON(t, `[
				{"role": "assistant", "tool_calls": [{"id": "call_Xy12", "type": "function",
					"function": {"name": "qa_fetch", "arguments": "{\"url\":\"http://127.0.0.1:8080/face/qa-demo\"}"}}]},
				{"role": "tool", "tool_call_id": "call_Xy12",
					"content": "{\"body\":\"<h1>qa-demo</h1>\",\"latency_ms\":12,\"ok\":true,\"status\":200}"}
			]`)
			got := []any{msgs[2], msgs[3]}
			if diff := cmp.Diff(want, any(got)); diff != "" {
				t.Errorf("history messages (-want +got):\n%s", diff)
			}
		}, text("The face of qa-demo loads (200).")),
	)
	m := mustModel(t, f, nil)
	st := state(fetchTool(), reportTool())

	step, err := m.Next(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	want := fleet.Step{
		Call:  &fleet.Call{Tool: "qa_fetch", Args: json.RawMessage(`{"url":"http://127.0.0.1:8080/face/qa-demo"}`), ID: "call_Xy12"},
		Usage: fleet.Usage{TokensIn: 120, TokensOut: 30},
	}
	if diff := cmp.Diff(want, step); diff != "" {
		t.Fatalf("turn 1 step (-want +got):\n%s", diff)
	}

	st.History = append(st.History, fleet.Exchange{Call: *step.Call, Verdict: fleet.VerdictOK,
		Result: fleet.Result{"ok": true, "status": 200, "body": "<h1>qa-demo</h1>", "latency_ms": 12}})
	st.Turn = 1
	step, err = m.Next(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	want = fleet.Step{Done: true, Summary: "The face of qa-demo loads (200).", Usage: fleet.Usage{TokensIn: 120, TokensOut: 30}}
	if diff := cmp.Diff(want, step); diff != "" {
		t.Fatalf("turn 2 step (-want +got):\n%s", diff)
	}
}

// TestHistoryWithoutIDs: calls without a provider id (a playbook's, or a
// server that sends none) get ids by position that their results match.
func TestHistoryWithoutIDs(t *testing.T) {
	f := newFake(t, answer(text("done")))
	m := mustModel(t, f, nil)
	st := state(fetchTool())
	st.History = []fleet.Exchange{
		{Call: fleet.Call{Tool: "qa_fetch", Args: json.RawMessage(`{"url":"a"}`)}, Result: fleet.Result{"ok": true}},
		{Call: fleet.Call{Tool: "qa_create"}, Verdict: fleet.VerdictRefused, Result: fleet.Result{"ok": false, "error": "refused: needs dial exercise, dial is observe"}},
	}
	if _, err := m.Next(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	msgs := f.requests()[0].messages()
	if len(msgs) != 6 {
		t.Fatalf("%d messages, want 6", len(msgs))
	}
	for i, wantID := range []string{"call_0", "call_1"} {
		call := msgs[2+2*i]["tool_calls"].([]any)[0].(map[string]any)
		if call["id"] != wantID || msgs[3+2*i]["tool_call_id"] != wantID {
			t.Errorf("exchange %d: call id %v, tool_call_id %v, want %s", i, call["id"], msgs[3+2*i]["tool_call_id"], wantID)
		}
	}
	if got := msgs[4]["tool_calls"].([]any)[0].(map[string]any)["function"].(map[string]any)["arguments"]; got != "{}" {
		t.Errorf("arguments of a call without args = %q, want {}", got)
	}
	if got := msgs[5]["content"]; !strings.Contains(got.(string), "refused: needs dial exercise") {
		t.Errorf("refusal result = %v", got)
	}
}

// TestRetryNote: after malformed output the model is told what was wrong.
func TestRetryNote(t *testing.T) {
	f := newFake(t, answer(text("done")))
	m := mustModel(t, f, nil)
	st := state(fetchTool())
	st.Retry = "openai: tool call qa_fetch: arguments are not valid JSON"
	if _, err := m.Next(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	msgs := f.requests()[0].messages()
	last := msgs[len(msgs)-1]
	if last["role"] != "user" || !strings.Contains(last["content"].(string), "could not be used: "+st.Retry) {
		t.Errorf("last message = %v, want a user note with the reason", last)
	}
}

func TestAnswers(t *testing.T) {
	usage := fleet.Usage{TokensIn: 120, TokensOut: 30}
	noUsage := text("All checks passed.")
	noUsage.Usage = nil
	noChoices := text("x")
	noChoices.Choices = nil
	filtered := text("")
	filtered.Choices[0].FinishReason = "content_filter"
	truncated := text("I will now call qa_fe")
	truncated.Choices[0].FinishReason = "length"
	empty := completion("stop", wireMessage{})
	custom := toolCall("c1", "qa_fetch", `{}`)
	custom.Choices[0].Message.ToolCalls[0].Type = "custom"

	for _, tc := range []struct {
		name      string
		answer    wireCompletion
		want      fleet.Step
		malformed string // a substring of the error; "" = no error
	}{
		{name: "tool call", answer: toolCall("c1", "qa_fetch", `{"url":"u"}`),
			want: fleet.Step{Call: &fleet.Call{Tool: "qa_fetch", Args: json.RawMessage(`{"url":"u"}`), ID: "c1"}, Usage: usage}},
		{name: "first of several calls", answer: toolCalls([3]string{"c1", "qa_fetch", `{"url":"a"}`}, [3]string{"c2", "qa_report", `{}`}),
			want: fleet.Step{Call: &fleet.Call{Tool: "qa_fetch", Args: json.RawMessage(`{"url":"a"}`), ID: "c1"}, Usage: usage}},
		{name: "empty arguments", answer: toolCall("c1", "qa_create", ""),
			want: fleet.Step{Call: &fleet.Call{Tool: "qa_create", ID: "c1"}, Usage: usage}},
		{name: "unknown tool passes to the host", answer: toolCall("c1", "qa_nope", `{}`),
			want: fleet.Step{Call: &fleet.Call{Tool: "qa_nope", Args: json.RawMessage(`{}`), ID: "c1"}, Usage: usage}},
		{name: "final text", answer: text("  All checks passed.\n"),
			want: fleet.Step{Done: true, Summary: "All checks passed.", Usage: usage}},
		{name: "no usage", answer: noUsage,
			want: fleet.Step{Done: true, Summary: "All checks passed."}},
		{name: "broken arguments", answer: toolCall("c1", "qa_compile", `{"source": `),
			want: fleet.Step{Usage: usage}, malformed: `tool call qa_compile: arguments are not valid JSON (unexpected end of JSON input): "{\"source\":"`},
		{name: "refusal", answer: refusal("I can't help with probing systems."),
			want: fleet.Step{Usage: usage}, malformed: `the model refused: "I can't help with probing systems."`},
		{name: "no choices", answer: noChoices, want: fleet.Step{Usage: usage}, malformed: "no choices"},
		{name: "content filter", answer: filtered, want: fleet.Step{Usage: usage}, malformed: "content filter"},
		{name: "length", answer: truncated, want: fleet.Step{Usage: usage}, malformed: "token limit"},
		{name: "empty", answer: empty, want: fleet.Step{Usage: usage}, malformed: "neither a tool call nor text"},
		{name: "custom tool call", answer: custom, want: fleet.Step{Usage: usage}, malformed: `"custom" tool call`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, answer(tc.answer))
			step, err := mustModel(t, f, nil).Next(context.Background(), state(fetchTool()))
			if tc.malformed == "" && err != nil {
				t.Fatalf("Next: %v", err)
			}
			if tc.malformed != "" {
				if !errors.Is(err, fleet.ErrMalformed) || !strings.Contains(err.Error(), tc.malformed) {
					t.Fatalf("Next: %v, want ErrMalformed containing %q", err, tc.malformed)
				}
			}
			if diff := cmp.Diff(tc.want, step); diff != "" {
				t.Errorf("step (-want +got):\n%s", diff)
			}
		})
	}
}

// gap returns the time between the arrival of requests i-1 and i.
func gap(reqs []request, i int) time.Duration { return reqs[i].At.Sub(reqs[i-1].At) }

func TestRetries(t *testing.T) {
	good := toolCall("c1", "qa_fetch", `{"url":"u"}`)
	for _, tc := range []struct {
		name     string
		first    responder
		min, max time.Duration // the wait before the retry
	}{
		{"429 Retry-After seconds", status(http.StatusTooManyRequests, map[string]string{"Retry-After": "1"},
			openAIError("Rate limit reached for requests", "requests", "rate_limit_exceeded")), 950 * time.Millisecond, 2500 * time.Millisecond},
		{"429 retry-after-ms", status(http.StatusTooManyRequests, map[string]string{"retry-after-ms": "300"},
			openAIError("Rate limit reached", "requests", "rate_limit_exceeded")), 280 * time.Millisecond, 1500 * time.Millisecond},
		// Without Retry-After the SDK backs off 0.5 s minus up to 25% jitter.
		{"500", status(http.StatusInternalServerError, nil, openAIError("The server had an error", "server_error", "")), 300 * time.Millisecond, 2 * time.Second},
		{"503 plain text body", status(http.StatusServiceUnavailable, nil, "upstream unavailable"), 300 * time.Millisecond, 2 * time.Second},
		{"connection dropped before the answer", hangUp(), 300 * time.Millisecond, 2 * time.Second},
		{"connection dropped mid-answer", cutOff(good), 300 * time.Millisecond, 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, tc.first, answer(good))
			step, err := mustModel(t, f, nil).Next(context.Background(), state(fetchTool()))
			if err != nil {
				t.Fatalf("Next: %v", err)
			}
			if step.Call == nil || step.Call.Tool != "qa_fetch" || step.Usage.TokensIn != 120 {
				t.Fatalf("step = %+v", step)
			}
			reqs := f.requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests, want 2", len(reqs))
			}
			if string(reqs[0].Raw) != string(reqs[1].Raw) {
				t.Errorf("the retry sent a different body:\n%s\n%s", reqs[0].Raw, reqs[1].Raw)
			}
			if d := gap(reqs, 1); d < tc.min || d > tc.max {
				t.Errorf("waited %v before retrying, want %v..%v", d, tc.min, tc.max)
			}
		})
	}
}

func TestRetriesExhausted(t *testing.T) {
	busy := status(http.StatusTooManyRequests, map[string]string{"retry-after-ms": "10"}, openAIError("Rate limit reached", "requests", "rate_limit_exceeded"))
	f := newFake(t, busy, busy, busy)
	_, err := mustModel(t, f, nil).Next(context.Background(), state(fetchTool()))
	var ae *openai.APIError
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusTooManyRequests || ae.Attempts != 3 {
		t.Fatalf("Next: %v (%#v), want a 429 APIError after 3 attempts", err, ae)
	}
	if want := "openai: status 429 Too Many Requests after 3 attempts: Rate limit reached (type requests, code rate_limit_exceeded)"; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
	if errors.Is(err, fleet.ErrMalformed) {
		t.Error("a server error must not read as malformed model output")
	}
}

func TestUnauthorized(t *testing.T) {
	f := newFake(t, status(http.StatusUnauthorized, nil, openAIError("Incorrect API key provided: "+testKey+".", "invalid_request_error", "invalid_api_key")))
	_, err := mustModel(t, f, nil).Next(context.Background(), state(fetchTool()))
	var ae *openai.APIError
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusUnauthorized {
		t.Fatalf("Next: %v, want a 401 APIError", err)
	}
	if n := len(f.requests()); n != 1 {
		t.Errorf("%d requests, want 1 (401 is not retried)", n)
	}
	if strings.Contains(err.Error(), testKey) || strings.Contains(ae.Message, testKey) {
		t.Errorf("error leaks the API key: %v", err)
	}
	if want := "openai: status 401 Unauthorized: Incorrect API key provided: [redacted]. (type invalid_request_error, code invalid_api_key)"; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
}

// TestErrorBodies: servers that do not send OpenAI's error object still get
// their status and message reported.
func TestErrorBodies(t *testing.T) {
	for _, tc := range []struct {
		name, body, want string
	}{
		{"openai", openAIError(`model "llama9" not found, try pulling it first`, "api_error", ""), `openai: status 404 Not Found: model "llama9" not found, try pulling it first (type api_error)`},
		{"error string", `{"error":"model 'llama9' not found"}`, "openai: status 404 Not Found: model 'llama9' not found"},
		{"detail", `{"detail":"Not Found"}`, "openai: status 404 Not Found: Not Found"},
		{"plain text", "404 page not found\n", "openai: status 404 Not Found: 404 page not found"},
		{"numeric code", `{"error":{"code":404,"message":"File Not Found","type":"not_found_error"}}`, "openai: status 404 Not Found: File Not Found (type not_found_error, code 404)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, status(http.StatusNotFound, nil, tc.body))
			_, err := mustModel(t, f, nil).Next(context.Background(), state())
			var ae *openai.APIError
			if !errors.As(err, &ae) || err.Error() != tc.want {
				t.Errorf("Next: %v, want %q", err, tc.want)
			}
		})
	}
}

func TestCancel(t *testing.T) {
	t.Run("during the request", func(t *testing.T) {
		f := newFake(t, block())
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := mustModel(t, f, nil).Next(ctx, state())
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 2*time.Second {
			t.Errorf("Next: %v after %v, want DeadlineExceeded promptly", err, time.Since(start))
		}
	})
	t.Run("during a retry wait", func(t *testing.T) {
		f := newFake(t, status(http.StatusTooManyRequests, map[string]string{"Retry-After": "60"}, openAIError("slow down", "requests", "")))
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := mustModel(t, f, nil).Next(ctx, state())
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 2*time.Second {
			t.Errorf("Next: %v after %v, want DeadlineExceeded promptly", err, time.Since(start))
		}
	})
}

// TestRequestTimeout: an attempt that outlives RequestTimeout ends the
// call (the SDK does not retry its own timeout) with an error that says so.
func TestRequestTimeout(t *testing.T) {
	f := newFake(t, block())
	m := mustModel(t, f, func(c *openai.Config) { c.RequestTimeout = 200 * time.Millisecond })
	start := time.Now()
	_, err := m.Next(context.Background(), state())
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "no answer within the request timeout 200ms") {
		t.Fatalf("Next: %v, want a request timeout", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %v", d)
	}
}
