package gemini

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/qafleet/fleetd/fleet"
	"google.golang.org/genai"
)

type fetchArgs struct {
	URL string `json:"url" desc:"an http(s) URL on the allowlist" maxlen:"2048"`
}

type reportArgs struct {
	Severity string   `json:"severity" enum:"critical,high,medium,low,info" desc:"how bad it is"`
	Summary  string   `json:"summary" desc:"what is wrong" maxlen:"1800"`
	Tags     []string `json:"tags,omitempty" desc:"labels"`
	Count    int      `json:"count,omitempty"`
	Score    float64  `json:"score,omitempty"`
	Urgent   bool     `json:"urgent,omitempty"`
}

type chainArgs struct {
	Method string          `json:"method" desc:"a read-only JSON-RPC method"`
	Params json.RawMessage `json:"params,omitempty" jsontype:"array" desc:"the method's parameters"`
}

type createArgs struct{}

func testTools() []fleet.Tool {
	fetch := fleet.NewTool("qa_fetch", "GET an allowlisted public URL", fleet.Observe, func(context.Context, fetchArgs) (fleet.Result, error) {
		return fleet.OK(map[string]any{"status": 200}), nil
	})
	report := fleet.NewTool("qa_report", "post a finding", fleet.Observe, func(context.Context, reportArgs) (fleet.Result, error) {
		return fleet.OK(map[string]any{"entry_id": 7}), nil
	})
	chain := fleet.NewTool("qa_chain", "read-only JSON-RPC", fleet.Observe, func(context.Context, chainArgs) (fleet.Result, error) {
		return fleet.OK(nil), nil
	})
	create := fleet.NewTool("qa_create", "mint a sandbox name", fleet.Exercise, func(context.Context, createArgs) (fleet.Result, error) {
		return fleet.OK(nil), nil
	})
	return []fleet.Tool{chain, create, fetch, report}
}

func testState() *fleet.State {
	return &fleet.State{
		RunID: "r-1", Specialist: "smoke", Goal: "check that the face of demo loads",
		Persona: "You are the smoke specialist. Be brief.", Dial: fleet.Observe, Tools: testTools(),
	}
}

