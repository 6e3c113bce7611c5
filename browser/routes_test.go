package browser

import (
	"context"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	stdlog "log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/qafleet/fleetd/crawl"
	"github.com/qafleet/fleetd/faultnet"
)

// platform is the allowlisted site: it serves the test's pages and counts
// every write that reaches it (any method but GET and HEAD, and every
// WebSocket handshake), by method and path.
type platform struct {
	mu     sync.Mutex
	writes []string
	pages  map[string]string // path -> body; .js paths are served as scripts
}

func (p *platform) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if isWrite(r.Method) || strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		p.mu.Lock()
		m := r.Method
		if r.Header.Get("Upgrade") != "" {
			m = methodWebSocket
		}
		p.writes = append(p.writes, m+" "+r.URL.Path)
		p.mu.Unlock()
	}
	body, ok := p.pages[r.URL.Path]
	if !ok {
		fmt.Fprint(w, "ok")
		return
	}
	switch {
	case strings.HasSuffix(r.URL.Path, ".js"):
		w.Header().Set("Content-Type", "text/javascript")
		w.Header().Set("Service-Worker-Allowed", "/")
	case strings.HasSuffix(r.URL.Path, ".json"):
		w.Header().Set("Content-Type", "application/speculationrules+json")
	default:
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
	}
	fmt.Fprint(w, body)
}

func (p *platform) arrived() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.writes...)
}

// writeLog is a Config.Write that holds every write (observe) or sends at
// most budget of them (exercise), recording each.
type writeLog struct {
	mu       sync.Mutex
	readOnly atomic.Bool
	budget   int
	// lowerAfterOne moves the dial to observe once one write is sent.
	lowerAfterOne bool
	sent          []string
	held          []string
	// asked is every decision in order, with the fence that asked
	// (Write.Via: page or proxy) and when: "+1.234s page POST <url>: sent".
	asked []string
	start time.Time
}

func (l *writeLog) write(w Write) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := w.Method + " " + w.URL
	if l.start.IsZero() {
		l.start = time.Now()
	}
	ask := fmt.Sprintf("+%.3fs %s %s", time.Since(l.start).Seconds(), w.Via, k)
	switch {
	case l.readOnly.Load():
		l.held = append(l.held, k)
		l.asked = append(l.asked, ask+": held (observe)")
		return heldError("held: the dial is observe")
	case len(l.sent) >= l.budget:
		l.held = append(l.held, k)
		l.asked = append(l.asked, ask+": held (budget)")
		return heldError("held: the run's write budget is spent")
	}
	l.sent = append(l.sent, k)
	l.asked = append(l.asked, ask+": sent")
	if l.lowerAfterOne {
		l.readOnly.Store(true)
	}
	return nil
}

// decisions is asked, one a line.
func (l *writeLog) decisions() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.asked, "\n")
}

func (l *writeLog) lists() (sent, held []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.sent...), append([]string(nil), l.held...)
}

