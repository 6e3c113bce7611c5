package mcpserver

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The HTTP door's defaults (HTTPOptions and HTTPServer), against hostile
// clients: each limit answers with a refusal, never a crash or a hang.
const (
	DefaultMaxBodyBytes      = 4 << 20 // a tools/call's arguments: 413 past it (a 1 MiB source, escaped, fits)
	DefaultMaxSessions       = 64      // HTTP sessions open at once: 503 past it
	DefaultRate              = 100     // requests a second per client address
	DefaultBurst             = 200     // requests at once per client address: 429 past it
	DefaultReadHeaderTimeout = 5 * time.Second
	DefaultReadTimeout       = 30 * time.Second
	DefaultIdleConnTimeout   = 2 * time.Minute
	DefaultMaxHeaderBytes    = 64 << 10

	// Token guessing, per client address, as the console's: a wrong token
	// spends one of guessBurst tries, which come back one per guessRefill.
	guessBurst   = 5
	guessRefill  = 10 * time.Second
	trackClients = 4096 // addresses tracked per limiter; full ones go first
)

const sessionIDHeader = "Mcp-Session-Id"

func (o *HTTPOptions) defaults() {
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 10 * time.Minute
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	if o.Rate <= 0 {
		o.Rate = DefaultRate
	}
	if o.Burst <= 0 {
		o.Burst = DefaultBurst
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// HTTPServer is an http.Server for h with the door's connection limits: a
// client gets 5 s for its headers (slowloris), 30 s for a whole request
// with its body (a body trickled in), 64 KiB of headers (431 past it), and
// an idle keep-alive connection is closed after 2 minutes. There is no
// write timeout: a tools/call's answer streams for as long as the tool
// runs (qa_fuzz, up to 10 minutes), and the read deadline ends once a
// request's body is read, so a session's event stream is not cut.
func HTTPServer(h http.Handler, errLog *slog.Logger) *http.Server {
	return &http.Server{
		Handler: h, ReadHeaderTimeout: DefaultReadHeaderTimeout, ReadTimeout: DefaultReadTimeout,
		IdleTimeout: DefaultIdleConnTimeout, MaxHeaderBytes: DefaultMaxHeaderBytes,
		ErrorLog: slog.NewLogLogger(errLog.Handler(), slog.LevelWarn),
	}
}

// door is what stands before the SDK's handler: per-address request rate,
// the bearer token with per-address guess limits, and the session cap.
type door struct {
	srv     *Server
	next    http.Handler
	o       HTTPOptions
	log     *slog.Logger
	reqs    *buckets
	guesses *buckets
	slots   chan struct{} // one per open HTTP session, or one being opened

	mu   sync.Mutex
	seen map[string]time.Time // open sessions by id: when each last sent a request
}

// minIdleToEvict is how long a session must have been quiet before a new
// session may take its slot: not one in the middle of its handshake.
const minIdleToEvict = 2 * time.Second

func (s *Server) newDoor(next http.Handler, o HTTPOptions) *door {
	return &door{
		srv: s, next: next, o: o, log: s.log,
		reqs:    newBuckets("requests", float64(o.Burst), o.Rate, o.Now, s.log),
		guesses: newBuckets("wrong tokens", guessBurst, 1/guessRefill.Seconds(), o.Now, s.log),
		slots:   make(chan struct{}, o.MaxSessions),
		seen:    map[string]time.Time{},
	}
}

func (d *door) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ip := clientIP(r)
	if ok, wait := d.reqs.take(ip); !ok {
		tooMany(w, wait, fmt.Sprintf("too many requests from %s: at most %g a second (burst %d)", ip, d.o.Rate, d.o.Burst))
		return
	}
	if d.o.Token != nil {
		if ok, wait := d.guesses.allowed(ip); !ok {
			// Before the token is looked at, the right one too: the limit
			// tells a guesser nothing.
			tooMany(w, wait, "too many wrong tokens from "+ip)
			return
		}
		tok, ok := BearerToken(r.Header.Get("Authorization"))
		if !ok || !d.o.Token(tok) {
			if ok {
				d.guesses.take(ip)
				d.log.Warn("mcp request refused: wrong bearer token", "remote", ip)
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="fleetd"`)
			http.Error(w, "unauthorized: send Authorization: Bearer TOKEN (fleetd http-token prints it)", http.StatusUnauthorized)
			return
		}
	}
	if r.ContentLength > d.o.MaxBodyBytes {
		w.Header().Set("Connection", "close")
		http.Error(w, fmt.Sprintf("request body of %d bytes is over the limit of %d", r.ContentLength, d.o.MaxBodyBytes), http.StatusRequestEntityTooLarge)
		return
	}
	if id := r.Header.Get(sessionIDHeader); id != "" || r.Method != http.MethodPost {
		d.touch(id)
		d.next.ServeHTTP(w, r)
		return
	}
	// A POST without a session id opens a session: it takes a slot, held
	// until the session ends (closed, deleted or idled out). When none is
	// free, the session quiet longest that has never called a tool (it
	// holds no run) gives its slot up: a flood of sessions that only
	// initialize cannot keep a slot from a client who would run a probe,
	// and a session holding a run (names, keys) is never closed for it.
	if !d.takeSlot() {
		w.Header().Set("Retry-After", "10")
		http.Error(w, fmt.Sprintf("%d MCP sessions are open (the limit), each running a run or active in the last %s: close one, or try again when one ends or idles out", d.o.MaxSessions, minIdleToEvict), http.StatusServiceUnavailable)
		return
	}
	ow := &opening{ResponseWriter: w, d: d}
	d.next.ServeHTTP(ow, r)
	ow.record() // a response with no body written
	if ow.id == "" {
		<-d.slots // no session was opened (not an initialize, or it failed)
		return
	}
	ss := d.srv.sessionByID(ow.id)
	if ss == nil { // it ended during its opening request (closed for room)
		d.forget(ow.id)
		return
	}
	go func() {
		ss.Wait()
		d.forget(ow.id)
	}()
}

// forget drops an opened session that has ended and frees its slot.
func (d *door) forget(id string) {
	d.mu.Lock()
	delete(d.seen, id)
	d.mu.Unlock()
	<-d.slots
}

// opening is the ResponseWriter of a request that opens a session. The door
// records the new session when the SDK writes the response's header, which
// names it, before a byte of the response reaches the client: a client that
// has its session id finds the door knowing its session, so its next
// requests count as activity, and the session can give its slot up once it
// has been quiet long enough, even while the opening request's handler is
// still finishing. (Recording it after the handler returned left a window
// where the client had moved on while the door did not know the session;
// TestDoorSessionKnownBeforeAnswer holds the handler there.)
type opening struct {
	http.ResponseWriter
	d    *door
	done bool
	id   string // the opened session's id, once recorded
}

func (o *opening) record() {
	if o.done {
		return
	}
	o.done = true
	id := o.Header().Get(sessionIDHeader)
	if id == "" {
		return
	}
	o.id = id
	o.d.mu.Lock()
	o.d.seen[id] = o.d.o.Now()
	o.d.mu.Unlock()
}

func (o *opening) WriteHeader(code int) {
	o.record()
	o.ResponseWriter.WriteHeader(code)
}

func (o *opening) Write(p []byte) (int, error) {
	o.record()
	return o.ResponseWriter.Write(p)
}

// FlushError flushes the stream (the SDK flushes each event through
// http.ResponseController); a flush sends the header too.
func (o *opening) FlushError() error {
	o.record()
	return http.NewResponseController(o.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the connection's own writer.
func (o *opening) Unwrap() http.ResponseWriter { return o.ResponseWriter }

// touch records a request of session id, if it is one the door opened (a
// made-up id is not remembered).
func (d *door) touch(id string) {
	if id == "" {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.seen[id]; ok {
		d.seen[id] = d.o.Now()
	}
}

// takeSlot takes a session slot, closing the session quiet longest that
// holds no run when none is free; false when every open session holds a
// run or was active within minIdleToEvict.
func (d *door) takeSlot() bool {
	select {
	case d.slots <- struct{}{}:
		return true
	default:
	}
	victim := d.idlest()
	if victim == nil {
		return false
	}
	d.log.Warn("mcp: sessions at the limit; closing the one quiet longest that holds no run", "session", victim.ID(), "limit", d.o.MaxSessions)
	victim.Close()
	select { // its slot comes back when its goroutine sees it end
	case d.slots <- struct{}{}:
		return true
	case <-time.After(2 * time.Second):
		return false
	}
}

// idlest is the open session quiet longest (at least minIdleToEvict) that
// has never called a tool, or nil.
func (d *door) idlest() *mcp.ServerSession {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.o.Now()
	var best *mcp.ServerSession
	var bestAt time.Time
	for ss := range d.srv.mcp.Sessions() {
		at, ok := d.seen[ss.ID()]
		if !ok || now.Sub(at) < minIdleToEvict || d.srv.hasRun(ss) {
			continue
		}
		if best == nil || at.Before(bestAt) {
			best, bestAt = ss, at
		}
	}
	return best
}

func tooMany(w http.ResponseWriter, wait time.Duration, msg string) {
	secs := int(max(wait.Round(time.Second), time.Second) / time.Second)
	w.Header().Set("Retry-After", fmt.Sprint(secs))
	http.Error(w, fmt.Sprintf("%s; retry in %d s", msg, secs), http.StatusTooManyRequests)
}

// clientIP is the request's remote address without its port.
func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// buckets are token buckets per client address: burst tokens, refilled at
// rate a second. The first refusal of a lockout is logged, and how many were
// refused during it is logged when it ends, so a flood is visible without a
// log line per request.
type buckets struct {
	what  string
	burst float64
	rate  float64
	now   func() time.Time
	log   *slog.Logger

	mu sync.Mutex
	m  map[string]*bucket
}

type bucket struct {
	tokens  float64
	at      time.Time
	refused int
}

func newBuckets(what string, burst, rate float64, now func() time.Time, log *slog.Logger) *buckets {
	return &buckets{what: what, burst: burst, rate: rate, now: now, log: log, m: map[string]*bucket{}}
}

func (b *buckets) get(ip string, now time.Time) *bucket {
	st := b.m[ip]
	if st == nil {
		if len(b.m) >= trackClients {
			b.evict(now)
		}
		st = &bucket{tokens: b.burst, at: now}
		b.m[ip] = st
	}
	st.tokens = min(b.burst, st.tokens+now.Sub(st.at).Seconds()*b.rate)
	st.at = now
	return st
}

// allowed reports whether ip has a token left, without spending it, and
// when it has none how long until it has.
func (b *buckets) allowed(ip string) (bool, time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m[ip] == nil {
		return true, 0
	}
	return b.check(ip, b.get(ip, b.now()))
}

func (b *buckets) check(ip string, st *bucket) (bool, time.Duration) {
	if st.tokens >= 1 {
		if st.refused > 0 {
			b.log.Warn("mcp: client allowed again", "limit", b.what, "remote", ip, "refused_while_limited", st.refused)
			st.refused = 0
		}
		return true, 0
	}
	if st.refused == 0 {
		b.log.Warn("mcp: client over its limit; refusing", "limit", b.what, "remote", ip)
	}
	st.refused++
	return false, time.Duration((1 - st.tokens) / b.rate * float64(time.Second))
}

// take spends one of ip's tokens, reporting whether it had one.
func (b *buckets) take(ip string) (bool, time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.get(ip, b.now())
	ok, wait := b.check(ip, st)
	if ok {
		st.tokens--
	}
	return ok, wait
}

// evict drops the addresses whose buckets are full, or, when none are, the
// one seen longest ago.
func (b *buckets) evict(now time.Time) {
	var oldest string
	for ip, st := range b.m {
		if min(b.burst, st.tokens+now.Sub(st.at).Seconds()*b.rate) >= b.burst {
			delete(b.m, ip)
			continue
		}
		if oldest == "" || st.at.Before(b.m[oldest].at) {
			oldest = ip
		}
	}
	if len(b.m) >= trackClients && oldest != "" {
		delete(b.m, oldest)
	}
}
