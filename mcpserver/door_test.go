package mcpserver_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/qafleet/fleetd/fleet/fleettest"
	"github.com/qafleet/fleetd/mcpserver"
)

// logSink keeps a server's log lines for tests that count them.
type logSink struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logSink) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logSink) count(sub string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.buf.String(), sub)
}

func withLog(l *logSink) rigOption {
	return func(_ *rig, c *mcpserver.Config) { c.Logger = slog.New(slog.NewTextHandler(l, nil)) }
}

// fakeClock is the door's clock, moved by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// post sends one raw MCP POST and returns the status, the response's
// headers and body (up to 64 KiB: an SSE answer is read until its first
// event).
func post(t *testing.T, url, body string, header map[string]string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	defer resp.Body.Close()
	// The body is read to its end: a streamed answer ends when the server's
	// handler returns, so once post returns, the door is done with the
	// request (a slot it held for a request that opened no session is free
	// again). Stopping at the answer's line left the handler running, and
	// the next request could find its slot still taken.
	all, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	b := all
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		for line := range strings.Lines(string(all)) {
			if strings.HasPrefix(line, "data:") {
				b = []byte(line)
				break
			}
		}
	}
	return resp.StatusCode, resp.Header, string(b)
}

// rawSession opens a session with a raw initialize and returns its id.
func rawSession(t *testing.T, url string, header map[string]string) string {
	t.Helper()
	code, h, body := post(t, url, initBody, header)
	if code != http.StatusOK || h.Get("Mcp-Session-Id") == "" {
		t.Fatalf("initialize: %d %q", code, body)
	}
	id := h.Get("Mcp-Session-Id")
	hdr := map[string]string{"Mcp-Session-Id": id, "Mcp-Protocol-Version": "2025-06-18"}
	for k, v := range header {
		hdr[k] = v
	}
	if code, _, body := post(t, url, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, hdr); code != http.StatusAccepted {
		t.Fatalf("initialized: %d %q", code, body)
	}
	return id
}

// TestDoorTokenGuessing: a client guessing the bearer token at full speed
// gets 5 guesses looked at and the rest refused with 429 before its token is
// read (the right one too), logged once per lockout, not per request; when
// its tries come back it gets in with the right token.
func TestDoorTokenGuessing(t *testing.T) {
	var log logSink
	r := newRig(t, withLog(&log))
	clock := &fakeClock{t: time.Unix(1e9, 0)}
	var checked atomic.Int32
	ts := httptest.NewServer(r.srv.Handler(mcpserver.HTTPOptions{
		Token: func(tok string) bool { checked.Add(1); return tok == "sesame" },
		Rate:  1e6, Burst: 1e6, Now: clock.now,
	}))
	defer ts.Close()
	codes := map[int]int{}
	start := time.Now()
	for i := range 1000 {
		code, h, _ := post(t, ts.URL, initBody, map[string]string{"Authorization": fmt.Sprintf("Bearer guess%04d", i)})
		codes[code]++
		if code == http.StatusTooManyRequests && h.Get("Retry-After") == "" {
			t.Fatal("a 429 without Retry-After")
		}
	}
	t.Logf("1,000 guesses in %s: %v", time.Since(start).Round(time.Millisecond), codes)
	if codes[http.StatusUnauthorized] != 5 || codes[http.StatusTooManyRequests] != 995 || checked.Load() != 5 {
		t.Errorf("statuses %v, %d tokens looked at; want 5 × 401 and 995 × 429, 5 looked at", codes, checked.Load())
	}
	if code, _, _ := post(t, ts.URL, initBody, map[string]string{"Authorization": "Bearer sesame"}); code != http.StatusTooManyRequests {
		t.Errorf("the right token during a lockout: %d, want 429 (the limit must tell nothing)", code)
	}
	if n := log.count("over its limit"); n != 1 {
		t.Errorf("the lockout logged %d times, want once", n)
	}
	if n := log.count("wrong bearer token"); n != 5 {
		t.Errorf("%d wrong tokens logged, want 5", n)
	}
	clock.add(10 * time.Second)
	if code, _, body := post(t, ts.URL, initBody, map[string]string{"Authorization": "Bearer sesame"}); code != http.StatusOK {
		t.Errorf("the right token after 10 s: %d %q", code, body)
	}
	if n := log.count("refused_while_limited=996"); n != 1 {
		t.Errorf("the lockout's end does not say 996 were refused:\n%s", log.buf.String())
	}
	if code, _, _ := post(t, ts.URL, initBody, nil); code != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", code)
	}
}

