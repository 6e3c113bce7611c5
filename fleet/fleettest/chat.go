package fleettest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// ChatServer is a fake OpenAI-compatible chat completions server (POST
// /v1/chat/completions) speaking the wire format OpenAI documents (and
// Ollama, vLLM and llama.cpp copy): point fleet/openai at URL(). Each
// request is answered by Answer, which sees the decoded request; what it
// returns becomes one assistant message: a tool call when Tool is set, else
// text. Requests are kept for inspection.
type ChatServer struct {
	srv *httptest.Server
	// Answer scripts the replies; the n-th request (from 0) and its body.
	Answer func(n int, req ChatRequest) ChatReply

	mu   sync.Mutex
	reqs []ChatRequest
}

// ChatRequest is one request the fake received, decoded.
type ChatRequest struct {
	Model    string           `json:"model"`
	Messages []map[string]any `json:"messages"`
	Tools    []map[string]any `json:"tools"`
	Raw      []byte           `json:"-"`
}

// Text returns every message's text content joined, for assertions.
func (r ChatRequest) Text() string {
	var b strings.Builder
	for _, m := range r.Messages {
		if s, ok := m["content"].(string); ok {
			b.WriteString(s)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// ToolNames lists the functions the request declares.
func (r ChatRequest) ToolNames() []string {
	var out []string
	for _, t := range r.Tools {
		if fn, ok := t["function"].(map[string]any); ok {
			if n, ok := fn["name"].(string); ok {
				out = append(out, n)
			}
		}
	}
	return out
}

// ChatReply is one scripted answer: a call of Tool with Args (a JSON
// object), or Text when Tool is empty. Status, when set, answers with that
// HTTP status and an OpenAI error body instead.
type ChatReply struct {
	Tool   string
	Args   any
	Text   string
	Status int
	// TokensIn and TokensOut are reported as usage (default 120 and 30).
	TokensIn, TokensOut int64
}

// NewChatServer starts a fake answered by answer and closed with the test.
func NewChatServer(tb testing.TB, answer func(n int, req ChatRequest) ChatReply) *ChatServer {
	tb.Helper()
	s := &ChatServer{Answer: answer}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	tb.Cleanup(s.srv.Close)
	return s
}

// URL is the base URL to configure: <server>/v1.
func (s *ChatServer) URL() string { return s.srv.URL + "/v1" }

// Requests returns the requests received so far.
func (s *ChatServer) Requests() []ChatRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ChatRequest(nil), s.reqs...)
}

func (s *ChatServer) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		writeChatError(w, http.StatusNotFound, "unknown path "+r.URL.Path)
		return
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	var req ChatRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		writeChatError(w, http.StatusBadRequest, "request is not JSON: "+err.Error())
		return
	}
	req.Raw = raw
	s.mu.Lock()
	n := len(s.reqs)
	s.reqs = append(s.reqs, req)
	s.mu.Unlock()
	rep := s.Answer(n, req)
	if rep.Status != 0 {
		w.Header().Set("x-should-retry", "false")
		writeChatError(w, rep.Status, "scripted error")
		return
	}
	in, out := rep.TokensIn, rep.TokensOut
	if in == 0 && out == 0 {
		in, out = 120, 30
	}
	msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil}
	finish := "stop"
	if rep.Tool != "" {
		args, err := json.Marshal(rep.Args)
		if err != nil {
			panic(fmt.Sprintf("fleettest.ChatServer: args: %v", err))
		}
		msg["tool_calls"] = []map[string]any{{
			"id": fmt.Sprintf("call_%d", n), "type": "function",
			"function": map[string]any{"name": rep.Tool, "arguments": string(args)},
		}}
		finish = "tool_calls"
	} else {
		msg["content"] = rep.Text
	}
	body := map[string]any{
		"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion", "created": 1767225600, "model": req.Model,
		"choices": []map[string]any{{"index": 0, "message": msg, "logprobs": nil, "finish_reason": finish}},
		"usage":   map[string]any{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out},
	}
	b, _ := json.Marshal(body)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

func writeChatError(w http.ResponseWriter, status int, msg string) {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": "fake", "param": nil, "code": nil}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
