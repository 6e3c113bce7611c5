package browser

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/chromedp/cdproto/runtime"
	"github.com/qafleet/fleetd/clip"
	"github.com/qafleet/fleetd/crawl"
)

// FuzzPageText: whatever a page logs, throws or reports through the
// binding, the recorder keeps valid UTF-8 within its caps and never
// panics.
func FuzzPageText(f *testing.F) {
	for _, s := range []string{"TypeError: x is undefined", "héllo wörld " + strings.Repeat("é", 200), `{"kind":"csp","directive":"script-src","blocked":"inline"}`, `{"kind":"dom"}`, "\xff\xfe", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r := &recorder{out: &crawl.Rendered{}, allow: func(string) error { return nil }, consoles: map[string]bool{}}
		v, _ := json.Marshal(s)
		r.on(&runtime.EventExceptionThrown{ExceptionDetails: &runtime.ExceptionDetails{Text: s, URL: s, Exception: &runtime.RemoteObject{Description: s}}})
		r.on(&runtime.EventConsoleAPICalled{Type: runtime.ConsoleAPICalledTypeError, Args: []*runtime.RemoteObject{{Value: v}, {Description: s}}})
		r.on(&runtime.EventBindingCalled{Name: binding, Payload: s})
		for _, list := range [][]string{r.out.Exceptions, r.out.ConsoleErrors, r.out.CSP} {
			for _, m := range list {
				if utf8.ValidString(s) && !utf8.ValidString(m) {
					t.Fatalf("invalid UTF-8 kept from valid input: %q", m)
				}
				if len(m) > 600+len("…") {
					t.Fatalf("kept %d bytes", len(m))
				}
			}
		}
		if c := clip.Text(s, 7); len(c) > 7+len("…") || utf8.ValidString(s) && !utf8.ValidString(c) {
			t.Fatalf("clip.Text(%q) = %q", s, c)
		}
	})
}

// FuzzTunnel: whatever a page makes the browser send through a plain
// tunnel, with every write held, no request that writes (a method but GET
// or HEAD, a WebSocket upgrade) reaches the site, nothing off the
// allowlist does, and the proxy never panics or hangs.
func FuzzTunnel(f *testing.F) {
	for _, s := range []string{
		"GET / HTTP/1.1\r\nHost: a\r\n\r\n",
		"POST /w HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n\r\nx",
		"GET /ws HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\n\r\nPOST /w HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 40\r\n\r\nPOST /w HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET http://evil.test/ HTTP/1.1\r\nHost: evil.test\r\n\r\n",
		"\x16\x03\x01\x00\x05hello",
		"SSH-2.0-x\r\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		p := &proxy{allow: func(raw string) error {
			u, err := url.Parse(raw)
			if err != nil || u.Host != "a.test:81" {
				return errors.New("off the allowlist")
			}
			return nil
		}, tunnels: map[net.Conn]struct{}{}}
		var asked []string
		p.setWrites(func(w Write) error { asked = append(asked, w.Method); return errHeld }, &grants{})
		down, browserSide := net.Pipe()
		up, siteSide := net.Pipe()
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer up.Close()
			defer down.Close()
			p.serveTunnel(up, down, bufio.NewReader(down), "a.test:81")
		}()
		go func() { browserSide.Write([]byte(in)); browserSide.Close() }()
		go io.Copy(io.Discard, browserSide)
		// The site answers every request it gets with an empty 200 and
		// reads what reached it.
		br := bufio.NewReader(siteSide)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				break
			}
			if isWrite(req.Method) || req.Header.Get("Upgrade") != "" {
				t.Fatalf("a write reached the site with every write held: %s %s (upgrade %q)", req.Method, req.URL, req.Header.Get("Upgrade"))
			}
			io.Copy(io.Discard, req.Body)
			siteSide.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"))
		}
		siteSide.Close()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("the tunnel did not end when both sides closed")
		}
	})
}
