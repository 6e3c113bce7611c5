package mcpserver_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/qafleet/fleetd/mcpserver"
)

// bearer adds a bearer token to every request.
type bearer struct{ tok string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.tok)
	return http.DefaultTransport.RoundTrip(r)
}

// listen runs ListenAndServe on loopback port 0 in the background and
// returns its stop, the URL it announced, whether it asked for a token,
// and its result channel.
func listen(t *testing.T, r *rig, o mcpserver.ListenOptions) (stop func(), url string, needToken bool, done chan error) {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	type ready struct {
		url  string
		need bool
	}
	readyc := make(chan ready, 1)
	o.Addr, o.Logger = "127.0.0.1:0", slog.New(slog.NewTextHandler(io.Discard, nil))
	o.Ready = func(url string, need bool) { readyc <- ready{url, need} }
	done = make(chan error, 1)
	go func() { done <- r.srv.ListenAndServe(ctx, o) }()
	select {
	case rd := <-readyc:
		return stop, rd.url, rd.need, done
	case err := <-done:
		t.Fatalf("ListenAndServe returned before it was ready: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("ListenAndServe never became ready")
	}
	return
}

// TestListenAndServe: on loopback without --require-token no token is
// asked for; a session's run works over the announced URL; a stop by ctx
// ends the session's run and returns nil.
func TestListenAndServe(t *testing.T) {
	r := newRig(t)
	stop, url, need, done := listen(t, r, mcpserver.ListenOptions{
		Token: func() (string, error) { t.Error("a token was asked for on loopback"); return "", nil },
	})
	if need || !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, "/mcp") {
		t.Fatalf("announced %s, token required %v", url, need)
	}
	cs := r.connectHTTP(url, "agent")
	defer cs.Close()
	if _, isErr := call(t, cs, "qa_read", map[string]any{}); isErr {
		t.Fatal("qa_read over ListenAndServe failed")
	}
	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("stopped by ctx: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("ListenAndServe did not return after ctx was done")
	}
	if res := r.waitRun(); res.RunID == "" {
		t.Error("the session's run did not end with the stop")
	}
}

// TestListenAndServeRequiresToken: with RequireToken a request without
// the token is refused (401) and one with it is served; a token that
// cannot be read stops the start with its error.
func TestListenAndServeRequiresToken(t *testing.T) {
	r := newRig(t)
	const tok = "0123456789abcdef0123456789abcdef"
	_, url, need, _ := listen(t, r, mcpserver.ListenOptions{RequireToken: true, Token: func() (string, error) { return tok, nil }})
	if !need {
		t.Fatal("--require-token: announced no token required")
	}
	resp, err := http.Post(url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("no token: status %d, want 401", resp.StatusCode)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{tok}}}, nil)
	if err != nil {
		t.Fatalf("with the token: %v", err)
	}
	defer cs.Close()
	if _, isErr := call(t, cs, "qa_read", map[string]any{}); isErr {
		t.Error("qa_read with the token failed")
	}

	bad := errors.New("http token: unreadable")
	err = newRig(t).srv.ListenAndServe(context.Background(), mcpserver.ListenOptions{Addr: "127.0.0.1:0", RequireToken: true,
		Token: func() (string, error) { return "", bad }})
	if !errors.Is(err, bad) {
		t.Errorf("token error: %v", err)
	}
	err = newRig(t).srv.ListenAndServe(context.Background(), mcpserver.ListenOptions{Addr: "127.0.0.1:99999"})
	if err == nil || !strings.Contains(err.Error(), "--addr 127.0.0.1:99999") {
		t.Errorf("a bad address: %v", err)
	}
}

func TestTokenMatches(t *testing.T) {
	tok := strings.Repeat("ab", 32)
	if !mcpserver.TokenMatches(tok, tok) || mcpserver.TokenMatches(tok[:63], tok) || mcpserver.TokenMatches("", "") || mcpserver.TokenMatches(tok, "") {
		t.Error("TokenMatches")
	}
}
