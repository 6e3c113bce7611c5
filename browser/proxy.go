package browser

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// proxy is the browser's only way out (--proxy-server): it forwards plain
// HTTP requests and tunnels CONNECT (https, wss, ws) only to host:ports the
// allowlist takes, so what the DevTools Fetch domain does not pause
// (WebSockets, workers, preconnects) cannot leave the allowlist either.
type proxy struct {
	allow func(rawURL string) error
	dial  func(ctx context.Context, network, addr string) (net.Conn, error)
	ln    net.Listener
	srv   *http.Server
	tr    *http.Transport

	mu      sync.Mutex
	tunnels map[net.Conn]struct{}
	refused []string // host:port or URL refused, in order
	write   func(Write) error
	grants  *grants
}

// setWrites gives the proxy the browser's write decision and the grants
// of its tabs (before Chromium starts).
func (p *proxy) setWrites(write func(Write) error, g *grants) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.write, p.grants = write, g
}

// mayWrite decides a write the proxy sees: one a tab's Fetch domain let
// through passes on its grant; any other is asked about (a worker's, a
// service worker's, a WebSocket handshake). No decision configured holds it.
func (p *proxy) mayWrite(w Write) error {
	p.mu.Lock()
	write, g := p.write, p.grants
	p.mu.Unlock()
	if g != nil && w.Method != methodWebSocket && g.take(w.Method, w.URL) {
		return nil
	}
	if write == nil {
		return errHeld
	}
	w.Via = "proxy"
	return write(w)
}

// hopHeaders are the hop-by-hop headers a proxy must not forward.
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

func startProxy(allow func(string) error, dial func(ctx context.Context, network, addr string) (net.Conn, error), timeout time.Duration) (*proxy, error) {
	if dial == nil {
		dial = (&net.Dialer{Timeout: timeout}).DialContext
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &proxy{
		allow: allow, dial: dial, ln: ln, tunnels: map[net.Conn]struct{}{},
		tr: &http.Transport{
			Proxy:                 nil, // never through an environment proxy
			DialContext:           dial,
			ResponseHeaderTimeout: timeout,
			TLSHandshakeTimeout:   timeout,
			MaxIdleConnsPerHost:   4,
		},
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: timeout}
	go p.srv.Serve(ln)
	return p, nil
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

// refusals returns the refusals so far, in order.
func (p *proxy) refusals() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.refused...)
}

func (p *proxy) refuse(w http.ResponseWriter, what string, err error) {
	p.mu.Lock()
	p.refused = append(p.refused, what)
	p.mu.Unlock()
	http.Error(w, "fleetd browser proxy: "+err.Error(), http.StatusForbidden)
}

// ErrRefused is wrapped by a Config.Dial error that refuses the address
// (rather than failing to reach it): the proxy answers 403 and records a
// refusal, as for a URL off the allowlist.
var ErrRefused = errors.New("refused by the address checks")

// refuseDial answers a connection that could not be made: a refusal by
// the dialler's address checks is recorded as one (403), anything else is
// a bad gateway.
func (p *proxy) refuseDial(w http.ResponseWriter, what string, err error) {
	if errors.Is(err, ErrRefused) {
		p.refuse(w, what, err)
		return
	}
	http.Error(w, "fleetd browser proxy: "+err.Error(), http.StatusBadGateway)
}

func (p *proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		p.tunnel(w, r)
		return
	}
	if !r.URL.IsAbs() {
		http.Error(w, "fleetd browser proxy: not a proxy request", http.StatusBadRequest)
		return
	}
	if err := p.allow(r.URL.String()); err != nil {
		p.refuse(w, r.URL.String(), err)
		return
	}
	if isWrite(r.Method) {
		if err := p.mayWrite(Write{Method: r.Method, URL: r.URL.String()}); err != nil {
			p.refuse(w, r.Method+" "+r.URL.String(), err)
			return
		}
	}
	out := r.Clone(r.Context())
	out.RequestURI = ""
	for _, h := range hopHeaders {
		out.Header.Del(h)
	}
	resp, err := p.tr.RoundTrip(out)
	if err != nil {
		p.refuseDial(w, r.URL.String(), err)
		return
	}
	defer resp.Body.Close()
	for _, h := range hopHeaders {
		resp.Header.Del(h)
	}
	for k, vs := range resp.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	io.Copy(w, resp.Body)
}

// tunnel serves CONNECT host:port: refused off the allowlist, else spliced.
func (p *proxy) tunnel(w http.ResponseWriter, r *http.Request) {
	hp := r.Host
	if err := p.allow("http://" + hp + "/"); err != nil {
		p.refuse(w, hp, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	up, err := p.dial(ctx, "tcp", hp)
	cancel()
	if err != nil {
		p.refuseDial(w, hp, err)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		up.Close()
		http.Error(w, "fleetd browser proxy: cannot tunnel", http.StatusInternalServerError)
		return
	}
	down, buf, err := hj.Hijack()
	if err != nil {
		up.Close()
		return
	}
	p.track(up, true)
	p.track(down, true)
	down.Write([]byte("HTTP/1.1 200 Connection Established\r\n\r\n"))
	go func() {
		defer p.track(up, false)
		defer p.track(down, false)
		if !p.opening(up, down, buf.Reader, hp) {
			up.Close()
			down.Close()
			return
		}
		done := make(chan struct{}, 2)
		go func() {
			if n := buf.Reader.Buffered(); n > 0 {
				b, _ := buf.Reader.Peek(n)
				up.Write(b)
			}
			io.Copy(up, down)
			done <- struct{}{}
		}()
		go func() { io.Copy(down, up); done <- struct{}{} }()
		<-done
		up.Close()
		down.Close()
		<-done
	}()
}

func (p *proxy) track(c net.Conn, add bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if add {
		p.tunnels[c] = struct{}{}
	} else {
		delete(p.tunnels, c)
	}
}

// close stops the proxy and every open tunnel.
func (p *proxy) close() error {
	err := p.srv.Close()
	p.mu.Lock()
	for c := range p.tunnels {
		c.Close()
	}
	p.mu.Unlock()
	p.tr.CloseIdleConnections()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// methodWebSocket is Write.Method for a WebSocket.
const methodWebSocket = "WEBSOCKET"

// opening reads what the browser sends first through a tunnel to hp: a TLS
// handshake (https, wss) is spliced unread; a plain WebSocket handshake
// (ws://) is a write, decided, and sent on only if allowed; anything else
// is refused (Chromium tunnels nothing else in plain text). It reports
// whether the tunnel may go on.
func (p *proxy) opening(up, down net.Conn, br *bufio.Reader, hp string) bool {
	down.SetReadDeadline(time.Now().Add(30 * time.Second))
	defer down.SetReadDeadline(time.Time{})
	first, err := br.Peek(1)
	if err != nil {
		return false
	}
	if first[0] == 0x16 { // a TLS record: handshake
		return true
	}
	req, err := http.ReadRequest(br)
	if err != nil {
		p.record(hp + " (not TLS, not HTTP)")
		return false
	}
	if !strings.EqualFold(req.Header.Get("Upgrade"), "websocket") {
		p.record(req.Method + " http://" + hp + req.RequestURI + " (plain request in a tunnel)")
		return false
	}
	u := "ws://" + hp + req.RequestURI
	if err := p.mayWrite(Write{Method: methodWebSocket, URL: u}); err != nil {
		p.record(methodWebSocket + " " + u)
		io.WriteString(down, "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
		return false
	}
	return req.Write(up) == nil
}

func (p *proxy) record(what string) {
	p.mu.Lock()
	p.refused = append(p.refused, what)
	p.mu.Unlock()
}