// routes are the ways out a page script has, one page each. {OFF} and
// {OFF3} are host:ports off the allowlist (TCP and UDP listening on both),
// {OFFIP} the first one's address alone.
var routes = []struct {
	name string
	page string
	more map[string]string
	// writes: the page tries writes to the platform (Config.Write must
	// see at least one).
	writes bool
	// want: writes ("METHOD /path" on the platform) the page must have
	// held, each one.
	want []string
}{
	{name: "fetch-methods", writes: true, page: `<script>
for (const m of ['POST','PUT','DELETE','PATCH','OPTIONS','PROPFIND']) fetch('/w/fetch-' + m, {method: m, body: m === 'OPTIONS' || m === 'PROPFIND' ? undefined : 'x'}).catch(()=>{});
fetch('/w/json', {method: 'POST', headers: {'content-type': 'application/json', 'x-custom': '1'}, body: '{}'}).catch(()=>{});
fetch('http://{OFF}/w', {method: 'POST', body: 'x', mode: 'no-cors'}).catch(()=>{});
</script>`},
	{name: "xhr", writes: true, page: `<script>
const x = new XMLHttpRequest(); x.open('POST', '/w/xhr'); x.send('x');
const y = new XMLHttpRequest(); y.open('DELETE', 'http://{OFF}/w'); y.send();
</script>`},
	{name: "send-beacon", writes: true, page: `<script>
navigator.sendBeacon('/w/beacon', 'x'); navigator.sendBeacon('http://{OFF}/beacon', 'x');
addEventListener('pagehide', () => navigator.sendBeacon('/w/beacon-hide', 'x'));
</script>`},
	{name: "keepalive-fetch", writes: true, page: `<script>
fetch('/w/keepalive', {method: 'POST', body: 'x', keepalive: true}).catch(()=>{});
</script>`},
	// The top form leaves the page (and ends all else on it) last. It is
	// submitted from the iframe's load event once the frame holds another
	// origin's document: the error page Chromium commits when the frame's
	// submission is held (failed BlockedByClient), and the only load event
	// the iframe fires (/form submits while it parses and fires none).
	// Then /leave-when-held, the test's own, answers once the page's other
	// wanted writes are held and keeps its body open until the top form's
	// is: the render cannot settle before the top form goes. (A 200 ms
	// timer raced the frame: on a loaded machine the top form left first
	// and the frame's write, or a worker's, was never tried.)
	{name: "form-post", writes: true, want: []string{"POST /w/form-top", "POST /w/form-frame"}, page: `<iframe src="/form" onload="if (!this.contentDocument) fetch('/leave-when-held' + location.pathname).finally(() => { document.getElementById('g').submit(); document.getElementById('f').submit(); })"></iframe>
<form id=f method=post action="/w/form-top"><input name=a value=1></form>
<form id=g method=post action="http://{OFF}/w" target=_blank><input name=a value=1></form>`,
		more: map[string]string{"/form": `<form method=post action="/w/form-frame"><input name=a value=1></form><script>document.forms[0].submit()</script>`}},
	{name: "websocket", writes: true, page: `<script>
for (const u of ['ws://' + location.host + '/w/ws', 'ws://{OFF}/ws', 'wss://{OFF}/ws', 'wss://' + location.host + '/w/wss']) { try { const s = new WebSocket(u); s.onopen = () => s.send('x'); } catch (e) {} }
</script>`},
	{name: "webtransport", page: `<script>
try { const t = new WebTransport('https://{OFF}/wt'); t.ready.catch(()=>{}); t.closed.catch(()=>{}); } catch (e) {}
try { const t = new WebTransport('https://' + location.hostname + ':{OFFPORT}/wt'); t.ready.catch(()=>{}); t.closed.catch(()=>{}); } catch (e) {}
</script>`},
	{name: "webrtc-stun-turn", page: `<script>
(async () => {
  try {
    const pc = new RTCPeerConnection({iceServers: [{urls: 'stun:{OFF}'}, {urls: ['turn:{OFF3}?transport=udp', 'turn:{OFF3}?transport=tcp'], username: 'u', credential: 'p'}]});
    pc.createDataChannel('x');
    pc.onicecandidate = e => { if (e.candidate) console.log('candidate', e.candidate.candidate); };
    await pc.setLocalDescription(await pc.createOffer());
    const pc2 = new RTCPeerConnection();
    await pc2.setRemoteDescription({type: 'offer', sdp: pc.localDescription.sdp});
    await pc2.setLocalDescription(await pc2.createAnswer());
    await pc.setRemoteDescription(pc2.localDescription);
    await pc2.addIceCandidate({candidate: 'candidate:1 1 udp 2122260223 {OFFIP} {OFFPORT} typ host', sdpMid: '0', sdpMLineIndex: 0});
    await pc2.addIceCandidate({candidate: 'candidate:2 1 udp 2122260223 0b3f1c2e-leak.local {OFFPORT} typ host', sdpMid: '0', sdpMLineIndex: 0});
  } catch (e) {}
})();
</script>`},
	{name: "dns-prefetch-preconnect", page: `<link rel=dns-prefetch href="//{OFF}"><link rel=preconnect href="http://{OFF}"><link rel=preconnect href="https://{OFF3}" crossorigin>
<link rel=dns-prefetch href="//leak.example.test"><link rel=preconnect href="https://leak.example.test">`},
	{name: "quic", page: `<img src="https://{OFF}/q.png"><script>fetch('https://{OFF3}/q', {mode: 'no-cors'}).catch(()=>{});</script>`},
	{name: "service-worker", writes: true, page: `<script>
navigator.serviceWorker && navigator.serviceWorker.register('/sw.js', {scope: '/'}).then(r => {
  const go = () => fetch('/after-sw').catch(()=>{});
  if (r.active) go(); else navigator.serviceWorker.addEventListener('controllerchange', go);
}).catch(()=>{});
</script>`,
		more: map[string]string{"/sw.js": `self.addEventListener('install', e => { self.skipWaiting(); fetch('/w/sw-install', {method: 'POST', body: 'x'}).catch(()=>{}); fetch('http://{OFF}/sw').catch(()=>{}); });
self.addEventListener('activate', e => { e.waitUntil(clients.claim()); fetch('/w/sw-activate', {method: 'DELETE'}).catch(()=>{}); });
self.addEventListener('fetch', e => { fetch('/w/sw-fetch', {method: 'POST', body: 'x'}).catch(()=>{}); });
try { new WebSocket(location.origin.replace('http', 'ws') + '/w/sw-ws'); } catch (e) {}`}},
	{name: "workers", writes: true, page: `<script>
new Worker('/worker.js');
try { new SharedWorker('/worker.js?shared'); } catch (e) {}
new Worker(URL.createObjectURL(new Blob(["fetch('/w/blob-worker', {method: 'POST', body: 'x'}).catch(()=>{}); fetch('http://{OFF}/w').catch(()=>{});"])));
</script>`,
		more: map[string]string{"/worker.js": `fetch('/w/worker', {method: 'POST', body: 'x'}).catch(()=>{}); fetch('http://{OFF}/worker').catch(()=>{}); try { new WebSocket('ws://{OFF3}/'); } catch (e) {}
try { new WebSocket(location.origin.replace('http', 'ws') + '/w/worker-ws'); } catch (e) {}`}},
	{name: "prefetch-prerender", page: `<link rel=prefetch href="http://{OFF}/pf"><link rel=prerender href="http://{OFF}/pr"><link rel=preload as=fetch href="http://{OFF3}/pl">
<script type=speculationrules>{"prefetch":[{"source":"list","urls":["http://{OFF}/sr-prefetch"]}],"prerender":[{"source":"list","urls":["/prer","http://{OFF3}/sr-prerender"]}]}</script>
<a href="http://{OFF}/hover">x</a>`,
		more: map[string]string{"/prer": `<script>fetch('/w/prerendered', {method: 'POST', body: 'x'}).catch(()=>{}); fetch('http://{OFF}/prer').catch(()=>{});</script>`}},
	{name: "window-open-navigation", page: `<iframe src="http://{OFF}/frame"></iframe><a id=a href="http://{OFF3}/link" target=_blank>x</a>
<script>
try { window.open('http://{OFF}/popup'); } catch (e) {}
try { window.open('https://{OFF3}/popup', '_blank', 'noopener'); } catch (e) {}
document.getElementById('a').click();
setTimeout(() => { location.href = 'http://{OFF}/away'; }, 300);
</script>`},
	// Reports are batched (they may leave after the render, or not at
	// all): whenever they go, nothing may arrive.
	{name: "reporting", page: `<iframe src="/csp"></iframe>`},
	{name: "redirect-off-list", page: `<img src="/redirect"><script>fetch('/redirect', {method: 'POST', body: 'x'}).catch(()=>{});</script>`},
}