// TestMultiTurn plays a function-calling conversation: the model calls
// qa_fetch, the next request carries that call (with its id and thought
// signature, unchanged) and the tool's result, and the model finishes.
func TestMultiTurn(t *testing.T) {
	sig := []byte("opaque\x00signature\xff")
	f := newFake(t,
		reply(callReply("qa_fetch", map[string]any{"url": "https://demo.example/face"}, "call-1", sig)),
		check(func(t *testing.T, req captured) {
			contents := path(t, req.Body, "contents").([]any)
			if len(contents) != 3 {
				t.Fatalf("contents: want goal, call, response; got %d: %s", len(contents), req.Raw)
			}
			if got := path(t, contents[0], "role"); got != "user" {
				t.Errorf("first turn role %v", got)
			}
			if got, _ := path(t, contents[0], "parts", 0, "text").(string); !strings.HasPrefix(got, "Goal: check that the face of demo loads") {
				t.Errorf("first turn %q", got)
			}
			want := decode(t, `[
				{"role": "model", "parts": [{
					"functionCall": {"id": "call-1", "name": "qa_fetch", "args": {"url": "https://demo.example/face"}},
					"thoughtSignature": "`+base64.StdEncoding.EncodeToString(sig)+`"}]},
				{"role": "user", "parts": [{
					"functionResponse": {"id": "call-1", "name": "qa_fetch", "response": {"ok": true, "status": 200, "latency_ms": 12}}}]}
			]`)
			if d := cmp.Diff(want, any(contents[1:])); d != "" {
				t.Errorf("history turns (-want +got):\n%s", d)
			}
		}, reply(textReply("The face loads; nothing to report."))),
	)
	m, _ := newModel(t, f, nil)
	s := testState()

	step, err := m.Next(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if step.Done || step.Call == nil || step.Call.Tool != "qa_fetch" || string(step.Call.Args) != `{"url":"https://demo.example/face"}` {
		t.Fatalf("step 1: %+v", step)
	}
	if id, got := unpackID(step.Call.ID); id != "call-1" || string(got) != string(sig) {
		t.Errorf("call id %q: id %q, signature %q", step.Call.ID, id, got)
	}
	if step.Usage != (fleet.Usage{TokensIn: 120, TokensOut: 45}) {
		t.Errorf("usage %+v", step.Usage)
	}

	s.History = append(s.History, fleet.Exchange{Call: *step.Call, Verdict: fleet.VerdictOK, Result: fleet.Result{"ok": true, "status": 200, "latency_ms": 12}})
	s.Turn = 1
	step, err = m.Next(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if !step.Done || step.Call != nil || step.Summary != "The face loads; nothing to report." {
		t.Fatalf("step 2: %+v", step)
	}
	if step.Usage != (fleet.Usage{TokensIn: 200, TokensOut: 40}) {
		t.Errorf("usage %+v", step.Usage)
	}
	if n := len(f.requests()); n != 2 {
		t.Errorf("%d requests", n)
	}
}

// TestRefusedCallResponse: a refused or invalid call goes back as a
// functionResponse with ok:false and the host's error.
// (The SDK omits an empty args map, so a call without arguments goes out
// with no "args" at all.)
func TestRefusedCallResponse(t *testing.T) {
	f := newFake(t, check(func(t *testing.T, req captured) {
		want := decode(t, `[
			{"role": "model", "parts": [{"functionCall": {"name": "qa_create"}}]},
			{"role": "user", "parts": [{"functionResponse": {"name": "qa_create", "response": {"ok": false, "error": "refused: needs dial exercise, dial is observe", "latency_ms": 0}}}]},
			{"role": "model", "parts": [{"functionCall": {"name": "qa_fetch", "args": {"url": 5}}}]},
			{"role": "user", "parts": [{"functionResponse": {"name": "qa_fetch", "response": {"ok": false, "error": "invalid argument \"url\": want string, got number", "latency_ms": 0}}}]}
		]`)
		if d := cmp.Diff(want, path(t, req.Body, "contents").([]any)[1:]); d != "" {
			t.Errorf("history (-want +got):\n%s", d)
		}
	}, reply(textReply("done"))))
	m, _ := newModel(t, f, nil)
	s := testState()
	s.History = []fleet.Exchange{
		{Call: fleet.Call{Tool: "qa_create", Args: json.RawMessage(`{}`)}, Verdict: fleet.VerdictRefused,
			Result: fleet.Result{"ok": false, "error": "refused: needs dial exercise, dial is observe", "latency_ms": 0}},
		{Call: fleet.Call{Tool: "qa_fetch", Args: json.RawMessage(`{"url":5}`)}, Verdict: fleet.VerdictInvalid,
			Result: fleet.Result{"error": `invalid argument "url": want string, got number`, "latency_ms": 0}},
	}
	if _, err := m.Next(context.Background(), s); err != nil {
		t.Fatal(err)
	}
}

// TestDeclarations checks the function declarations generated from the
// tools' typed argument structs.
func TestDeclarations(t *testing.T) {
	f := newFake(t, check(func(t *testing.T, req captured) {
		want := decode(t, `[{"functionDeclarations": [
			{"name": "qa_chain", "description": "read-only JSON-RPC",
			 "parametersJsonSchema": {"type": "object", "additionalProperties": false, "required": ["method"],
				"properties": {
					"method": {"type": "string", "description": "a read-only JSON-RPC method"},
					"params": {"type": "array", "description": "the method's parameters"}}}},
			{"name": "qa_create", "description": "mint a sandbox name (needs the autonomy dial at exercise or higher)"},
			{"name": "qa_fetch", "description": "GET an allowlisted public URL",
			 "parameters": {"type": "OBJECT", "required": ["url"],
				"properties": {"url": {"type": "STRING", "description": "an http(s) URL on the allowlist", "maxLength": 2048}}}},
			{"name": "qa_report", "description": "post a finding",
			 "parameters": {"type": "OBJECT", "required": ["severity", "summary"],
				"properties": {
					"severity": {"type": "STRING", "description": "how bad it is", "enum": ["critical", "high", "medium", "low", "info"]},
					"summary": {"type": "STRING", "description": "what is wrong", "maxLength": 1800},
					"tags": {"type": "ARRAY", "description": "labels", "items": {"type": "STRING"}},
					"count": {"type": "INTEGER"},
					"score": {"type": "NUMBER"},
					"urgent": {"type": "BOOLEAN"}}}}
		]}]`)
		if d := cmp.Diff(want, path(t, req.Body, "tools")); d != "" {
			t.Errorf("tools (-want +got):\n%s", d)
		}
	}, reply(textReply("done"))),
		// Only the tools still enabled are declared.
		check(func(t *testing.T, req captured) {
			decls := path(t, req.Body, "tools", 0, "functionDeclarations").([]any)
			if len(decls) != 1 || path(t, decls[0], "name") != "qa_report" {
				t.Errorf("declarations %v", decls)
			}
		}, reply(textReply("done"))),
		// No tools: no tools field at all.
		check(func(t *testing.T, req captured) {
			if _, ok := req.Body["tools"]; ok {
				t.Errorf("tools sent: %s", req.Raw)
			}
		}, reply(textReply("done"))),
	)
	m, _ := newModel(t, f, nil)
	s := testState()
	for _, tools := range [][]fleet.Tool{testTools(), testTools()[3:], nil} {
		s.Tools = tools
		if _, err := m.Next(context.Background(), s); err != nil {
			t.Fatal(err)
		}
	}
}

func TestDeclareUnsupportedType(t *testing.T) {
	tool := fleet.Tool{Name: "qa_odd", Schema: &fleet.Schema{Type: "object", Properties: map[string]*fleet.Schema{"x": {Type: "date"}}}}
	_, err := declare(tool)
	if err == nil || !strings.Contains(err.Error(), `qa_odd: x: unsupported schema type "date"`) {
		t.Fatalf("err %v", err)
	}
	m := &Model{}
	s := testState()
	s.Tools = append(s.Tools, tool)
	if _, err := m.Next(context.Background(), s); err == nil || errors.Is(err, fleet.ErrMalformed) {
		t.Fatalf("Next with a bad schema: %v", err)
	}
}

// TestRequestShape checks the persona as systemInstruction, the generation
// config, path and key header.
func TestRequestShape(t *testing.T) {
	f := newFake(t, check(func(t *testing.T, req captured) {
		if req.Path != "/v1beta/models/gemini-test-model:generateContent" {
			t.Errorf("path %s", req.Path)
		}
		if got := req.Header.Get("X-Goog-Api-Key"); got != testKey {
			t.Errorf("key header %q", got)
		}
		sys := path(t, req.Body, "systemInstruction", "parts", 0, "text").(string)
		for _, want := range []string{"You are a QA probe", "qa_report", "Never invent a result", "plain-text summary", "The autonomy dial is observe.", "\n\nYou are the smoke specialist. Be brief."} {
			if !strings.Contains(sys, want) {
				t.Errorf("system instruction lacks %q:\n%s", want, sys)
			}
		}
		if !strings.HasSuffix(sys, "You are the smoke specialist. Be brief.") {
			t.Errorf("persona is not the end of the system instruction:\n%s", sys)
		}
		if d := cmp.Diff(decode(t, `{"temperature": 0.25, "maxOutputTokens": 2048}`), path(t, req.Body, "generationConfig")); d != "" {
			t.Errorf("generationConfig (-want +got):\n%s", d)
		}
		goal := path(t, req.Body, "contents", 0, "parts", 0, "text").(string)
		for _, want := range []string{"Goal: check that the face of demo loads", "Run r-1, specialist smoke.", `"faces": "https://demo.example/{name}"`} {
			if !strings.Contains(goal, want) {
				t.Errorf("goal turn lacks %q:\n%s", want, goal)
			}
		}
	}, reply(textReply("done"))))
	temp := float32(0.25)
	m, _ := newModel(t, f, func(c *Config) { c.Model = "gemini-test-model"; c.Temperature = &temp; c.MaxOutputTokens = 2048 })
	s := testState()
	s.Target = fleet.Target{Faces: "https://demo.example/{name}"}
	if _, err := m.Next(context.Background(), s); err != nil {
		t.Fatal(err)
	}
}

// TestRetryNote: after a malformed reply the loop sets State.Retry; the
// request tells the model what was wrong, in the last user turn.
func TestRetryNote(t *testing.T) {
	f := newFake(t, check(func(t *testing.T, req captured) {
		contents := path(t, req.Body, "contents").([]any)
		last := contents[len(contents)-1]
		if path(t, last, "role") != "user" || path(t, last, "parts", 0, "functionResponse", "name") != "qa_fetch" {
			t.Errorf("last turn %v", last)
		}
		note, _ := path(t, last, "parts", 1, "text").(string)
		if !strings.Contains(note, "previous reply could not be used: gemini reply: bad call") {
			t.Errorf("note %q", note)
		}
	}, reply(textReply("done"))))
	m, _ := newModel(t, f, nil)
	s := testState()
	s.History = []fleet.Exchange{{Call: fleet.Call{Tool: "qa_fetch", Args: json.RawMessage(`{"url":"u"}`)}, Verdict: fleet.VerdictOK, Result: fleet.Result{"ok": true}}}
	s.Retry = "gemini reply: bad call"
	if _, err := m.Next(context.Background(), s); err != nil {
		t.Fatal(err)
	}
}

// TestCallPassThrough: the first function call is returned exactly as the
// model made it, even when it names no declared tool.
func TestCallPassThrough(t *testing.T) {
	two := callReply("qa_nonexistent", map[string]any{"a": []any{1.5, "x"}}, "", nil)
	two.Candidates[0].Content.Parts = append([]*genai.Part{{Text: "Let me look.", Thought: true}, {Text: "I will call a tool."}},
		append(two.Candidates[0].Content.Parts, &genai.Part{FunctionCall: &genai.FunctionCall{Name: "qa_fetch", Args: map[string]any{"url": "u"}}})...)
	f := newFake(t, reply(two), reply(callReply("qa_create", nil, "", nil)))
	m, _ := newModel(t, f, nil)

	step, err := m.Next(context.Background(), testState())
	if err != nil {
		t.Fatal(err)
	}
	if step.Call == nil || step.Call.Tool != "qa_nonexistent" || string(step.Call.Args) != `{"a":[1.5,"x"]}` || step.Call.ID != "" || step.Done {
		t.Fatalf("step %+v", step)
	}
	step, err = m.Next(context.Background(), testState())
	if err != nil {
		t.Fatal(err)
	}
	if step.Call == nil || step.Call.Tool != "qa_create" || string(step.Call.Args) != `{}` {
		t.Fatalf("call without args: %+v", step.Call)
	}
}

// TestMalformed: output the loop cannot use is ErrMalformed, says what
// happened, and still reports usage.
func TestMalformed(t *testing.T) {
	candidate := func(fr genai.FinishReason, msg string, parts ...*genai.Part) *genai.GenerateContentResponse {
		c := &genai.Candidate{FinishReason: fr, FinishMessage: msg}
		if parts != nil {
			c.Content = &genai.Content{Role: genai.RoleModel, Parts: parts}
		}
		return &genai.GenerateContentResponse{Candidates: []*genai.Candidate{c}, UsageMetadata: usageMeta(50, 3, 2)}
	}
	tests := []struct {
		name string
		resp *genai.GenerateContentResponse
		want string
	}{
		// The SDK drops finishMessage for the Gemini API backend, so only the reason shows.
		{"malformed function call", candidate(genai.FinishReasonMalformedFunctionCall, "Malformed function call: qa_fetch(url=)"),
			"the model produced a malformed function call (finishReason MALFORMED_FUNCTION_CALL)"},
		{"blocked prompt", &genai.GenerateContentResponse{
			PromptFeedback: &genai.GenerateContentResponsePromptFeedback{BlockReason: genai.BlockedReasonSafety, BlockReasonMessage: "unsafe"},
			UsageMetadata:  usageMeta(50, 3, 2)},
			"the prompt was blocked (blockReason SAFETY: unsafe)"},
		{"safety stop", candidate(genai.FinishReasonSafety, ""), "the model stopped without a usable reply (finishReason SAFETY)"},
		{"safety stop with partial text", candidate(genai.FinishReasonSafety, "", &genai.Part{Text: "Here is how to"}), "finishReason SAFETY"},
		{"recitation", candidate(genai.FinishReasonRecitation, ""), "finishReason RECITATION"},
		{"max tokens", candidate(genai.FinishReasonMaxTokens, "", &genai.Part{Text: "I checked the face and"}), "hit the output token limit"},
		{"no candidates", &genai.GenerateContentResponse{UsageMetadata: usageMeta(50, 3, 2)}, "the response has no candidates"},
		{"empty reply", candidate(genai.FinishReasonStop, "", &genai.Part{Text: "  "}), "neither a function call nor text (finishReason STOP)"},
		{"only thoughts", candidate(genai.FinishReasonStop, "", &genai.Part{Text: "hmm", Thought: true}), "neither a function call nor text"},
		{"nameless call", candidate(genai.FinishReasonStop, "", &genai.Part{FunctionCall: &genai.FunctionCall{Args: map[string]any{}}}), "a function call without a name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, reply(tt.resp))
			m, waits := newModel(t, f, nil)
			step, err := m.Next(context.Background(), testState())
			if !errors.Is(err, fleet.ErrMalformed) {
				t.Fatalf("err %v, want ErrMalformed", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err %q lacks %q", err, tt.want)
			}
			if step.Call != nil || step.Done {
				t.Errorf("step %+v", step)
			}
			if tt.resp.UsageMetadata != nil && step.Usage != (fleet.Usage{TokensIn: 50, TokensOut: 5}) {
				t.Errorf("usage %+v", step.Usage)
			}
			if len(*waits) != 0 || len(f.requests()) != 1 {
				t.Errorf("malformed output was retried by the adapter: %d waits, %d requests", len(*waits), len(f.requests()))
			}
		})
	}
}

// TestRateLimit: a 429 with Retry-After: 1 is retried after about a second.
func TestRateLimit(t *testing.T) {
	f := newFake(t,
		apiError(429, "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota).", map[string]string{"Retry-After": "1"}),
		reply(callReply("qa_fetch", map[string]any{"url": "u"}, "", nil)),
	)
	m, waits := newModel(t, f, nil)
	step, err := m.Next(context.Background(), testState())
	if err != nil {
		t.Fatal(err)
	}
	if step.Call == nil || step.Call.Tool != "qa_fetch" {
		t.Fatalf("step %+v", step)
	}
	if len(*waits) != 1 || (*waits)[0] < time.Second || (*waits)[0] > 1100*time.Millisecond {
		t.Errorf("waits %v, want one of 1s..1.1s", *waits)
	}
	if len(f.requests()) != 2 {
		t.Errorf("%d requests", len(f.requests()))
	}
}

// TestRateLimitRealWait does the wait for real: Retry-After: 1 holds the
// retry back at least a second.
func TestRateLimitRealWait(t *testing.T) {
	f := newFake(t,
		apiError(429, "RESOURCE_EXHAUSTED", "quota", map[string]string{"Retry-After": "1"}),
		reply(textReply("done")),
	)
	m, err := New(context.Background(), Config{APIKey: testKey, BaseURL: f.srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := m.Next(context.Background(), testState()); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el < time.Second || el > 5*time.Second {
		t.Errorf("took %v, want about 1s", el)
	}
}

// TestRateLimitRetryInfo: Gemini's own hint (google.rpc.RetryInfo in the
// error details) is honoured when there is no Retry-After header.
func TestRateLimitRetryInfo(t *testing.T) {
	f := newFake(t,
		apiError(429, "RESOURCE_EXHAUSTED", "quota", nil,
			map[string]any{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []any{}},
			map[string]any{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "3s"}),
		reply(textReply("done")),
	)
	m, waits := newModel(t, f, nil)
	if _, err := m.Next(context.Background(), testState()); err != nil {
		t.Fatal(err)
	}
	if len(*waits) != 1 || (*waits)[0] < 3*time.Second || (*waits)[0] > 3300*time.Millisecond {
		t.Errorf("waits %v, want one of 3s..3.3s", *waits)
	}
}

// TestRetryTransient: 503s and dropped connections are retried with backoff
// and the request succeeds.
func TestRetryTransient(t *testing.T) {
	tests := []struct {
		name  string
		first handler
	}{
		{"503", apiError(503, "UNAVAILABLE", "The model is overloaded. Please try again later.", nil)},
		{"500 plain text", func(_ *testing.T, w http.ResponseWriter, _ *http.Request, _ captured) {
			http.Error(w, "upstream connect error", http.StatusInternalServerError)
		}},
		{"hang up before answering", hangUp()},
		{"hang up mid-body", cutBody(callReply("qa_fetch", map[string]any{"url": "u"}, "", nil))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, tt.first, reply(callReply("qa_report", map[string]any{"severity": "low", "summary": "s"}, "", nil)))
			m, waits := newModel(t, f, nil)
			step, err := m.Next(context.Background(), testState())
			if err != nil {
				t.Fatal(err)
			}
			if step.Call == nil || step.Call.Tool != "qa_report" {
				t.Fatalf("step %+v", step)
			}
			if len(*waits) != 1 || (*waits)[0] < initialBackoff/2 || (*waits)[0] > initialBackoff {
				t.Errorf("waits %v, want one jittered first backoff", *waits)
			}
			reqs := f.requests()
			if len(reqs) != 2 || string(reqs[0].Raw) != string(reqs[1].Raw) {
				t.Errorf("%d requests; the retry must resend the same body", len(reqs))
			}
		})
	}
}

// TestRetriesRunOut: the backoff grows, is capped, and gives up after
// MaxRetries with the last status.
func TestRetriesRunOut(t *testing.T) {
	h := apiError(503, "UNAVAILABLE", "overloaded", nil)
	f := newFake(t, h, h, h, h, h, h)
	m, waits := newModel(t, f, func(c *Config) { c.MaxRetries = 5 })
	m.backoff = 10 * time.Second
	_, err := m.Next(context.Background(), testState())
	var se *StatusError
	if !errors.As(err, &se) || se.Code != 503 || se.Status != "UNAVAILABLE" || errors.Is(err, fleet.ErrMalformed) {
		t.Fatalf("err %v", err)
	}
	if !strings.Contains(err.Error(), "giving up after 6 attempts") || !strings.Contains(err.Error(), "503 UNAVAILABLE: overloaded") {
		t.Errorf("err %q", err)
	}
	if len(f.requests()) != 6 || len(*waits) != 5 {
		t.Fatalf("%d requests, waits %v", len(f.requests()), *waits)
	}
	// 10s, 20s, 30s (capped), 30s, 30s, each jittered down to at most half.
	for i, max := range []time.Duration{10 * time.Second, 20 * time.Second, maxBackoff, maxBackoff, maxBackoff} {
		if w := (*waits)[i]; w < max/2 || w > max {
			t.Errorf("wait %d = %v, want %v..%v", i, w, max/2, max)
		}
	}
}

// TestNotRetried: other 4xx end at once, naming status and message, never
// the key.
func TestNotRetried(t *testing.T) {
	tests := []struct {
		code   int
		status string
	}{{400, "INVALID_ARGUMENT"}, {401, "UNAUTHENTICATED"}, {403, "PERMISSION_DENIED"}, {404, "NOT_FOUND"}}
	for _, tt := range tests {
		t.Run(tt.status, func(t *testing.T) {
			// The message echoes the key, as a careless proxy might.
			f := newFake(t, apiError(tt.code, tt.status, "API key not valid: "+testKey+". Please pass a valid API key.", nil))
			m, waits := newModel(t, f, nil)
			_, err := m.Next(context.Background(), testState())
			if err == nil {
				t.Fatal("no error")
			}
			if strings.Contains(err.Error(), testKey) || strings.Contains(err.Error(), "AIzaSyTEST") {
				t.Errorf("the error leaks the API key: %v", err)
			}
			var se *StatusError
			if !errors.As(err, &se) || se.Code != tt.code || se.Status != tt.status || strings.Contains(se.Message, testKey) {
				t.Errorf("err %#v", err)
			}
			if !strings.Contains(err.Error(), tt.status) || !strings.Contains(err.Error(), "API key not valid: [REDACTED]") {
				t.Errorf("err %q does not name status and message", err)
			}
			if errors.Is(err, fleet.ErrMalformed) {
				t.Error("an API error is not malformed output")
			}
			if len(f.requests()) != 1 || len(*waits) != 0 {
				t.Errorf("retried: %d requests, waits %v", len(f.requests()), *waits)
			}
		})
	}
}

// TestRetryLogsNoKey: retry log lines never carry the key.
func TestRetryLogsNoKey(t *testing.T) {
	f := newFake(t, apiError(503, "UNAVAILABLE", "backend for "+testKey+" down", nil), reply(textReply("done")))
	var buf strings.Builder
	m, _ := newModel(t, f, func(c *Config) { c.Logger = slogTo(&buf) })
	if _, err := m.Next(context.Background(), testState()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "retrying") || strings.Contains(buf.String(), testKey) {
		t.Errorf("log:\n%s", buf.String())
	}
}

// TestHintTooLong: a server asking for a longer wait than the adapter
// allows ends the retries instead of retrying early.
func TestHintTooLong(t *testing.T) {
	f := newFake(t, apiError(429, "RESOURCE_EXHAUSTED", "quota", map[string]string{"Retry-After": "3600"}))
	m, waits := newModel(t, f, nil)
	_, err := m.Next(context.Background(), testState())
	if err == nil || !strings.Contains(err.Error(), "the server asked to wait 1h0m0s") || len(*waits) != 0 {
		t.Fatalf("err %v, waits %v", err, *waits)
	}
}

// TestCancelWhileWaiting: cancelling ctx ends a retry wait at once.
func TestCancelWhileWaiting(t *testing.T) {
	f := newFake(t, apiError(503, "UNAVAILABLE", "overloaded", map[string]string{"Retry-After": "60"}))
	m, err := New(context.Background(), Config{APIKey: testKey, BaseURL: f.srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = m.Next(ctx, testState())
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v", err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("took %v", el)
	}
}

func slogTo(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func TestNewNeedsKey(t *testing.T) {
	if _, err := New(context.Background(), Config{}); err == nil || !strings.Contains(err.Error(), "no API key") {
		t.Fatalf("err %v", err)
	}
	m, err := New(context.Background(), Config{APIKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	if m.Name() != DefaultModel || m.maxRetries != DefaultMaxRetries {
		t.Errorf("defaults: model %q, retries %d", m.Name(), m.maxRetries)
	}
	m, err = New(context.Background(), Config{APIKey: testKey, MaxRetries: -1})
	if err != nil || m.maxRetries != 0 {
		t.Errorf("MaxRetries -1: %v, %d", err, m.maxRetries)
	}
}

func TestPackID(t *testing.T) {
	for _, tt := range []struct {
		id  string
		sig []byte
	}{{"", nil}, {"call-1", nil}, {"", []byte{0, 1, 2, 255}}, {"call~ts:x", []byte("sig")}} {
		packed := packID(tt.id, tt.sig)
		id, sig := unpackID(packed)
		if id != tt.id || string(sig) != string(tt.sig) {
			t.Errorf("packID(%q, %q) = %q, unpacks to %q, %q", tt.id, tt.sig, packed, id, sig)
		}
	}
	if id, sig := unpackID("abc~ts:!!!"); id != "abc~ts:!!!" || sig != nil {
		t.Errorf("a bad signature suffix is not a signature: %q %q", id, sig)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 22, 4, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Duration{
		"":                              0,
		"1":                             time.Second,
		" 2 ":                           2 * time.Second,
		"0.5":                           500 * time.Millisecond,
		"-3":                            0,
		"soon":                          0,
		"Sun, 22 Nov 2026 04:00:07 GMT": 7 * time.Second,
		"Sun, 22 Nov 2026 03:59:00 GMT": 0,
	} {
		if got := parseRetryAfter(in, now); got != want {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", in, got, want)
		}
	}
}

// TestNoRetries: MaxRetries < 0 turns retrying off.
func TestNoRetries(t *testing.T) {
	f := newFake(t, apiError(503, "UNAVAILABLE", "overloaded", nil))
	m, waits := newModel(t, f, func(c *Config) { c.MaxRetries = -1 })
	_, err := m.Next(context.Background(), testState())
	if err == nil || !strings.Contains(err.Error(), "giving up after 1 attempt: gemini api: 503 UNAVAILABLE: overloaded") || len(*waits) != 0 {
		t.Fatalf("err %v, waits %v", err, *waits)
	}
}
