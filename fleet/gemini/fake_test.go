package gemini

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/genai"
)

// testKey is long enough to be scrubbed and distinctive enough to grep for.
const testKey = "AIzaSyTEST-key-that-must-never-leak-0123456789"

// captured is one request as the SDK sent it.
type captured struct {
	Method string
	Path   string
	Header http.Header
	Raw    []byte
	Body   map[string]any
}

// handler answers one request of the script.
type handler func(t *testing.T, w http.ResponseWriter, r *http.Request, req captured)

// fakeGemini is an httptest server speaking the Gemini API's generateContent
// wire protocol: it checks path and key like the real service, records every
// request body, and answers from a script, one handler per request.
type fakeGemini struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	script []handler
	reqs   []captured
}

func newFake(t *testing.T, script ...handler) *fakeGemini {
	t.Helper()
	f := &fakeGemini{t: t, script: script}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeGemini) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	req := captured{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Raw: raw}
	if err := json.Unmarshal(raw, &req.Body); err != nil {
		f.t.Errorf("request body is not JSON: %v: %s", err, raw)
	}
	f.mu.Lock()
	n := len(f.reqs)
	f.reqs = append(f.reqs, req)
	f.mu.Unlock()

	if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, "/v1beta/models/") || !strings.HasSuffix(r.URL.Path, ":generateContent") {
		f.t.Errorf("request %d: unexpected %s %s", n, r.Method, r.URL.Path)
		writeAPIError(w, 404, "NOT_FOUND", "no such method", nil)
		return
	}
	if got := r.Header.Get("X-Goog-Api-Key"); got != testKey {
		f.t.Errorf("request %d: X-Goog-Api-Key %q", n, got)
	}
	if n >= len(f.script) {
		f.t.Errorf("request %d: the script has only %d answers", n, len(f.script))
		writeAPIError(w, 500, "INTERNAL", "script exhausted", nil)
		return
	}
	f.script[n](f.t, w, r, req)
}

func (f *fakeGemini) requests() []captured {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]captured(nil), f.reqs...)
}

// newModel returns a Model talking to f whose retry waits are recorded
// instead of slept.
func newModel(t *testing.T, f *fakeGemini, mut func(*Config)) (*Model, *[]time.Duration) {
	t.Helper()
	cfg := Config{APIKey: testKey, BaseURL: f.srv.URL}
	if mut != nil {
		mut(&cfg)
	}
	m, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	waits := new([]time.Duration)
	m.sleep = func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		*waits = append(*waits, d)
		mu.Unlock()
		return ctx.Err()
	}
	return m, waits
}

// writeJSON answers 200 with resp, built from the SDK's own response type.
// The zero createTime the Go type always marshals is dropped: the Gemini API
// does not send it.
func writeJSON(w http.ResponseWriter, resp *genai.GenerateContentResponse) {
	b, err := json.Marshal(resp)
	if err != nil {
		panic(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		panic(err)
	}
	if ct, _ := m["createTime"].(string); strings.HasPrefix(ct, "0001-01-01") {
		delete(m, "createTime")
	}
	b, _ = json.Marshal(m)
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.Write(b)
}

// writeAPIError answers like Google APIs do: {"error": {code, message, status, details}}.
func writeAPIError(w http.ResponseWriter, code int, status, msg string, header map[string]string, details ...map[string]any) {
	for k, v := range header {
		w.Header().Set(k, v)
	}
	b, _ := json.Marshal(map[string]any{"error": genai.APIError{Code: code, Status: status, Message: msg, Details: details}})
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(code)
	w.Write(b)
}

func reply(resp *genai.GenerateContentResponse) handler {
	return func(_ *testing.T, w http.ResponseWriter, _ *http.Request, _ captured) { writeJSON(w, resp) }
}

// check runs assertions on the request, then answers with h.
func check(fn func(t *testing.T, req captured), h handler) handler {
	return func(t *testing.T, w http.ResponseWriter, r *http.Request, req captured) {
		fn(t, req)
		h(t, w, r, req)
	}
}

func apiError(code int, status, msg string, header map[string]string, details ...map[string]any) handler {
	return func(_ *testing.T, w http.ResponseWriter, _ *http.Request, _ captured) {
		writeAPIError(w, code, status, msg, header, details...)
	}
}

// hangUp closes the connection without answering.
func hangUp() handler {
	return func(t *testing.T, w http.ResponseWriter, _ *http.Request, _ captured) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		conn.Close()
	}
}

// cutBody sends the status line, headers and half of a valid body, then
// closes the connection.
func cutBody(resp *genai.GenerateContentResponse) handler {
	return func(t *testing.T, w http.ResponseWriter, _ *http.Request, _ captured) {
		b, _ := json.Marshal(resp)
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		defer conn.Close()
		writeRaw(buf, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "+strconv.Itoa(len(b))+"\r\n\r\n"+string(b[:len(b)/2]))
	}
}

func writeRaw(buf *bufio.ReadWriter, s string) {
	buf.WriteString(s)
	buf.Flush()
}

func usageMeta(in, out, thoughts int32) *genai.GenerateContentResponseUsageMetadata {
	return &genai.GenerateContentResponseUsageMetadata{
		PromptTokenCount: in, CandidatesTokenCount: out, ThoughtsTokenCount: thoughts,
		TotalTokenCount: in + out + thoughts,
	}
}

// callReply is a response whose candidate calls name with args.
func callReply(name string, args map[string]any, id string, sig []byte) *genai.GenerateContentResponse {
	return &genai.GenerateContentResponse{
		Candidates: []*genai.Candidate{{
			Content:      &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{FunctionCall: &genai.FunctionCall{ID: id, Name: name, Args: args}, ThoughtSignature: sig}}},
			FinishReason: genai.FinishReasonStop,
		}},
		UsageMetadata: usageMeta(120, 15, 30),
		ModelVersion:  DefaultModel,
		ResponseID:    "resp-call",
	}
}

// textReply is a response whose candidate says text.
func textReply(text string) *genai.GenerateContentResponse {
	return &genai.GenerateContentResponse{
		Candidates: []*genai.Candidate{{
			Content:      &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{Text: text}}},
			FinishReason: genai.FinishReasonStop,
		}},
		UsageMetadata: usageMeta(200, 40, 0),
		ModelVersion:  DefaultModel,
		ResponseID:    "resp-text",
	}
}

// path walks decoded JSON: string keys index objects, ints index arrays.
func path(t *testing.T, v any, keys ...any) any {
	t.Helper()
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("at %q: not an object: %v", k, v)
			}
			v = m[k]
		case int:
			a, ok := v.([]any)
			if !ok || k >= len(a) {
				t.Fatalf("at [%d]: not an array that long: %v", k, v)
			}
			v = a[k]
		}
	}
	return v
}

// decode turns a JSON literal into the generic shape captured bodies have.
func decode(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("bad expected JSON: %v\n%s", err, s)
	}
	return v
}
