package browser

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/qafleet/fleetd/crawl"
	"github.com/qafleet/fleetd/fixtures/spa"
	"github.com/qafleet/fleetd/fixtures/twin"
)

// mustFind returns Chromium's path. Without one the test skips, except in
// CI (CI set), where it fails: .ci/run installs Debian's chromium package.
func mustFind(t testing.TB) string {
	t.Helper()
	p, err := Find()
	if err == nil {
		return p
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%v: .ci/run installs Debian's chromium package for the rendering crawl's tests", err)
	}
	t.Skipf("%v: apt-get install -y chromium to run the rendering crawl's tests", err)
	return ""
}

// allowOnly allows exactly the host:ports of the given servers.
func allowOnly(urls ...string) func(string) error {
	hosts := map[string]bool{}
	for _, u := range urls {
		pu, _ := url.Parse(u)
		hosts[pu.Host] = true
	}
	return func(raw string) error {
		u, err := url.Parse(raw)
		if err != nil {
			return err
		}
		if (u.Scheme != "http" && u.Scheme != "https") || !hosts[u.Host] {
			return fmt.Errorf("not on the fetch allowlist: %s", u.Host)
		}
		return nil
	}
}

// newBrowser starts a Browser for the test and closes it at the end,
// failing if any of its processes is left.
func newBrowser(t *testing.T, cfg Config) *Browser {
	t.Helper()
	cfg.Exec = mustFind(t)
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Error(err)
		}
		if left := b.processes(); len(left) > 0 {
			t.Errorf("chromium processes outlive Close: %v", left)
		}
	})
	return b
}

func serve(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s
}

func htmlPage(html string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, html)
	}
}

func render(t *testing.T, b *Browser, u string) crawl.Rendered {
	t.Helper()
	r, err := b.Render(context.Background(), u)
	if err != nil {
		t.Fatalf("render %s: %v", u, err)
	}
	return r
}

