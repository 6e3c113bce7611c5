// Package faultnet is a TCP fault proxy for tests (test-only): it sits
// between fleetd and a dependency on 127.0.0.1 (the node's JSON-RPC, a
// target) and, per response, injects what a real network does to a service:
// latency, a reset in the middle of a response, a truncated response, a
// blackhole (the request is taken, no answer ever comes), a slow close (the
// answer arrives, then the connection lingers and dies), and refused
// connections while the dependency is "down". A Rule picks the fault from the
// bytes of the request the response answers (for JSON-RPC over HTTP: the
// method and its parameters), so a test can aim at one call ("the release's
// gas estimate") or draw faults at random. Every injected fault is counted
// per kind, for the test log.
//
// It is our own rather than toxiproxy's Go module: the proxy serves only
// toxiproxy v2.3.0 and v2.5.0 (2022), whose server pulls in a metrics stack
// and an HTTP API we would not use, while per-request faults aimed by the
// request's bytes (which toxiproxy's toxics cannot do: they act on a whole
// link) take about 250 lines of the standard library.
package faultnet

import (
	"errors"
	"io"
	"maps"
	"net"
	"sync"
	"time"
)

// Kind names a fault.
type Kind string

// The faults a Rule can inject into a response.
const (
	None      Kind = ""
	Latency   Kind = "latency"    // the response waits Delay before its first byte
	Reset     Kind = "reset"      // part of the response, then a TCP reset (RST)
	Truncate  Kind = "truncate"   // part of the response, then a clean close (FIN)
	Blackhole Kind = "blackhole"  // the request reaches the upstream; nothing comes back
	SlowClose Kind = "slow_close" // the whole response, then the connection is held Delay and closed
	Refuse    Kind = "refuse"     // the connection is reset as soon as it is accepted (SetDown)
)

// Fault is what to do to one response. Delay is the wait of Latency and
// SlowClose; Bytes is how much of the response Reset and Truncate let
// through (0: half of its first chunk).
type Fault struct {
	Kind  Kind
	Delay time.Duration
	Bytes int
}

// Rule picks the fault for the response to req, the bytes the client sent
// since the previous response began (an HTTP request, headers and body, up
// to 64 KiB). It is called once per response, from the connection's
// goroutine; it must be safe for concurrent use.
type Rule func(req []byte) Fault

// maxReq caps the request bytes kept for a Rule.
const maxReq = 64 << 10

// Proxy forwards connections on a 127.0.0.1 port to an upstream address,
// injecting the faults its Rule picks.
type Proxy struct {
	ln       net.Listener
	upstream string

	mu     sync.Mutex
	rule   Rule
	down   bool
	counts map[Kind]int
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// Start listens on 127.0.0.1 (a free port) and forwards to upstream
// (host:port). Close stops it.
func Start(upstream string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, upstream: upstream, counts: map[Kind]int{}, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// SetRule replaces the rule; nil injects nothing.
func (p *Proxy) SetRule(r Rule) {
	p.mu.Lock()
	p.rule = r
	p.mu.Unlock()
}

// SetUpstream sends new connections to addr (host:port) from now on: a
// dependency restarted on another port keeps the address its clients know.
// Open connections stay with the old upstream.
func (p *Proxy) SetUpstream(addr string) {
	p.mu.Lock()
	p.upstream = addr
	p.mu.Unlock()
}

// SetDown makes the dependency unreachable (every new connection is reset
// at once, and the open ones are cut) or reachable again.
func (p *Proxy) SetDown(down bool) {
	p.mu.Lock()
	p.down = down
	var cut []net.Conn
	if down {
		for c := range p.conns {
			cut = append(cut, c)
		}
	}
	p.mu.Unlock()
	for _, c := range cut {
		reset(c)
	}
}

// Counts returns how many faults of each kind were injected so far.
func (p *Proxy) Counts() map[Kind]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.counts)
}

// Total is the number of faults injected so far.
func (p *Proxy) Total() int {
	n := 0
	for _, v := range p.Counts() {
		n += v
	}
	return n
}

// Close stops accepting, cuts every open connection and waits for the
// proxy's goroutines.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	err := p.ln.Close()
	p.wg.Wait()
	return err
}

func (p *Proxy) count(k Kind) {
	p.mu.Lock()
	p.counts[k]++
	p.mu.Unlock()
}

// track registers c so Close and SetDown can cut it; false when closed.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		down := p.down
		p.mu.Unlock()
		if down {
			p.count(Refuse)
			reset(c)
			continue
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.serve(c)
		}()
	}
}

// reset closes c with a TCP reset rather than a FIN.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}

// link is one proxied connection: the request bytes seen since the last
// response began, and whether the current response's fault is decided.
type link struct {
	mu      sync.Mutex
	req     []byte
	decided bool
}

func (p *Proxy) serve(client net.Conn) {
	p.mu.Lock()
	upstream := p.upstream
	p.mu.Unlock()
	up, err := net.DialTimeout("tcp", upstream, 5*time.Second)
	if err != nil {
		reset(client)
		return
	}
	if !p.track(client) || !p.track(up) {
		client.Close()
		up.Close()
		return
	}
	defer p.untrack(client)
	defer p.untrack(up)
	l := &link{}
	done := make(chan struct{})
	go func() { // client -> upstream, keeping the request for the rule
		defer close(done)
		buf := make([]byte, 32<<10)
		for {
			n, err := client.Read(buf)
			if n > 0 {
				l.mu.Lock()
				if l.decided { // a new request: the previous response has begun
					l.req, l.decided = l.req[:0], false
				}
				if len(l.req) < maxReq {
					l.req = append(l.req, buf[:min(n, maxReq-len(l.req))]...)
				}
				l.mu.Unlock()
				if _, werr := up.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		if tc, ok := up.(*net.TCPConn); ok {
			tc.CloseWrite()
		}
	}()
	p.respond(client, up, l)
	client.Close()
	up.Close()
	<-done
}

// respond copies upstream -> client, applying each response's fault.
func (p *Proxy) respond(client, up net.Conn, l *link) {
	buf := make([]byte, 32<<10)
	blackholed := false
	for {
		n, err := up.Read(buf)
		if n > 0 && !blackholed {
			f := Fault{}
			l.mu.Lock()
			first := !l.decided
			if first {
				l.decided = true
				p.mu.Lock()
				rule := p.rule
				p.mu.Unlock()
				if rule != nil {
					f = rule(append([]byte(nil), l.req...))
				}
			}
			l.mu.Unlock()
			if f.Kind != None {
				p.count(f.Kind)
			}
			chunk := buf[:n]
			switch f.Kind {
			case Latency:
				time.Sleep(f.Delay)
			case Reset, Truncate:
				cut := f.Bytes
				if cut <= 0 || cut > n {
					cut = n / 2
				}
				client.Write(chunk[:cut])
				if f.Kind == Reset {
					reset(client)
				}
				return
			case Blackhole:
				// Swallow this response and everything after it; the client
				// waits until it gives up and closes.
				blackholed = true
				continue
			}
			if _, werr := client.Write(chunk); werr != nil {
				return
			}
			if f.Kind == SlowClose {
				// Forward the rest of the response as it comes, then close
				// once the delay is over.
				up.SetReadDeadline(time.Now().Add(f.Delay))
			}
		}
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				return // a slow close's delay is over
			}
			if blackholed && !errors.Is(err, io.EOF) {
				return
			}
			if blackholed {
				// The upstream finished; hold the client until it leaves.
				io.Copy(io.Discard, client)
			}
			return
		}
	}
}