// TestDoorRateLimit: a client flooding requests gets its burst, then 429
// with Retry-After; another address is not affected; tokens come back at
// the rate.
func TestDoorRateLimit(t *testing.T) {
	var log logSink
	r := newRig(t, withLog(&log))
	clock := &fakeClock{t: time.Unix(1e9, 0)}
	ts := httptest.NewServer(r.srv.Handler(mcpserver.HTTPOptions{Rate: 5, Burst: 10, Now: clock.now}))
	defer ts.Close()
	codes := map[int]int{}
	for range 500 {
		code, _, _ := post(t, ts.URL, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, nil)
		codes[code]++
	}
	if codes[http.StatusTooManyRequests] != 490 {
		t.Errorf("500 requests at once: %v, want 10 served and 490 × 429", codes)
	}
	if n := log.count("over its limit"); n != 1 {
		t.Errorf("the flood logged %d times, want once", n)
	}
	clock.add(time.Second) // 5 tokens back
	served := 0
	for range 10 {
		if code, _, _ := post(t, ts.URL, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, nil); code != http.StatusTooManyRequests {
			served++
		}
	}
	if served != 5 {
		t.Errorf("%d served a second later, want 5 (the rate)", served)
	}
	// Another address has its own bucket (a request from ::1 when the host
	// has it; skip that half otherwise).
	ln, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Logf("no ::1 here (%v): the per-address half is not checked", err)
		return
	}
	other := httptest.NewUnstartedServer(r.srv.Handler(mcpserver.HTTPOptions{Rate: 5, Burst: 10, Now: clock.now}))
	other.Listener.Close()
	other.Listener = ln
	other.Start()
	defer other.Close()
	flood := httptest.NewServer(other.Config.Handler)
	defer flood.Close()
	for range 20 {
		post(t, flood.URL, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, nil) // 127.0.0.1 spends its burst
	}
	if code, _, body := post(t, other.URL, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, nil); code == http.StatusTooManyRequests {
		t.Errorf("::1 refused after 127.0.0.1 flooded the same handler: %q", body)
	}
}

// TestDoorSessionCap: sessions past MaxSessions get 503 with Retry-After,
// not a crash and not an unbounded map; a closed session frees its slot;
// requests that open no session (a ping without a session) hold none.
func TestDoorSessionCap(t *testing.T) {
	r := newRig(t)
	// No rate limit here: the wait below polls with whole handshakes.
	ts := httptest.NewServer(r.srv.Handler(mcpserver.HTTPOptions{MaxSessions: 3, Rate: 1e6, Burst: 1e6}))
	defer func() { ts.CloseClientConnections(); ts.Close() }()
	for range 20 {
		post(t, ts.URL, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, nil)
	}
	var open []*mcp.ClientSession
	for i := range 3 {
		open = append(open, r.connectHTTP(ts.URL, fmt.Sprintf("s%d", i)))
	}
	code, h, body := post(t, ts.URL, initBody, nil)
	if code != http.StatusServiceUnavailable || h.Get("Retry-After") == "" || !strings.Contains(body, "3 MCP sessions are open") {
		t.Errorf("a fourth session: %d %q (Retry-After %q)", code, body, h.Get("Retry-After"))
	}
	if _, err := mcp.NewClient(&mcp.Implementation{Name: "fourth", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: ts.URL, MaxRetries: -1}, nil); err == nil {
		t.Error("the SDK client opened a fourth session")
	}
	// The sessions open still work.
	if obj, isErr := call(t, open[0], "qa_read", map[string]any{}); isErr {
		t.Errorf("an open session's call: %v", obj)
	}
	open[0].Close()
	r.waitRun()
	var fourth *mcp.ClientSession
	fleettest.WaitFor(t, 10*time.Second, "a slot freed by the closed session", func() bool {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "fourth", Version: "1"}, nil).Connect(context.Background(),
			&mcp.StreamableClientTransport{Endpoint: ts.URL, MaxRetries: -1}, nil)
		fourth = cs
		return err == nil
	})
	fourth.Close()
	for _, cs := range open[1:] {
		cs.Close()
	}
}