// fill puts the off-list addresses into a route's text.
func fill(s string, a, b *faultnet.OffList) string {
	return strings.NewReplacer("{OFF3}", b.HostPort(), "{OFFIP}", a.IP, "{OFFPORT}", fmt.Sprint(a.Port), "{OFF}", a.HostPort()).Replace(s)
}

// TestOneRouteOut: every way out a page script has (one route per
// subtest, and all of them on one page) reaches nothing off the allowlist,
// TCP or UDP, and at observe no write reaches the platform: each is held
// and recorded with its method and URL.
func TestOneRouteOut(t *testing.T) {
	a, c := faultnet.ListenOffList(t, "127.0.0.2"), faultnet.ListenOffList(t, "127.0.0.3")
	p := &platform{pages: map[string]string{}}
	var all strings.Builder
	for _, r := range routes {
		path := "/" + r.name
		p.pages[path] = "<!doctype html><html><body>" + fill(r.page, a, c) + "</body></html>"
		for k, v := range r.more {
			p.pages[k] = fill(v, a, c)
		}
		if r.name != "window-open-navigation" { // it leaves the page
			all.WriteString(fill(r.page, a, c))
		}
	}
	p.pages["/start"] = "<!doctype html><p>start</p>"
	p.pages["/all"] = "<!doctype html><html><body>" + all.String() + "</body></html>"
	log := &writeLog{}
	log.readOnly.Store(true)
	// wanted: the writes a page must have held, each one (by it or an
	// earlier page: a service worker installs once).
	wanted := func(origin, page string) []string {
		var out []string
		for _, r := range routes {
			if r.name == page || page == "all" {
				for _, w := range r.want {
					method, path, _ := strings.Cut(w, " ")
					out = append(out, method+" "+origin+path)
				}
			}
		}
		if page == "all" {
			ws := "ws" + strings.TrimPrefix(origin, "http")
			out = append(out, "POST "+origin+"/w/fetch-POST", "DELETE "+origin+"/w/fetch-DELETE", "POST "+origin+"/w/beacon", "POST "+origin+"/w/xhr",
				"WEBSOCKET "+ws+"/w/ws", "POST "+origin+"/w/sw-install", "POST "+origin+"/w/worker", "WEBSOCKET "+ws+"/w/worker-ws")
		}
		return out
	}
	mux := http.NewServeMux()
	mux.Handle("/", p)
	var gaveUp atomic.Value // why /leave-when-held let the top form go early
	// The form-post page asks before its top form leaves: answered once
	// the page's other wanted writes are held (or 6 s), the body open until
	// the top form's write is held again (or 3 s), so the render does not
	// settle in between.
	mux.HandleFunc("/leave-when-held/{page}", func(w http.ResponseWriter, r *http.Request) {
		origin := "http://" + r.Host
		if r.TLS != nil {
			origin = "https://" + r.Host
		}
		top := "POST " + origin + "/w/form-top"
		count := func() int {
			_, held := log.lists()
			return len(slices.DeleteFunc(held, func(h string) bool { return h != top }))
		}
		before := count()
		others := slices.DeleteFunc(wanted(origin, r.PathValue("page")), func(h string) bool { return h == top })
		if missing := waitHeld(log, 0, others, 6*time.Second); len(missing) > 0 {
			gaveUp.Store(fmt.Sprintf("/leave-when-held/%s gave up after 6s: the top form left with %q not tried", r.PathValue("page"), missing))
		}
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		waitFor(3*time.Second, func() bool { return count() > before })
	})
	// The browser's own reports (CSP, the Reporting API) are POSTs too.
	mux.HandleFunc("/csp", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", "img-src 'none'; report-uri /w/csp-report; report-to r")
		w.Header().Set("Reporting-Endpoints", `r="/w/reporting-api"`)
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<img src="/x.png"><img src="http://`+a.HostPort()+`/y.png">`)
	})
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://"+a.HostPort()+"/redirected", http.StatusTemporaryRedirect)
	})
	s := serve(t, mux)
	// The same site over TLS: the proxy reads inside the tunnel.
	ts := httptest.NewTLSServer(mux)
	t.Cleanup(ts.Close)
	roots := x509.NewCertPool()
	roots.AddCert(ts.Certificate())
	// A page's budget is long enough for /all on a loaded machine (its
	// form waits for the page's other writes); pages settle long before.
	b := newBrowser(t, Config{Allow: allowOnly(s.URL, ts.URL), RootCAs: roots, PageTimeout: 10 * time.Second, Quiet: 300 * time.Millisecond, Write: log.write})
	// check renders page and audits it. A page that writes is waited for
	// until its writes are held (and every one of want, held by it or an
	// earlier page, when given): workers,
	// service workers and their sockets start after the render settles,
	// later still on a loaded machine.
	check := func(t *testing.T, page string, writes bool, want ...string) {
		t.Helper()
		_, heldBefore := log.lists()
		// Every socket of the browser's, while the page renders: TCP to
		// the proxy only, no UDP connected anywhere (whatever the
		// destination), none on mDNS (socket.leaks).
		stop, audited := make(chan struct{}), make(chan []string)
		go func() {
			bad := map[string]bool{}
			for {
				for _, so := range b.sockets() {
					if so.leaks(b.proxy.addr()) {
						bad[so.String()] = true
					}
				}
				select {
				case <-stop:
					var out []string
					for k := range bad {
						out = append(out, k)
					}
					audited <- out
					return
				case <-time.After(25 * time.Millisecond):
				}
			}
		}()
		r := render(t, b, page)
		if writes {
			waitHeld(log, len(heldBefore), want, 30*time.Second)
		}
		// Absence cannot be polled for: give late traffic (a service
		// worker, ICE gathering, a keepalive) the time it takes.
		time.Sleep(700 * time.Millisecond)
		close(stop)
		if bad := <-audited; len(bad) > 0 {
			t.Errorf("browser sockets that do not go to the proxy: %q", bad)
		}
		for _, o := range []*faultnet.OffList{a, c} {
			if got := o.Take(); len(got) > 0 {
				t.Errorf("%d arrivals at %s, off the allowlist: %v", len(got), o.IP, got)
			}
		}
		if got := p.arrived(); len(got) > 0 {
			t.Errorf("%d writes reached the platform at observe: %v", len(got), got)
		}
		sent, held := log.lists()
		if len(sent) > 0 {
			t.Errorf("writes sent at observe: %v", sent)
		}
		if writes && len(held) == len(heldBefore) {
			t.Errorf("the page's writes were not recorded as held")
		}
		for _, w := range want {
			if !slices.Contains(held, w) {
				t.Errorf("held writes %q lack %q (%v; the render: %q)\nasked, in order:\n%s\nthe page's writes as the browser saw them:\n%s",
					held, w, gaveUp.Load(), r.Notes, log.decisions(), writeRequests(r))
			}
		}
	}
	// The browser starts before the socket audit reads its processes.
	render(t, b, s.URL+"/start")
	for _, r := range routes {
		t.Run(r.name, func(t *testing.T) { check(t, s.URL+"/"+r.name, r.writes, wanted(s.URL, r.name)...) })
	}
	t.Run("all", func(t *testing.T) { check(t, s.URL+"/all", true, wanted(s.URL, "all")...) })
	for _, name := range []string{"all", "workers", "service-worker", "websocket"} {
		t.Run("https-"+name, func(t *testing.T) { check(t, ts.URL+"/"+name, true) })
	}
}

// waitHeld waits until log holds more than before writes and every one
// of want (held by this page or an earlier one: a service worker installs
// once, and a form that navigates may beat its page's frame), or until
// timeout: the condition the test asserts, so a slow machine costs time,
// not a failure.
// It returns the writes of want not held when it gave up.
func waitHeld(log *writeLog, before int, want []string, timeout time.Duration) (missing []string) {
	for deadline := time.Now().Add(timeout); ; time.Sleep(25 * time.Millisecond) {
		_, held := log.lists()
		missing = slices.DeleteFunc(slices.Clone(want), func(w string) bool { return slices.Contains(held, w) })
		if len(held) > before && len(missing) == 0 || !time.Now().Before(deadline) {
			return missing
		}
	}
}

// waitFor polls cond until it holds or timeout passes.
func waitFor(timeout time.Duration, cond func() bool) {
	for deadline := time.Now().Add(timeout); !cond() && time.Now().Before(deadline); {
		time.Sleep(25 * time.Millisecond)
	}
}

// netLog records what befell the connections between the proxy and the
// site: the proxy's dials and its read and write errors on them (its
// Config.Dial), and the site's side (its connection states and the errors
// its server logs). A write that was sent and never arrived died here.
type netLog struct {
	mu    sync.Mutex
	start time.Time
	lines []string
	n     int
}

func newNetLog() *netLog { return &netLog{start: time.Now()} }

func (l *netLog) add(format string, a ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf("+%.3fs ", time.Since(l.start).Seconds())+fmt.Sprintf(format, a...))
}

func (l *netLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// dial is a Config.Dial that records each connection's errors.
func (l *netLog) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		l.add("proxy dial %s: %v", addr, err)
		return nil, err
	}
	l.mu.Lock()
	l.n++
	id := l.n
	l.mu.Unlock()
	l.add("proxy conn %d %s dialled %s", id, c.LocalAddr(), addr)
	return &loggedConn{Conn: c, log: l, id: id}, nil
}

// watch records the site's connection states and its server's errors.
func (l *netLog) watch(s *httptest.Server) {
	s.Config.ConnState = func(c net.Conn, st http.ConnState) {
		if st == http.StateNew || st == http.StateClosed || st == http.StateHijacked {
			l.add("site conn %s %s", c.RemoteAddr(), st)
		}
	}
	s.Config.ErrorLog = stdlog.New(logWriter{l}, "site: ", 0)
}

type logWriter struct{ l *netLog }

func (w logWriter) Write(b []byte) (int, error) {
	w.l.add("%s", strings.TrimSpace(string(b)))
	return len(b), nil
}

type loggedConn struct {
	net.Conn
	log *netLog
	id  int
}

func (c *loggedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if err != nil {
		c.log.add("proxy conn %d read: %v", c.id, err)
	}
	return n, err
}

func (c *loggedConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	if err != nil {
		c.log.add("proxy conn %d write: %v", c.id, err)
	}
	return n, err
}

func (c *loggedConn) Close() error {
	c.log.add("proxy conn %d closed by the proxy", c.id)
	return c.Conn.Close()
}

// writeRequests are the page's requests to /w/ paths as the browser saw
// them: method, URL, status or error.
func writeRequests(r crawl.Rendered) string {
	var out []string
	for _, q := range r.Requests {
		if strings.Contains(q.URL, "/w/") {
			out = append(out, fmt.Sprintf("%s %s %s: status %d failed %q blocked %v", q.Type, q.Method, q.URL, q.Status, q.Failed, q.Blocked))
		}
	}
	return strings.Join(out, "\n")
}

// TestPageWritesSpendTheBudget: at exercise a page's writes are sent only
// as Config.Write allows, each asked once (the tab's grant spares it a
// second ask at the proxy, over TLS too), and each that reaches the
// platform was allowed; past the budget the rest are held. The decision is
// taken at every request: a dial lowered mid-page holds the next write.
func TestPageWritesSpendTheBudget(t *testing.T) {
	p := &platform{pages: map[string]string{
		"/seq": `<!doctype html><script>
fetch('/hold').then(() => { location.href = '/done'; }).catch(()=>{});
(async () => {
  for (const m of ['POST', 'PUT', 'DELETE', 'PATCH']) { try { await fetch('/w/' + m, {method: m, body: m === 'DELETE' ? undefined : 'x'}); } catch (e) {} }
  navigator.sendBeacon('/w/beacon', 'x');
  try { new WebSocket(location.origin.replace('http', 'ws') + '/w/ws'); } catch (e) {}
  new Worker('/w.js');
})();
</script>`,
		"/w.js": `fetch('/w/worker', {method: 'POST', body: 'x'}).catch(()=>{});`,
	}}
	var cur atomic.Pointer[writeLog]
	mux := http.NewServeMux()
	mux.Handle("/", p)
	// The page keeps /hold open until its seven writes are tried (or 25 s),
	// so the render does not settle in a gap between two of them: a loaded
	// machine paused longer than Quiet after a response, before the next
	// write, and the tab closed with four writes never tried. Then it
	// leaves for /done, which settles: the worker's script stays in flight
	// for the tab (its end is the worker's to report), so the page itself
	// would take the whole page budget, and any budget is a race on a
	// starved machine.
	mux.HandleFunc("/hold", func(w http.ResponseWriter, r *http.Request) {
		waitFor(25*time.Second, func() bool { sent, held := cur.Load().lists(); return len(sent)+len(held) >= 7 })
	})
	nl := newNetLog()
	s := httptest.NewUnstartedServer(mux)
	nl.watch(s)
	s.Start()
	t.Cleanup(s.Close)
	ts := httptest.NewUnstartedServer(mux)
	nl.watch(ts)
	ts.StartTLS()
	t.Cleanup(ts.Close)
	roots := x509.NewCertPool()
	roots.AddCert(ts.Certificate())
	for _, tc := range []struct {
		name, url string
	}{{"http", s.URL}, {"https", ts.URL}} {
		t.Run(tc.name, func(t *testing.T) {
			p.mu.Lock()
			p.writes = nil
			p.mu.Unlock()
			log := &writeLog{budget: 3}
			cur.Store(log)
			b := newBrowser(t, Config{Allow: allowOnly(s.URL, ts.URL), RootCAs: roots, PageTimeout: 30 * time.Second, Quiet: 300 * time.Millisecond,
				Dial: nl.dial, Write: func(w Write) error { return cur.Load().write(w) }})
			r := render(t, b, tc.url+"/seq")
			// The page's seven writes (four fetches, a beacon, a
			// WebSocket, a worker's fetch) are tried, then the sent ones
			// arrive: waited for, not timed.
			waitFor(30*time.Second, func() bool { sent, held := log.lists(); return len(sent)+len(held) >= 7 })
			sent, held := log.lists()
			waitFor(20*time.Second, func() bool { return len(p.arrived()) >= len(sent) })
			got := p.arrived()
			if len(sent) != 3 || len(got) != 3 {
				t.Fatalf("sent %q, arrived %q: want exactly the budget of 3, each asked once (held %q; the proxy refused %q; the render: %q)\nasked, in order:\n%s\nthe page's writes as the browser saw them:\n%s\nthe connections to the site:\n%s",
					sent, got, held, b.Refused(), r.Notes, log.decisions(), writeRequests(r), nl)
			}
			for _, a := range got {
				method, path, _ := strings.Cut(a, " ")
				if !slices.Contains(sent, method+" "+tc.url+path) {
					t.Errorf("%s reached the platform without being allowed (sent %q)", a, sent)
				}
			}
			if len(held) < 4 {
				t.Errorf("held %q: the writes past the budget", held)
			}
			// The dial goes down between two writes of the same page.
			log2 := &writeLog{budget: 100, lowerAfterOne: true}
			cur.Store(log2)
			p.mu.Lock()
			p.writes = nil
			p.mu.Unlock()
			r = render(t, b, tc.url+"/seq")
			waitFor(30*time.Second, func() bool {
				sent, held := log2.lists()
				return len(sent)+len(held) >= 6 && len(p.arrived()) >= len(sent)
			})
			time.Sleep(300 * time.Millisecond) // a write that should not arrive, late
			if sent, held := log2.lists(); len(sent) != 1 || len(held) < 5 || len(p.arrived()) != 1 {
				t.Errorf("after the dial went down: sent %q held %q arrived %q\nasked, in order:\n%s\nthe page's writes as the browser saw them:\n%s\nthe connections to the site:\n%s",
					sent, held, p.arrived(), log2.decisions(), writeRequests(r), nl)
			}
		})
	}
}

// TestNoBackgroundTraffic: Chromium's own traffic (component updates,
// network time, account checks, safe browsing, metrics, variations) has
// one route out, the proxy, which refuses it: while pages render and sit,
// no process of the browser holds a TCP connection to anything but the
// proxy, nor a UDP socket connected anywhere or on mDNS (DNS, QUIC,
// WebRTC).
func TestNoBackgroundTraffic(t *testing.T) {
	s := serve(t, htmlPage(`<!doctype html><p>quiet</p>`))
	b := newBrowser(t, Config{Allow: allowOnly(s.URL), Quiet: 200 * time.Millisecond})
	render(t, b, s.URL+"/")
	proxyAddr := b.proxy.addr()
	deadline := time.Now().Add(4 * time.Second) // background fetches start seconds after launch
	seen, toProxy := map[string]bool{}, 0
	for time.Now().Before(deadline) {
		for _, so := range b.sockets() {
			switch {
			case so.proto == "tcp" && so.remote == proxyAddr:
				toProxy++
			case so.leaks(proxyAddr):
				seen[so.String()] = true
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(seen) > 0 {
		t.Errorf("Chromium sockets that are not the proxy's: %v", seen)
	}
	if toProxy == 0 {
		t.Fatal("no socket of the browser's to the proxy seen: the audit sees nothing, the test proves nothing")
	}
	for _, r := range b.Refused() {
		if strings.Contains(r, s.URL) {
			t.Errorf("the page's own request was refused: %s", r)
		}
	}
	t.Logf("refused by the proxy, Chromium's own: %q", b.Refused())
}

type socket struct {
	proto, local, remote string
	listening            bool
}

func (s socket) String() string { return s.proto + " " + s.local + " -> " + s.remote }

// leaks reports whether a browser socket is a route out other than the
// proxy: a TCP connection anywhere else, a UDP socket connected to a peer,
// or one on a multicast group or the mDNS port. (An unconnected UDP socket
// on a wildcard address and an ephemeral port is how WebRTC learns the
// default route: it connects to a public address, which sends nothing and
// fails offline. What it could send by sendto, the listeners would see.)
func (s socket) leaks(proxy string) bool {
	if s.proto == "tcp" {
		return !s.listening && s.remote != proxy
	}
	host, port, _ := net.SplitHostPort(s.local)
	ip := net.ParseIP(host)
	rhost, _, _ := net.SplitHostPort(s.remote)
	rip := net.ParseIP(rhost)
	return rip == nil || !rip.IsUnspecified() || ip == nil || ip.IsMulticast() || port == "5353" || !ip.IsUnspecified() && !ip.IsLoopback()
}

// sockets lists the inet sockets the browser's processes hold (from
// /proc/<pid>/fd and /proc/<pid>/net/{tcp,tcp6,udp,udp6}).
func (b *Browser) sockets() []socket {
	var out []socket
	for _, pid := range b.processes() {
		inodes := map[string]bool{}
		dir := fmt.Sprintf("/proc/%d/fd", pid)
		fds, _ := os.ReadDir(dir)
		for _, fd := range fds {
			l, err := os.Readlink(dir + "/" + fd.Name())
			if err == nil && strings.HasPrefix(l, "socket:[") {
				inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
			}
		}
		for _, proto := range []string{"tcp", "tcp6", "udp", "udp6"} {
			raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, proto))
			if err != nil {
				continue
			}
			for _, line := range strings.Split(string(raw), "\n")[1:] {
				f := strings.Fields(line)
				if len(f) < 10 || !inodes[f[9]] {
					continue
				}
				out = append(out, socket{proto: strings.TrimSuffix(proto, "6"), local: procAddr(f[1]), remote: procAddr(f[2]), listening: f[3] == "0A"})
			}
		}
	}
	return out
}

// procAddr decodes a /proc/net address (hex IP in host order, hex port).
func procAddr(s string) string {
	ip, port, ok := strings.Cut(s, ":")
	if !ok {
		return s
	}
	p, _ := strconv.ParseUint(port, 16, 16)
	raw, err := hex.DecodeString(ip)
	if err != nil {
		return s
	}
	for i := 0; i+4 <= len(raw); i += 4 { // each 32-bit word is little-endian
		raw[i], raw[i+1], raw[i+2], raw[i+3] = raw[i+3], raw[i+2], raw[i+1], raw[i]
	}
	return net.JoinHostPort(net.IP(raw).String(), strconv.FormatUint(p, 10))
}
