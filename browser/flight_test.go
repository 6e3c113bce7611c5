package browser

import (
	"bufio"
	"context"
	"crypto/sha1"
	"encoding/base64"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/qafleet/fleetd/crawl"
)

// TestWebSocketInFlight: a WebSocket counts as a request in flight until
// its handshake is answered or fails (the site refuses one, the allowlist
// another: the page still settles), so a render whose only activity left is a
// socket the site answers after the page went quiet waits for it (it used
// to settle after Config.Quiet and close the tab first: status 0, and a
// socket the site may never have seen).
func TestWebSocketInFlight(t *testing.T) {
	var reached atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", htmlPage(`<!doctype html><html><body><p>hi</p>
<script>const s = new WebSocket(location.origin.replace('http', 'ws') + '/ws');
new WebSocket(location.origin.replace('http', 'ws') + '/refused'); new WebSocket('ws://127.0.0.1:1/off');</script></body></html>`))
	done := make(chan struct{})
	mux.HandleFunc("GET /ws", func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		// The site answers the handshake well after the page went quiet
		// (4 times Config.Quiet).
		select {
		case <-time.After(2 * time.Second):
		case <-r.Context().Done():
			return
		case <-done:
			return
		}
		sum := sha1.Sum([]byte(r.Header.Get("Sec-WebSocket-Key") + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
		c, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close()
		rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " +
			base64.StdEncoding.EncodeToString(sum[:]) + "\r\n\r\n")
		rw.Flush()
		select { // hold the socket open until the tab closes it or the test ends
		case <-done:
		case <-readEOF(rw.Reader):
		}
	})
	s := serve(t, mux)
	t.Cleanup(func() { close(done) })
	// A WebSocket's handshake is a write: this browser may send them.
	b := newBrowser(t, Config{Allow: allowOnly(s.URL), Write: func(Write) error { return nil }, PageTimeout: 20 * time.Second})
	r := render(t, b, s.URL+"/")
	i := slices.IndexFunc(r.Requests, func(rq crawl.Request) bool { return rq.Type == "websocket" })
	sockets := 0
	for _, rq := range r.Requests {
		if rq.Type == "websocket" {
			sockets++
		}
	}
	if i < 0 || r.Requests[i].Status != 101 || !r.Settled || reached.Load() != 1 || sockets != 3 {
		t.Fatalf("settled %v, the site saw %d handshakes, requests %+v, notes %v; want the socket's 101 recorded before the render ended",
			r.Settled, reached.Load(), r.Requests, r.Notes)
	}
}

// readEOF is closed once r reads to its end (or an error).
func readEOF(r *bufio.Reader) <-chan struct{} {
	c := make(chan struct{})
	go func() {
		defer close(c)
		for {
			if _, err := r.ReadByte(); err != nil {
				return
			}
		}
	}()
	return c
}

// TestNavigationEndsFrameRequests: requests a frame had in flight when a
// top navigation replaced its document (a hanging iframe document, a
// hanging fetch from an iframe) end with it, and the new page settles
// (they used to stay in flight and hold the render to its page budget).
func TestNavigationEndsFrameRequests(t *testing.T) {
	var hung atomic.Int32
	done := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", htmlPage(`<!doctype html><html><body>
<iframe src="/hang?doc"></iframe>
<iframe src="/frame" onload="location.href = '/next'"></iframe></body></html>`))
	mux.HandleFunc("GET /frame", htmlPage(`<!doctype html><html><body><script>fetch('/hang?fetch').catch(() => {});</script></body></html>`))
	mux.HandleFunc("GET /next", htmlPage(`<!doctype html><html><body><p>next</p></body></html>`))
	mux.HandleFunc("GET /hang", func(w http.ResponseWriter, r *http.Request) {
		hung.Add(1)
		select {
		case <-r.Context().Done():
		case <-done:
		}
	})
	s := serve(t, mux)
	t.Cleanup(func() { close(done) })
	const budget = 12 * time.Second
	b := newBrowser(t, Config{Allow: allowOnly(s.URL), PageTimeout: budget})
	start := time.Now()
	r, err := b.Render(context.Background(), s.URL+"/")
	if err != nil {
		t.Fatal(err)
	}
	if !r.Settled || r.FinalURL != s.URL+"/next" {
		t.Fatalf("settled %v at %q after %s (budget %s), the site held %d hanging requests; notes %v, requests %+v",
			r.Settled, r.FinalURL, time.Since(start).Round(time.Millisecond), budget, hung.Load(), r.Notes, r.Requests)
	}
	if hung.Load() == 0 {
		t.Error("no hanging request reached the site: the test did not test the navigation that ends them")
	}
}