func TestRenderClientSide(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/", htmlPage(`<!doctype html><html><head><title>shell</title></head><body><div id=app></div><script src="/app.js"></script></body></html>`))
	mux.HandleFunc("/app.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		fmt.Fprint(w, `fetch('/api/menu').then(r => r.json()).then(m => {
  const app = document.getElementById('app');
  for (const it of m.items) { const a = document.createElement('a'); a.href = it.href; a.textContent = it.title; app.appendChild(a); }
  const f = document.createElement('form'); f.method = 'post'; f.action = m.form; f.innerHTML = '<input name=q>'; app.appendChild(f);
  const x = new XMLHttpRequest(); x.open('GET', '/api/count'); x.send();
});`)
	})
	mux.HandleFunc("/api/menu", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"items":[{"href":"/docs/a","title":"A"},{"href":"/docs/b","title":"B"}],"form":"/api/search"}`)
	})
	mux.HandleFunc("/api/count", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{"n":2}`) })
	s := serve(t, mux)
	var paced atomic.Int32
	b := newBrowser(t, Config{Allow: allowOnly(s.URL), Pace: func(context.Context, string) error { paced.Add(1); return nil }})
	r := render(t, b, s.URL+"/")
	if !r.Settled {
		t.Errorf("not settled: %v", r.Notes)
	}
	if r.Status != 200 || r.FinalURL != s.URL+"/" {
		t.Errorf("status %d final %q", r.Status, r.FinalURL)
	}
	links := crawl.Links(r.FinalURL, "text/html", r.HTML)
	var got []string
	for _, l := range links {
		got = append(got, l.Method+" "+strings.TrimPrefix(l.URL, s.URL))
	}
	for _, want := range []string{"GET /docs/a", "GET /docs/b", "POST /api/search"} {
		if !slices.Contains(got, want) {
			t.Errorf("rendered DOM's links lack %s: %v", want, got)
		}
	}
	types := map[string]string{}
	for _, rq := range r.Requests {
		types[strings.TrimPrefix(rq.URL, s.URL)] = rq.Type
	}
	if types["/api/menu"] != "fetch" || types["/api/count"] != "xhr" || types["/app.js"] != "script" {
		t.Errorf("requests: %v", types)
	}
	if int(paced.Load()) < 4 {
		t.Errorf("paced %d requests, want every one of the 4", paced.Load())
	}
	if r.Elapsed <= 0 || r.Elapsed > DefaultPageTimeout {
		t.Errorf("elapsed %s", r.Elapsed)
	}
}

// TestNoRequestLeavesAllowlist: a page on an allowed host asks another
// host (a loopback server not on the allowlist) for everything a page can
// ask for; that server must see nothing.
func TestNoRequestLeavesAllowlist(t *testing.T) {
	var foreign atomic.Int32
	var seen sync.Map
	other := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		foreign.Add(1)
		seen.Store(r.URL.String(), true)
		fmt.Fprint(w, "leaked")
	}))
	// A raw TCP listener counts WebSocket and CONNECT attempts too.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			foreign.Add(1)
			c.Close()
		}
	}()
	o, raw := other.URL, "127.0.0.1:"+fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)
	mux := http.NewServeMux()
	mux.HandleFunc("/", htmlPage(`<!doctype html><html><head>
<link rel=stylesheet href="`+o+`/x.css"><link rel=prefetch href="`+o+`/pre"><link rel=preconnect href="`+o+`">
<script src="`+o+`/x.js"></script></head><body>
<img src="`+o+`/x.png"><iframe src="`+o+`/frame"></iframe>
<script>
fetch('`+o+`/api').catch(()=>{});
const x = new XMLHttpRequest(); x.open('GET', '`+o+`/xhr'); x.send();
try { new WebSocket('ws://`+raw+`/ws'); } catch (e) {}
try { new EventSource('`+o+`/events'); } catch (e) {}
navigator.sendBeacon && navigator.sendBeacon('`+o+`/beacon', 'x');
new Worker(URL.createObjectURL(new Blob(["fetch('`+o+`/worker').catch(()=>{})"])));
const i = new Image(); i.src = 'http://`+raw+`/img';
</script></body></html>`))
	mux.HandleFunc("/away", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, o+"/landing", http.StatusFound) })
	s := serve(t, mux)
	b := newBrowser(t, Config{Allow: allowOnly(s.URL), PageTimeout: 6 * time.Second})
	r := render(t, b, s.URL+"/")
	blocked := 0
	for _, rq := range r.Requests {
		if rq.Blocked {
			blocked++
		}
	}
	if blocked < 5 {
		t.Errorf("%d requests marked blocked, want the page's foreign ones: %+v", blocked, r.Requests)
	}
	if !strings.Contains(strings.Join(r.Notes, " "), "requests refused") {
		t.Errorf("no note about the refused requests: %v", r.Notes)
	}
	if refused := b.Refused(); !slices.Contains(refused, raw) {
		t.Errorf("the proxy did not refuse the WebSocket's host %s: %v", raw, refused)
	}
	// A redirect off the allowlist: the navigation is refused, with a note.
	away := render(t, b, s.URL+"/away")
	if !strings.Contains(strings.Join(away.Notes, " "), "navigation failed") {
		t.Errorf("redirect off the allowlist: notes %v", away.Notes)
	}
	// Off the allowlist altogether: nothing is opened.
	if _, err := b.Render(context.Background(), o+"/"); err == nil {
		t.Error("rendering a URL off the allowlist did not fail")
	}
	time.Sleep(300 * time.Millisecond) // anything late would arrive now
	if n := foreign.Load(); n > 0 {
		var urls []string
		seen.Range(func(k, _ any) bool { urls = append(urls, k.(string)); return true })
		t.Fatalf("%d requests reached a host off the allowlist: %v", n, urls)
	}
}

func TestBrowserReports(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/{$}", htmlPage(`<!doctype html><html><body><script src="/missing.js"></script>
<script>console.error('boom: state missing'); window.addEventListener('load', () => { null.x; });</script></body></html>`))
	mux.HandleFunc("/csp", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", "script-src 'self'")
		htmlPage(`<!doctype html><html><body><script>document.title='inline ran'</script></body></html>`)(w, r)
	})
	mux.HandleFunc("/dialog", htmlPage(`<!doctype html><html><body><script>alert('qa1234567890')</script></body></html>`))
	s := serve(t, mux)
	b := newBrowser(t, Config{Allow: allowOnly(s.URL)})
	r := render(t, b, s.URL+"/")
	if len(r.Exceptions) != 1 || !strings.Contains(r.Exceptions[0], "TypeError: Cannot read properties of null") {
		t.Errorf("exceptions %q", r.Exceptions)
	}
	if !slices.ContainsFunc(r.ConsoleErrors, func(s string) bool { return strings.Contains(s, "boom: state missing") }) {
		t.Errorf("console errors %q", r.ConsoleErrors)
	}
	if !slices.ContainsFunc(r.Requests, func(rq crawl.Request) bool { return strings.HasSuffix(rq.URL, "/missing.js") && rq.Status == 404 }) {
		t.Errorf("the missing script is not a 404 request: %+v", r.Requests)
	}
	c := render(t, b, s.URL+"/csp")
	if len(c.CSP) != 1 || !strings.Contains(c.CSP[0], "script-src") || strings.Contains(c.HTML, "<title>inline ran") {
		t.Errorf("CSP %q", c.CSP)
	}
	d := render(t, b, s.URL+"/dialog")
	if !slices.Contains(d.Dialogs, "qa1234567890") || !d.Settled {
		t.Errorf("dialogs %q settled %v notes %v", d.Dialogs, d.Settled, d.Notes)
	}
}

// TestStarvedPageIsNotQuiet: a page that changes its DOM every 40 ms,
// its renderer starved by the machine (stopped for 800 ms at a time, as a
// loaded CI host starves it), sends no report for longer than
// Config.Quiet between its changes. It kept changing all along, so it does
// not settle: one turn of its event loop (Browser.stillQuiet) runs its
// overdue changes first. It used to settle in the first gap (ci32,
// TestBadPages: "/restless settled", page 1.589s, on a loaded host).
func TestStarvedPageIsNotQuiet(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/", htmlPage(`<!doctype html><html><body><div id=t></div><script>setInterval(() => { document.getElementById('t').textContent = Date.now(); }, 40);</script></body></html>`))
	mux.HandleFunc("/ok", htmlPage(`<!doctype html><html><body><p>fine</p></body></html>`))
	s := serve(t, mux)
	const budget = 5 * time.Second
	b := newBrowser(t, Config{Allow: allowOnly(s.URL), PageTimeout: budget})
	render(t, b, s.URL+"/ok") // the browser's start is no page's budget
	renderers := func() []int {
		var out []int
		for _, p := range b.processes() {
			if cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p)); bytes.Contains(cmd, []byte("--type=renderer")) {
				out = append(out, p)
			}
		}
		return out
	}
	signal := func(sig syscall.Signal) {
		for _, p := range renderers() {
			syscall.Kill(p, sig)
		}
	}
	done := make(chan struct{})
	starved := make(chan int, 1)
	go func() {
		defer signal(syscall.SIGCONT)
		n := 0
		defer func() { starved <- n }()
		time.Sleep(300 * time.Millisecond) // the page loads and starts changing
		for {
			signal(syscall.SIGSTOP)
			n++
			select {
			case <-done:
				return
			case <-time.After(800 * time.Millisecond):
			}
			signal(syscall.SIGCONT)
			select {
			case <-done:
				return
			case <-time.After(60 * time.Millisecond):
			}
		}
	}()
	r := render(t, b, s.URL+"/")
	close(done)
	stops := <-starved
	if stops < 2 {
		t.Fatalf("the renderer was stopped %d times during the render: the test shows nothing", stops)
	}
	if r.Settled {
		t.Errorf("a starved page that kept changing its DOM settled after %s (budget %s, %d stops); notes %q", r.Elapsed.Round(time.Millisecond), budget, stops, r.Notes)
	}
	if ok := render(t, b, s.URL+"/ok"); !ok.Settled {
		t.Errorf("a quiet page did not settle after %s; notes %q", ok.Elapsed.Round(time.Millisecond), ok.Notes)
	}
}

// TestPageThatReplacesItsGlobals: a page's script replaces setTimeout and
// JSON.stringify (as polyfills and old libraries do). The page is quiet:
// it settles, and its DOM is read. fleetd's own evaluations run in its
// isolated world, whose globals the page cannot reach; in the page's own
// world the settle's timer never fired and the page ran to its budget
// ("its main thread stopped answering"), and the DOM read got "x".
func TestPageThatReplacesItsGlobals(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/", htmlPage(`<!doctype html><html><body><p id=t>replaced</p><script>window.setTimeout = () => 0; JSON.stringify = () => "x";</script></body></html>`))
	s := serve(t, mux)
	const budget = 5 * time.Second
	b := newBrowser(t, Config{Allow: allowOnly(s.URL), PageTimeout: budget})
	for _, path := range []string{"/", "/?again"} { // a second document: its own world again
		r := render(t, b, s.URL+path)
		if !r.Settled {
			t.Errorf("%s: a quiet page that replaced its setTimeout did not settle (%s, budget %s); notes %q", path, r.Elapsed.Round(time.Millisecond), budget, r.Notes)
		}
		if !strings.Contains(r.HTML, `<p id="t">replaced</p>`) {
			t.Errorf("%s: the DOM read is not the page's: %q; notes %q", path, r.HTML[:min(200, len(r.HTML))], r.Notes)
		}
	}
}

// TestBadPages: pages that never settle, loop, or open dialog after dialog
// end at the page budget with a note, and the next page still renders.
func TestBadPages(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/restless", htmlPage(`<!doctype html><html><body><div id=t></div><script>setInterval(() => { document.getElementById('t').textContent = Date.now(); }, 40);</script></body></html>`))
	mux.HandleFunc("/loop", htmlPage(`<!doctype html><html><body><p>before</p><script>while (true) {}</script></body></html>`))
	mux.HandleFunc("/late-loop", htmlPage(`<!doctype html><html><body><p>x</p><script>setTimeout(() => { for (;;) {} }, 50);</script></body></html>`))
	mux.HandleFunc("/dialogs", htmlPage(`<!doctype html><html><body><script>for (let i = 0; ; i++) alert('again ' + i);</script></body></html>`))
	mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(30 * time.Second):
		}
	})
	mux.HandleFunc("/ok", htmlPage(`<!doctype html><html><body><a href="/fine">fine</a></body></html>`))
	s := serve(t, mux)
	budget := 3 * time.Second
	b := newBrowser(t, Config{Allow: allowOnly(s.URL), PageTimeout: budget})
	render(t, b, s.URL+"/ok") // the browser's (jailed) start is no page's budget
	for _, path := range []string{"/restless", "/loop", "/late-loop", "/dialogs", "/hang"} {
		start := time.Now()
		r, err := b.Render(context.Background(), s.URL+path)
		took := time.Since(start)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		// The page's own time (Elapsed, from the navigation) is what
		// its budget bounds: the budget, then at most the DOM read's
		// floor and a loaded machine's wake-ups. The whole render adds
		// the tab's opening (bounded apart, tabBudget): no bad page holds
		// the crawl (/hang would hold it 30s).
		if r.Elapsed > budget+3*time.Second {
			t.Errorf("%s: the page took %s, over its %s budget", path, r.Elapsed, budget)
		}
		if took > budget+tabBudget+5*time.Second {
			t.Errorf("%s: the render took %s, over its %s budget and the tab's %s", path, took, budget, tabBudget)
		}
		if path != "/late-loop" && r.Settled {
			t.Errorf("%s settled", path)
		}
		if len(r.Notes) == 0 {
			t.Errorf("%s: no note", path)
		}
		t.Logf("%s: %s (page %s) settled=%v notes=%q dialogs=%d", path, took.Round(time.Millisecond), r.Elapsed.Round(time.Millisecond), r.Settled, r.Notes, len(r.Dialogs))
	}
	ok := render(t, b, s.URL+"/ok")
	if !ok.Settled || !strings.Contains(ok.HTML, `href="/fine"`) {
		t.Errorf("the page after the bad ones: settled=%v notes=%v", ok.Settled, ok.Notes)
	}
}

// TestNoProcessOutlivesClose: Close ends the browser and every child, also
// while a page's script loops, and a Render after Close fails.
func TestNoProcessOutlivesClose(t *testing.T) {
	s := serve(t, htmlPage(`<!doctype html><html><body><script>setTimeout(() => { for (;;) {} }, 10)</script></body></html>`))
	b, err := New(Config{Exec: mustFind(t), Allow: allowOnly(s.URL), PageTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if b.PID() != 0 {
		t.Fatal("the browser started before the first render")
	}
	render(t, b, s.URL+"/")
	pid := b.PID()
	procs := b.processes()
	if pid == 0 || len(procs) < 2 {
		t.Fatalf("pid %d, processes %v: want the browser and its children", pid, procs)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if left := b.processes(); len(left) > 0 {
		t.Fatalf("processes outlive Close: %v", left)
	}
	for _, p := range procs {
		if err := syscall.Kill(p, 0); !errors.Is(err, syscall.ESRCH) {
			if st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p)); !zombie(st) {
				t.Errorf("process %d still alive after Close (%v)", p, err)
			}
		}
	}
	if _, err := b.Render(context.Background(), s.URL+"/"); !errors.Is(err, ErrClosed) {
		t.Errorf("render after close: %v", err)
	}
}

// TestBrowserThatWillNotStart: a binary that is not a browser fails the
// first render with an error naming it, and later renders at once.
func TestBrowserThatWillNotStart(t *testing.T) {
	fake := t.TempDir() + "/chromium"
	if err := os.WriteFile(fake, []byte("#!/bin/sh\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := serve(t, htmlPage("<p>x</p>"))
	b, err := New(Config{Exec: fake, Allow: allowOnly(s.URL)})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	_, err = b.Render(context.Background(), s.URL+"/")
	if err == nil || !strings.Contains(err.Error(), fake) {
		t.Fatalf("render with a broken browser: %v", err)
	}
	start := time.Now()
	if _, err2 := b.Render(context.Background(), s.URL+"/"); err2 == nil || err2.Error() != err.Error() || time.Since(start) > time.Second {
		t.Errorf("second render: %v after %s", err2, time.Since(start))
	}
}

func TestFind(t *testing.T) {
	t.Setenv("FLEETD_CHROMIUM", t.TempDir())
	if _, err := Find(); err == nil || !strings.Contains(err.Error(), "FLEETD_CHROMIUM") {
		t.Errorf("a directory as FLEETD_CHROMIUM: %v", err)
	}
	t.Setenv("FLEETD_CHROMIUM", "")
	t.Setenv("PATH", t.TempDir())
	if _, err := Find(); !errors.Is(err, ErrNoBrowser) {
		t.Errorf("no browser on PATH: %v", err)
	}
	if _, err := New(Config{}); !errors.Is(err, ErrNoBrowser) {
		t.Errorf("New without a browser: %v", err)
	}
}

// BenchmarkRender measures what the rendering crawl adds per page: one
// Render of a page of fixtures/spa (an empty shell whose script fetches
// JSON and builds the page), against one plain GET of the same URL, the
// text crawl's cost. The browser is started before the timer.
//
//	go test -run XXX -bench Render -benchtime 20x ./browser
func BenchmarkRender(b *testing.B) {
	app, err := spa.Serve(context.Background(), twin.Correct)
	if err != nil {
		b.Fatal(err)
	}
	defer app.Close()
	for _, quiet := range []time.Duration{DefaultQuiet, 200 * time.Millisecond} {
		b.Run("render/quiet="+quiet.String(), func(b *testing.B) {
			br, err := New(Config{Exec: mustFind(b), Allow: allowOnly(app.URL()), Quiet: quiet})
			if err != nil {
				b.Fatal(err)
			}
			defer br.Close()
			if _, err := br.Render(context.Background(), app.URL()+"/"); err != nil {
				b.Fatal(err)
			}
			pages := []string{"/", "/u/ada", "/guide", "/search?q=x", "/stats"}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				r, err := br.Render(context.Background(), app.URL()+pages[i%len(pages)])
				if err != nil || !r.Settled {
					b.Fatalf("%v %v", err, r.Notes)
				}
				i++
			}
		})
	}
	b.Run("get", func(b *testing.B) {
		for b.Loop() {
			resp, err := http.Get(app.URL() + "/u/ada")
			if err != nil {
				b.Fatal(err)
			}
			resp.Body.Close()
		}
	})
}

// TestSubmit: a form is filled and submitted as a user would, under the
// same fences: the page it leads to is reported, a form whose action is
// off the allowlist never reaches its host, and a missing form is a note.
func TestSubmit(t *testing.T) {
	var foreign atomic.Int32
	other := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { foreign.Add(1) }))
	var posted atomic.Value
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", htmlPage(`<!doctype html><html><body>
<form method=post action="/echo"><input name=who required><input type=email name=mail required><input type=hidden name=tok value=t1><textarea name=msg></textarea><button>go</button></form>
<form method=post action="`+other.URL+`/steal"><input name=x><button>go</button></form>
</body></html>`))
	mux.HandleFunc("POST /echo", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		posted.Store(r.PostForm.Encode())
		htmlPage(`<!doctype html><html><body><p>Thanks, `+r.PostForm.Get("who")+`</p></body></html>`)(w, r)
	})
	s := serve(t, mux)
	// A form's POST is a write: this browser may send them (exercise).
	b := newBrowser(t, Config{Allow: allowOnly(s.URL), Write: func(Write) error { return nil }})
	r, err := b.Submit(context.Background(), s.URL+"/", crawl.FormFill{Action: s.URL + "/echo", Method: "POST", Text: `<img src=x onerror=alert('qa0000000001-{field}')>`})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Submitted || r.Status != 200 || !r.Settled || r.FinalURL != s.URL+"/echo" {
		t.Fatalf("submitted %v status %d settled %v final %q notes %v", r.Submitted, r.Status, r.Settled, r.FinalURL, r.Notes)
	}
	if !slices.Contains(r.Dialogs, "qa0000000001-who") {
		t.Errorf("the reflected payload did not run: dialogs %q", r.Dialogs)
	}
	body, _ := posted.Load().(string)
	if !strings.Contains(body, "mail=qa%40example.test") || !strings.Contains(body, "tok=t1") || !strings.Contains(body, "msg=%3Cimg") {
		t.Errorf("posted %q", body)
	}
	off, err := b.Submit(context.Background(), s.URL+"/", crawl.FormFill{Action: other.URL + "/steal", Method: "POST", Text: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if !off.Submitted || !slices.ContainsFunc(off.Requests, func(rq crawl.Request) bool { return rq.Blocked && strings.HasSuffix(rq.URL, "/steal") }) {
		t.Errorf("a form posting off the allowlist: submitted %v requests %+v notes %v", off.Submitted, off.Requests, off.Notes)
	}
	none, err := b.Submit(context.Background(), s.URL+"/", crawl.FormFill{Action: s.URL + "/nowhere", Method: "POST"})
	if err != nil || none.Submitted || !strings.Contains(strings.Join(none.Notes, " "), "not submitted: no form") {
		t.Errorf("a missing form: %v %v %v", err, none.Submitted, none.Notes)
	}
	if n := foreign.Load(); n > 0 {
		t.Errorf("%d requests reached a host off the allowlist", n)
	}
}

// TestDialRefusalIsARefusal: a host the allowlist takes but whose address
// the dialler refuses (Config.Dial, the tools' connect-time checks: a
// wildcard name resolving into the host's own network) is reached by
// nothing the page asks for, and the proxy records the refusals.
func TestDialRefusalIsARefusal(t *testing.T) {
	var reached atomic.Int32
	other := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		fmt.Fprint(w, "reached")
	}))
	ou, _ := url.Parse(other.URL)
	mux := http.NewServeMux()
	mux.HandleFunc("/", htmlPage(`<!doctype html><html><body><img src="`+other.URL+`/x.png">
<script>fetch('`+other.URL+`/api').catch(()=>{});</script></body></html>`))
	s := serve(t, mux)
	var dials atomic.Int32
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		if addr == ou.Host {
			dials.Add(1)
			return nil, fmt.Errorf("%w: %s resolves to a loopback address", ErrRefused, addr)
		}
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}
	b := newBrowser(t, Config{Allow: allowOnly(s.URL, other.URL), Dial: dial, PageTimeout: 6 * time.Second})
	render(t, b, s.URL+"/")
	time.Sleep(300 * time.Millisecond)
	if n := reached.Load(); n > 0 {
		t.Fatalf("%d requests reached a host whose address the dialler refused", n)
	}
	if dials.Load() == 0 {
		t.Fatal("the page's requests to the refused host never reached the dialler: the test proves nothing")
	}
	refused := strings.Join(b.Refused(), " ")
	if !strings.Contains(refused, ou.Host) {
		t.Errorf("the proxy did not record the refusals of %s: %q", ou.Host, refused)
	}
}