// TestDoorHostileBodies: huge bodies (declared or chunked), malformed
// JSON-RPC and hostile tool arguments get a refusal (413, 400, a JSON-RPC
// error or an isError result), and the server keeps serving the session.
func TestDoorHostileBodies(t *testing.T) {
	r := newRig(t)
	ts := httptest.NewServer(r.srv.Handler(mcpserver.HTTPOptions{MaxBodyBytes: 64 << 10}))
	defer func() { ts.CloseClientConnections(); ts.Close() }()
	id := rawSession(t, ts.URL, nil)
	sess := map[string]string{"Mcp-Session-Id": id, "Mcp-Protocol-Version": "2025-06-18"}
	callBody := func(args string) string {
		return `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"qa_typed","arguments":` + args + `}}`
	}

	t.Run("declared huge body", func(t *testing.T) {
		code, _, body := post(t, ts.URL, callBody(`{"url":"`+strings.Repeat("u", 100<<10)+`"}`), sess)
		if code != http.StatusRequestEntityTooLarge {
			t.Errorf("a 100 KiB call: %d %q, want 413", code, body)
		}
	})
	t.Run("chunked huge body", func(t *testing.T) {
		u := strings.TrimPrefix(ts.URL, "http://")
		c, err := net.Dial("tcp", u)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Session-Id: %s\r\nMcp-Protocol-Version: 2025-06-18\r\nTransfer-Encoding: chunked\r\n\r\n", u, id)
		go func() {
			for range 256 {
				if _, err := fmt.Fprintf(c, "400\r\n%s\r\n", strings.Repeat("c", 1024)); err != nil {
					return
				}
			}
			fmt.Fprintf(c, "0\r\n\r\n")
		}()
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("a chunked 256 KiB body: %d, want 413", resp.StatusCode)
		}
	})
	for _, tc := range []struct{ name, body, want string }{
		{"not JSON", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{`, "malformed"},
		{"not JSON-RPC", `[1,2,3]`, ""},
		{"binary", "\x00\xff\xfe{}", ""},
		{"deep nesting", strings.Repeat("[", 20000) + strings.Repeat("]", 20000), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, body := post(t, ts.URL, tc.body, sess)
			if code != http.StatusBadRequest || !strings.Contains(body, tc.want) {
				t.Errorf("%d %q, want 400", code, body)
			}
		})
	}
	// Hostile arguments reach the tool's validation and come back as
	// errors the agent reads; nothing ran with them.
	for _, tc := range []struct {
		name, args string
		refused    bool
	}{
		{"wrong type", `{"url":42}`, true},
		{"array", `[1,2]`, true},
		{"string", `"qa-r-other-1"`, true},
		{"unknown field", `{"url":"x","sponsor_key":"0xabc"}`, true},
		// A string the tool takes as it is (the real tools validate their
		// own fields): the answer must still be well-formed JSON.
		{"invalid utf-8", "{\"url\":\"\xff\xfe\"}", false},
		{"null bytes", `{"url":"a\u0000b"}`, false},
	} {
		t.Run("arguments "+tc.name, func(t *testing.T) {
			code, _, body := post(t, ts.URL, callBody(tc.args), sess)
			if code >= 500 {
				t.Fatalf("%d %q", code, body)
			}
			refused := code != http.StatusOK || strings.Contains(body, `"isError":true`) || strings.Contains(body, `"error":{`)
			if refused != tc.refused {
				t.Errorf("%s: %d %q, refused %v, want %v", tc.args, code, body, refused, tc.refused)
			}
			if code == http.StatusOK && !json.Valid([]byte(strings.TrimPrefix(strings.TrimSpace(body), "data: "))) {
				t.Errorf("%s: the answer is not JSON: %q", tc.args, body)
			}
		})
	}
	// The session still works after all that.
	code, _, body := post(t, ts.URL, callBody(`{"url":"http://ok"}`), sess)
	var ev struct {
		Result struct {
			IsError           bool           `json:"isError"`
			StructuredContent map[string]any `json:"structuredContent"`
		} `json:"result"`
	}
	if code != http.StatusOK || json.Unmarshal([]byte(strings.TrimPrefix(strings.TrimSpace(body), "data: ")), &ev) != nil || ev.Result.IsError || ev.Result.StructuredContent["url"] != "http://ok" {
		t.Errorf("a good call after the hostile ones: %d %q", code, body)
	}
}

// TestHTTPServerLimits: the server HTTPServer builds cuts a client that
// trickles its headers (slowloris) at the header timeout and one that
// trickles its body at the read timeout, refuses 64 KiB of headers with
// 431, and keeps answering beside a hundred half-open requests.
func TestHTTPServerLimits(t *testing.T) {
	r := newRig(t)
	hs := mcpserver.HTTPServer(r.srv.Handler(mcpserver.HTTPOptions{}), slog.New(slog.DiscardHandler))
	if hs.ReadHeaderTimeout != 5*time.Second || hs.ReadTimeout != 30*time.Second || hs.MaxHeaderBytes != 64<<10 || hs.IdleTimeout != 2*time.Minute || hs.WriteTimeout != 0 {
		t.Errorf("limits %v %v %d %v %v", hs.ReadHeaderTimeout, hs.ReadTimeout, hs.MaxHeaderBytes, hs.IdleTimeout, hs.WriteTimeout)
	}
	hs.ReadTimeout = time.Second // the trickled body below, in a second instead of 30
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	addr := ln.Addr().String()

	closedAfter := func(t *testing.T, head, trickle string) time.Duration {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		start := time.Now()
		c.Write([]byte(head))
		go func() {
			for i := 0; i < len(trickle); i++ {
				if _, err := c.Write([]byte{trickle[i]}); err != nil {
					return
				}
				time.Sleep(100 * time.Millisecond)
			}
		}()
		c.SetReadDeadline(time.Now().Add(15 * time.Second))
		_, err = io.ReadAll(c)
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatal("the server held the connection for 15 s")
		}
		return time.Since(start)
	}
	t.Run("slowloris", func(t *testing.T) {
		t.Parallel()
		if d := closedAfter(t, "", "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "+strings.Repeat("a", 200)); d < 4*time.Second || d > 8*time.Second {
			t.Errorf("a trickled header held the connection %s (limit 5 s)", d)
		}
	})
	t.Run("trickled body", func(t *testing.T) {
		t.Parallel()
		head := "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 500\r\n\r\n"
		if d := closedAfter(t, head, strings.Repeat("b", 200)); d > 4*time.Second {
			t.Errorf("a trickled body held the connection %s (limit 1 s here)", d)
		}
	})
	t.Run("huge header", func(t *testing.T) {
		t.Parallel()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: %s\r\n\r\n", strings.Repeat("h", 128<<10))
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		line, _ := bufio.NewReader(c).ReadString('\n')
		if !strings.HasPrefix(line, "HTTP/1.1 431") {
			t.Errorf("128 KiB of headers: %q, want 431", line)
		}
	})
	t.Run("beside a hundred half-open requests", func(t *testing.T) {
		t.Parallel()
		var conns []net.Conn
		for range 100 {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			c.Write([]byte("POST /mcp HTTP/1.1\r\n"))
			conns = append(conns, c)
		}
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		start := time.Now()
		if code, _, body := post(t, "http://"+addr, initBody, nil); code != http.StatusOK {
			t.Errorf("initialize beside 100 half-open requests: %d %q", code, body)
		}
		t.Logf("initialize answered in %s beside 100 half-open requests", time.Since(start).Round(time.Millisecond))
	})
}

// TestDoorSessionEviction: with every slot taken, a new session takes the
// slot of the session quiet longest (2 s or more) that never called a tool;
// sessions holding a run are never closed for it, nor are sessions active
// within 2 s, and when only those are left the new one gets 503.
func TestDoorSessionEviction(t *testing.T) {
	var log logSink
	r := newRig(t, withLog(&log))
	clock := &fakeClock{t: time.Unix(1e9, 0)}
	ts := httptest.NewServer(r.srv.Handler(mcpserver.HTTPOptions{MaxSessions: 3, Rate: 1e6, Burst: 1e6, Now: clock.now}))
	defer func() { ts.CloseClientConnections(); ts.Close() }()
	a := r.connectHTTP(ts.URL, "runs")
	b := r.connectHTTP(ts.URL, "lists")
	c := r.connectHTTP(ts.URL, "idles")
	if obj, isErr := call(t, a, "qa_read", map[string]any{}); isErr {
		t.Fatalf("a's call: %v", obj)
	}
	if code, _, _ := post(t, ts.URL, initBody, nil); code != http.StatusServiceUnavailable {
		t.Errorf("a fourth session while all three were just active: %d, want 503", code)
	}
	clock.add(3 * time.Second)
	if _, err := b.ListTools(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if code, _, body := post(t, ts.URL, initBody, nil); code != http.StatusOK {
		t.Fatalf("a fourth session with c idle 3 s: %d %q, want 200", code, body)
	}
	if _, err := c.ListTools(context.Background(), nil); err == nil {
		t.Error("the idle session c still answers after it gave its slot up")
	}
	if n := log.count("closing the one quiet longest"); n != 1 {
		t.Errorf("%d evictions logged, want 1", n)
	}
	// b calls a tool (a run): now a and b hold runs; only the raw session
	// may go.
	if obj, isErr := call(t, b, "qa_read", map[string]any{}); isErr {
		t.Fatalf("b's call: %v", obj)
	}
	clock.add(3 * time.Second)
	if code, _, body := post(t, ts.URL, initBody, nil); code != http.StatusOK {
		t.Fatalf("a fifth session with the raw fourth idle: %d %q", code, body)
	}
	if code, _, _ := post(t, ts.URL, initBody, nil); code != http.StatusServiceUnavailable {
		t.Errorf("a sixth session with two runs and one fresh session: %d, want 503", code)
	}
	clock.add(time.Hour)
	if code, _, _ := post(t, ts.URL, initBody, nil); code != http.StatusOK {
		t.Errorf("a seventh session with the fifth idle an hour: %d, want 200", code)
	}
	for _, cs := range []*mcp.ClientSession{a, b} {
		if obj, isErr := call(t, cs, "qa_read", map[string]any{}); isErr {
			t.Errorf("a session holding a run was disturbed: %v", obj)
		}
	}
	a.Close()
	b.Close()
	r.waitRun()
	r.waitRun()
}

// heldTail passes an opening request's answer to the client, then holds the
// door's handler in the flush of its first event until release is closed:
// the client has its session id while the request's handler has not
// returned.
type heldTail struct {
	http.ResponseWriter
	release <-chan struct{}
	wrote   bytes.Buffer
	held    bool
}

func (h *heldTail) Write(p []byte) (int, error) {
	h.wrote.Write(p)
	return h.ResponseWriter.Write(p)
}

func (h *heldTail) Flush() {
	h.ResponseWriter.(http.Flusher).Flush()
	if !h.held && bytes.Contains(h.wrote.Bytes(), []byte("data:")) {
		h.held = true
		<-h.release
	}
}

// TestDoorSessionKnownBeforeAnswer: the door knows a session from the moment
// its id is sent, not from when its opening request's handler returns. With
// the one slot taken by a session whose client has its answer but whose
// handler is still finishing, a new session an hour later takes that slot
// (200), instead of finding no session it may close (503). This held the
// race behind TestDoorSessionEviction's rare 503 open for as long as needed.
func TestDoorSessionKnownBeforeAnswer(t *testing.T) {
	var log logSink
	r := newRig(t, withLog(&log))
	clock := &fakeClock{t: time.Unix(1e9, 0)}
	door := r.srv.Handler(mcpserver.HTTPOptions{MaxSessions: 1, Rate: 1e6, Burst: 1e6, Now: clock.now})
	release := make(chan struct{})
	var first atomic.Bool
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Header.Get("Mcp-Session-Id") == "" && first.CompareAndSwap(false, true) {
			w = &heldTail{ResponseWriter: w, release: release}
		}
		door.ServeHTTP(w, req)
	}))
	defer func() { ts.CloseClientConnections(); ts.Close() }()
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	defer free()

	code, h, body := post(t, ts.URL, initBody, nil)
	if code != http.StatusOK || h.Get("Mcp-Session-Id") == "" {
		t.Fatalf("the first session: %d %q", code, body)
	}
	clock.add(time.Hour)
	second := make(chan int, 1)
	go func() { // not post: it may not call t.Fatal off the test's goroutine
		req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(initBody))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			second <- 0
			return
		}
		resp.Body.Close()
		second <- resp.StatusCode
	}()
	// The second session closes the first and waits for its slot, which
	// comes back once the first's handler returns: let it return then.
	deadline := time.After(10 * time.Second)
	for log.count("closing the one quiet longest") == 0 {
		select {
		case code := <-second:
			t.Fatalf("a second session with the first idle an hour, its opening request still finishing: %d, want 200", code)
		case <-deadline:
			t.Fatal("no eviction and no answer in 10 s")
		case <-time.After(5 * time.Millisecond):
		}
	}
	free()
	if code := <-second; code != http.StatusOK {
		t.Errorf("a second session after the first gave its slot up: %d, want 200", code)
	}
}
