package openai_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// The fake speaks the chat completions wire protocol as OpenAI documents it
// (and Ollama, vLLM and llama.cpp copy it); TestFixturesDecodeWithSDK checks
// its answers against the SDK's own response types and OpenAI's reference
// example.

// wireCompletion is a chat completion as it travels on the wire; nullable
// fields are pointers so they marshal as null like the real servers send.
type wireCompletion struct {
	ID                string       `json:"id"`
	Object            string       `json:"object"`
	Created           int64        `json:"created"`
	Model             string       `json:"model"`
	Choices           []wireChoice `json:"choices"`
	Usage             *wireUsage   `json:"usage,omitempty"`
	SystemFingerprint string       `json:"system_fingerprint,omitempty"`
}

type wireChoice struct {
	Index        int         `json:"index"`
	Message      wireMessage `json:"message"`
	Logprobs     *struct{}   `json:"logprobs"`
	FinishReason string      `json:"finish_reason"`
}

type wireMessage struct {
	Role      string         `json:"role"`
	Content   *string        `json:"content"`
	Refusal   *string        `json:"refusal"`
	ToolCalls []wireToolCall `json:"tool_calls,omitempty"`
}

type wireToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function wireFunction `json:"function"`
}

type wireFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type wireUsage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
}

var stdUsage = &wireUsage{PromptTokens: 120, CompletionTokens: 30, TotalTokens: 150}

func completion(finish string, msg wireMessage) wireCompletion {
	msg.Role = "assistant"
	return wireCompletion{
		ID: "chatcmpl-fake", Object: "chat.completion", Created: 1767225600, Model: "fake-model",
		Choices:           []wireChoice{{Index: 0, Message: msg, FinishReason: finish}},
		Usage:             stdUsage,
		SystemFingerprint: "fp_fake",
	}
}

// toolCalls is an answer calling tools, as "id name args" triples.
func toolCalls(calls ...[3]string) wireCompletion {
	var tcs []wireToolCall
	for _, c := range calls {
		tcs = append(tcs, wireToolCall{ID: c[0], Type: "function", Function: wireFunction{Name: c[1], Arguments: c[2]}})
	}
	return completion("tool_calls", wireMessage{ToolCalls: tcs})
}

func toolCall(id, name, args string) wireCompletion { return toolCalls([3]string{id, name, args}) }

func text(s string) wireCompletion { return completion("stop", wireMessage{Content: &s}) }

func refusal(s string) wireCompletion { return completion("stop", wireMessage{Refusal: &s}) }

// request is one request the fake received.
type request struct {
	Path   string
	Header http.Header
	Raw    []byte
	Body   map[string]any
	At     time.Time
}

// messages returns the request's messages.
func (r request) messages() []map[string]any {
	var out []map[string]any
	for _, m := range r.Body["messages"].([]any) {
		out = append(out, m.(map[string]any))
	}
	return out
}

// responder answers one request; it may check it with t.
type responder func(t testing.TB, w http.ResponseWriter, r *http.Request, req request)

type fake struct {
	t     testing.TB
	srv   *httptest.Server
	mu    sync.Mutex
	queue []responder
	reqs  []request
}

// newFake starts a server that answers the n-th request with the n-th responder.
func newFake(t testing.TB, rs ...responder) *fake {
	t.Helper()
	f := &fake{t: t, queue: rs}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fake) URL() string { return f.srv.URL + "/v1" }

func (f *fake) serve(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		f.t.Errorf("fake: read request: %v", err)
		return
	}
	req := request{Path: r.URL.Path, Header: r.Header.Clone(), Raw: raw, At: time.Now()}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		f.t.Errorf("fake: %s %s, want POST /v1/chat/completions", r.Method, r.URL.Path)
	}
	if err := json.Unmarshal(raw, &req.Body); err != nil {
		f.t.Errorf("fake: request body is not JSON: %v: %s", err, raw)
	}
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	var next responder
	if len(f.queue) > 0 {
		next, f.queue = f.queue[0], f.queue[1:]
	}
	n := len(f.reqs)
	f.mu.Unlock()
	if next == nil {
		f.t.Errorf("fake: unexpected request %d: %s", n, raw)
		w.Header().Set("x-should-retry", "false")
		http.Error(w, `{"error":{"message":"unexpected request","type":"fake"}}`, http.StatusTeapot)
		return
	}
	next(f.t, w, r, req)
}

// requests returns what the fake received so far.
func (f *fake) requests() []request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]request(nil), f.reqs...)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// answer replies 200 with c.
func answer(c wireCompletion) responder {
	return func(_ testing.TB, w http.ResponseWriter, _ *http.Request, _ request) { writeJSON(w, http.StatusOK, c) }
}

// check runs fn on the request, then answers with c.
func check(fn func(t testing.TB, req request), c wireCompletion) responder {
	return func(t testing.TB, w http.ResponseWriter, r *http.Request, req request) {
		fn(t, req)
		writeJSON(w, http.StatusOK, c)
	}
}

// status replies with an error status, headers and a raw body.
func status(code int, headers map[string]string, body string) responder {
	return func(_ testing.TB, w http.ResponseWriter, _ *http.Request, _ request) {
		for k, v := range headers {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = io.WriteString(w, body)
	}
}

// openAIError is OpenAI's error body.
func openAIError(msg, typ, code string) string {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": code}})
	return string(b)
}

// hangUp drops the connection without answering.
func hangUp() responder {
	return func(t testing.TB, w http.ResponseWriter, _ *http.Request, _ request) {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("fake: hijack: %v", err)
			return
		}
		_ = conn.Close()
	}
}

// cutOff sends the status line, headers and half of c's body, then drops
// the connection.
func cutOff(c wireCompletion) responder {
	return func(t testing.TB, w http.ResponseWriter, _ *http.Request, _ request) {
		body, _ := json.Marshal(c)
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("fake: hijack: %v", err)
			return
		}
		fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", len(body))
		_, _ = buf.Write(body[:len(body)/2])
		_ = buf.Flush()
		_ = conn.Close()
	}
}

// block waits until the client goes away.
func block() responder {
	return func(_ testing.TB, _ http.ResponseWriter, r *http.Request, _ request) { <-r.Context().Done() }
}
