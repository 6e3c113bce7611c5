package browser

import (
	"context"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"
)

// proxy is the browser's only way out (--proxy-server): it forwards plain
// HTTP requests and tunnels CONNECT (https, wss, ws) only to host:ports the
// allowlist takes, so what the DevTools Fetch domain does not pause
// (WebSockets, workers, preconnects) cannot leave the allowlist either. It
// reads every request, inside TLS tunnels too (tunnel.go), and asks the
// browser's Config.Write about each that writes.
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
	mitm    *interceptor // ends the tunnels' TLS (tunnel.go)
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

func startProxy(allow func(string) error, dial func(ctx context.Context, network, addr string) (net.Conn, error), timeout time.Duration, roots *x509.CertPool) (*proxy, error) {
	if dial == nil {
		dial = (&net.Dialer{Timeout: timeout}).DialContext
	}
	mitm, err := newInterceptor(roots)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &proxy{
		allow: allow, dial: dial, ln: ln, tunnels: map[net.Conn]struct{}{}, mitm: mitm,
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
	p.record(what)
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
	// Streamed: a page reading a response as it comes (server-sent
	// events, a long poll, a streamed fetch) gets each part when the site
	// sends it. The ResponseWriter would hold even the headers until the
	// body ended, and a stream that never ends would never open.
	rc := http.NewResponseController(w)
	rc.Flush()
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			rc.Flush()
		}
		if err != nil {
			return
		}
	}
}

// tunnel serves CONNECT host:port: refused off the allowlist, else read
// request by request (serveTunnel).
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
		defer up.Close()
		defer down.Close()
		p.serveTunnel(up, down, buf.Reader, hp)
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

func (p *proxy) record(what string) {
	p.mu.Lock()
	p.refused = append(p.refused, what)
	p.mu.Unlock()
}
