package browser

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/target"
	"github.com/qafleet/fleetd/crawl"
)

// workerSite serves pages that start dedicated workers, and records which
// of the workers' requests arrived. /hang answers when the test ends.
type workerSite struct {
	p       *platform
	mu      sync.Mutex
	arrived []string
	done    chan struct{}
}

func newWorkerSite(t *testing.T, pages map[string]string) (*workerSite, string) {
	t.Helper()
	ws := &workerSite{p: &platform{pages: pages}, done: make(chan struct{})}
	mux := http.NewServeMux()
	mux.Handle("/", ws.p)
	mux.HandleFunc("/data", func(w http.ResponseWriter, r *http.Request) {
		ws.mu.Lock()
		ws.arrived = append(ws.arrived, r.URL.RawQuery)
		ws.mu.Unlock()
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte("data"))
	})
	mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-ws.done:
		}
	})
	s := serve(t, mux)
	t.Cleanup(func() { close(ws.done) }) // before the server closes (cleanups run last first)
	return ws, s.URL
}

func (ws *workerSite) seen() []string {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return slices.Clone(ws.arrived)
}

// notSettledNote returns the render's note saying it ran to its budget.
func notSettledNote(r crawl.Rendered) string {
	for _, n := range r.Notes {
		if strings.Contains(n, "did not settle") {
			return n
		}
	}
	return ""
}

// TestWorkerPagesSettle: a page whose dedicated workers (a script's, a
// blob's, a module's with an import, one a worker started) fetch and
// post back settles once their requests have ended, long before its page
// budget; their requests are the page's (Rendered.Requests). It used to
// run to the budget: the worker's script request never ended for the tab
// ("1 requests were still in flight").
func TestWorkerPagesSettle(t *testing.T) {
	ws, origin := newWorkerSite(t, map[string]string{
		"/": `<!doctype html><html><body><p id=out>waiting</p><script>
const w = new Worker('/w.js');
w.onmessage = e => { document.getElementById('out').textContent = e.data; };
new Worker(URL.createObjectURL(new Blob(["fetch('" + location.origin + "/data?blob').catch(() => {});"])));
new Worker('/m.js', {type: 'module'});
</script></body></html>`,
		"/w.js":      `fetch('/data?classic').then(r => r.text()).then(t => { postMessage('the worker read ' + t); new Worker('/nested.js'); });`,
		"/nested.js": `fetch('/data?nested').catch(() => {});`,
		"/m.js":      `import {x} from '/dep.js'; fetch('/data?module' + x).catch(() => {});`,
		"/dep.js":    `export const x = 1;`,
	})
	// A worker's computing is no activity: the quiet time covers each step
	// of the chain (a worker starting, a body read, a message handled) on a
	// loaded machine.
	const budget = 16 * time.Second
	b := newBrowser(t, Config{Allow: allowOnly(origin), PageTimeout: budget, Quiet: time.Second})
	render(t, b, origin+"/dep.js") // the browser starts outside the timed render
	start := time.Now()
	r := render(t, b, origin+"/")
	wall := time.Since(start)
	if !r.Settled || notSettledNote(r) != "" || r.Elapsed >= budget/2 {
		t.Fatalf("settled %v after %s (wall %s, budget %s): want settled within half the budget; notes %q, requests %+v",
			r.Settled, r.Elapsed.Round(time.Millisecond), wall.Round(time.Millisecond), budget, r.Notes, r.Requests)
	}
	t.Logf("settled after %s (wall %s, budget %s)", r.Elapsed.Round(time.Millisecond), wall.Round(time.Millisecond), budget)
	// Settled means the workers' requests ended: each reached the site
	// before the render ended, and the first worker's answer is in the DOM.
	got := ws.seen()
	for _, q := range []string{"classic", "blob", "module1", "nested"} {
		if !slices.Contains(got, q) {
			t.Errorf("the worker's /data?%s had not arrived when the render settled (arrived: %q; requests %+v)", q, got, r.Requests)
		}
	}
	if !strings.Contains(r.HTML, "the worker read data") {
		t.Errorf("the worker's message is not in the rendered DOM: %.300s", r.HTML)
	}
	// The workers' requests are the page's, with their status. (A nested
	// worker's script is its parent worker's: the tab does not see it.)
	for _, u := range []string{origin + "/w.js", origin + "/m.js", origin + "/dep.js", origin + "/data?classic", origin + "/data?module1", origin + "/data?nested", origin + "/data?blob"} {
		i := slices.IndexFunc(r.Requests, func(q crawl.Request) bool { return q.URL == u })
		if i < 0 || r.Requests[i].Status != 200 {
			t.Errorf("request %s not reported with status 200: %+v", u, r.Requests)
		}
	}
}

// TestWorkerRequestHoldsThePage: a worker's request that never ends keeps
// the page unsettled to its budget, with the note that says so.
func TestWorkerRequestHoldsThePage(t *testing.T) {
	_, origin := newWorkerSite(t, map[string]string{
		"/":        `<!doctype html><html><body><p>x</p><script>new Worker('/slow.js');</script></body></html>`,
		"/slow.js": `fetch('/hang').catch(() => {}); fetch('/data?beside').catch(() => {});`,
	})
	const budget = 6 * time.Second
	b := newBrowser(t, Config{Allow: allowOnly(origin), PageTimeout: budget, Quiet: time.Second})
	r := render(t, b, origin+"/")
	if r.Settled || !strings.Contains(notSettledNote(r), "1 requests were still in flight") || r.Elapsed < budget-domReserve {
		t.Fatalf("settled %v after %s (budget %s), notes %q: want the worker's open request to hold the page to its budget",
			r.Settled, r.Elapsed.Round(time.Millisecond), budget, r.Notes)
	}
}

// TestWorkerWritesHeldAtObserve: at observe (nil Config.Write and a Write
// that refuses) a dedicated worker's write is held by the tab's fence, the
// worker's page still settles before its budget, and a shared worker's
// write is held by the proxy: none reaches the site.
func TestWorkerWritesHeldAtObserve(t *testing.T) {
	ws, origin := newWorkerSite(t, map[string]string{
		"/": `<!doctype html><html><body><p>x</p><script>
new Worker('/w.js');
try { new SharedWorker('/shared.js'); } catch (e) {}
</script></body></html>`,
		"/w.js":      `fetch('/w/dedicated', {method: 'POST', body: 'x'}).catch(() => {}).finally(() => fetch('/data?after-write'));`,
		"/shared.js": `fetch('/w/shared', {method: 'POST', body: 'x'}).catch(() => {});`,
	})
	log := &writeLog{}
	log.readOnly.Store(true)
	const budget = 16 * time.Second
	b := newBrowser(t, Config{Allow: allowOnly(origin), PageTimeout: budget, Quiet: time.Second, Write: log.write})
	r, err := b.Render(context.Background(), origin+"/")
	if err != nil {
		t.Fatal(err)
	}
	if !r.Settled || r.Elapsed >= budget/2 || !slices.Contains(ws.seen(), "after-write") {
		t.Errorf("settled %v after %s (budget %s), arrived %q; notes %q: want the page settled once the worker's held write and its next request ended",
			r.Settled, r.Elapsed.Round(time.Millisecond), budget, ws.seen(), r.Notes)
	}
	// The shared worker runs apart from the page: waited for.
	want := []string{"POST " + origin + "/w/dedicated", "POST " + origin + "/w/shared"}
	if missing := waitHeld(log, 0, want, 20*time.Second); len(missing) > 0 {
		t.Errorf("writes %q were not held (asked:\n%s)", missing, log.decisions())
	}
	if !strings.Contains(log.decisions(), "page POST "+origin+"/w/dedicated: held") {
		t.Errorf("the dedicated worker's write was not held by the tab's fence:\n%s", log.decisions())
	}
	if got := ws.p.arrived(); len(got) > 0 {
		t.Errorf("writes reached the site at observe: %q", got)
	}
	if sent, _ := log.lists(); len(sent) > 0 {
		t.Errorf("writes sent at observe: %q", sent)
	}
}

// BenchmarkWorkerPage renders a page that starts a dedicated worker (which
// fetches and posts back) beside the same page without the worker, in one
// browser: the worker page's cost against its baseline; and, where Debian's
// libjs-pdf is installed, pdf.js's own viewer (a page we did not write: it
// starts pdf.worker.js, which parses the PDF). Before workers.go a worker
// page took its whole page budget. page-s/op is Rendered.Elapsed; done/op
// the share of renders whose DOM holds the page's result (the worker's
// answer; pdf.js's first page view, which needs the worker to have parsed
// the PDF: a worker's computing is no activity, and a page quiet for
// Config.Quiet meanwhile settles without it).
func BenchmarkWorkerPage(b *testing.B) {
	page := `<!doctype html><html><body><p id=out>waiting</p><script>
%s
</script></body></html>`
	p := &platform{pages: map[string]string{
		"/plain":  strings.Replace(page, "%s", `fetch('/data').then(r => r.text()).then(t => { document.getElementById('out').textContent = t; });`, 1),
		"/worker": strings.Replace(page, "%s", `new Worker('/w.js').onmessage = e => { document.getElementById('out').textContent = e.data; };`, 1),
		"/w.js":   `fetch('/data').then(r => r.text()).then(t => postMessage(t));`,
	}}
	mux := http.NewServeMux()
	mux.Handle("/", p)
	const pdfjs, pdf = "/usr/share/javascript/pdf", "/usr/share/doc/libjs-pdf/examples/learning/helloworld.pdf"
	mux.Handle("/pdfjs/", http.StripPrefix("/pdfjs", http.FileServer(http.Dir(pdfjs))))
	mux.HandleFunc("/pdfjs/web/helloworld.pdf", func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, pdf) })
	s := httptest.NewServer(mux)
	defer s.Close()
	br, err := New(Config{Exec: mustFind(b), Allow: allowOnly(s.URL)}) // DefaultQuiet, DefaultPageTimeout
	if err != nil {
		b.Fatal(err)
	}
	defer br.Close()
	if _, err := br.Render(context.Background(), s.URL+"/plain"); err != nil { // starts the browser
		b.Fatal(err)
	}
	for _, c := range []struct{ name, path, want string }{
		{"plain", "/plain", ">ok<"},
		{"worker", "/worker", ">ok<"},
		// pdf.js's viewer: its page views exist once the worker parsed the PDF.
		{"pdfjs-viewer", "/pdfjs/web/viewer.html?file=helloworld.pdf", `data-page-number="1"`},
	} {
		b.Run(c.name, func(b *testing.B) {
			if strings.HasPrefix(c.path, "/pdfjs/") {
				if _, err := os.Stat(pdf); err != nil {
					b.Skipf("pdf.js's viewer is not installed (apt-get install libjs-pdf): %v", err)
				}
			}
			var page time.Duration
			settled, done := 0, 0
			for b.Loop() {
				r, err := br.Render(context.Background(), s.URL+c.path)
				if err != nil {
					b.Fatal(err)
				}
				if strings.Contains(r.HTML, c.want) {
					done++
				}
				page += r.Elapsed
				if r.Settled {
					settled++
				}
			}
			b.ReportMetric(page.Seconds()/float64(b.N), "page-s/op")
			b.ReportMetric(float64(settled)/float64(b.N), "settled/op")
			b.ReportMetric(float64(done)/float64(b.N), "done/op")
		})
	}
}

// TestFaviconIsNotThePages: Chromium's own favicon fetch is paused by the
// tab's Fetch domain and may never be announced by its Network domain, the
// way a worker's requests are not. It is the browser's, not the page's:
// a render with no worker, or with one, whose favicon is a 404 lists no
// favicon request and no failed one. It used to be followed as a worker's
// request ("loses 1 request(s) on load: other /favicon.ico (HTTP 404)").
func TestFaviconIsNotThePages(t *testing.T) {
	var mu sync.Mutex
	favicons := 0
	p := &platform{pages: map[string]string{
		// After its load the page keeps the render open for a while: the
		// browser asks for the favicon once the page has loaded.
		"/plain": `<!doctype html><html><body><p>x</p><script>
addEventListener('load', () => setTimeout(() => fetch('/slow').catch(() => {}), 100));
</script></body></html>`,
		"/worker": `<!doctype html><html><body><p>x</p><script>
new Worker('/w.js');
addEventListener('load', () => setTimeout(() => fetch('/slow').catch(() => {}), 100));
</script></body></html>`,
		"/w.js": `fetch('/data').catch(() => {});`,
	}}
	mux := http.NewServeMux()
	mux.Handle("/", p)
	mux.HandleFunc("/favicon.ico", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		favicons++
		mu.Unlock()
		http.NotFound(w, r)
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(1500 * time.Millisecond):
		}
		w.Write([]byte("late"))
	})
	origin := serve(t, mux).URL
	b := newBrowser(t, Config{Allow: allowOnly(origin), PageTimeout: 16 * time.Second, Quiet: time.Second})
	for _, page := range []string{"/plain", "/worker"} {
		mu.Lock()
		before := favicons
		mu.Unlock()
		r := render(t, b, origin+page)
		mu.Lock()
		asked := favicons - before
		mu.Unlock()
		for _, q := range r.Requests {
			if strings.Contains(q.URL, "favicon") || q.Status >= 400 || q.Failed != "" {
				t.Errorf("%s: request %+v listed as the page's (favicon asked %d times during the render); requests %+v", page, q, asked, r.Requests)
			}
		}
		if !r.Settled {
			t.Errorf("%s: not settled after %s; notes %q", page, r.Elapsed, r.Notes)
		}
		t.Logf("%s: favicon asked %d times during the render, %d requests, settled after %s", page, asked, len(r.Requests), r.Elapsed.Round(time.Millisecond))
	}
}

// TestFollowOnlyWorkersRequests: the tab's Fetch domain pausing a numbered
// request its Network domain has not announced (Chromium's favicon fetch,
// announced after its pause or never) does not make it the page's, with or
// without a worker on the page; a request the pause carries no Network id
// for is a worker's once the tab has one, and a worker's script is
// followed by its target id. The old rule followed every request the
// Network domain had not announced: the favicon's 404 became a lost
// request in ci25.
func TestFollowOnlyWorkersRequests(t *testing.T) {
	newRec := func() *recorder {
		return &recorder{out: &crawl.Rendered{}, byID: map[network.RequestID]int{}, inflight: map[network.RequestID]flight{},
			workers: map[network.RequestID]bool{}, apart: map[network.RequestID]bool{}, own: map[network.RequestID]bool{}, tab: "TAB"}
	}
	paused := func(u, netID string, typ network.ResourceType) fetch.EventRequestPaused {
		return fetch.EventRequestPaused{RequestID: fetch.RequestID("interception-" + netID), NetworkID: network.RequestID(netID),
			ResourceType: typ, Request: &network.Request{URL: u, Method: "GET"}}
	}
	favicon := paused("http://127.0.0.1:1/favicon.ico", "105.2", network.ResourceTypeOther)
	pageXHR := paused("http://127.0.0.1:1/slow", "105.3", network.ResourceTypeXHR)
	workerXHR := paused("http://127.0.0.1:1/data", "", network.ResourceTypeXHR)
	script := paused("http://127.0.0.1:1/w.js", "W1", network.ResourceTypeOther)

	r := newRec()
	for _, ev := range []fetch.EventRequestPaused{favicon, pageXHR, workerXHR} {
		if r.followPaused(ev) {
			t.Errorf("no worker on the page: %s (network id %q) followed as a worker's", ev.Request.URL, ev.NetworkID)
		}
	}
	if len(r.out.Requests) != 0 || len(r.inflight) != 0 {
		t.Errorf("no worker on the page: requests %+v listed, %d in flight; want none", r.out.Requests, len(r.inflight))
	}

	r = newRec()
	r.onTarget(&target.EventTargetCreated{TargetInfo: &target.Info{TargetID: "W1", Type: "worker", ParentID: "TAB"}})
	if !r.followPaused(script) {
		t.Error("the worker's script was not followed")
	}
	if !r.followPaused(workerXHR) {
		t.Error("the worker's request (no network id) was not followed")
	}
	for _, ev := range []fetch.EventRequestPaused{favicon, pageXHR} {
		if r.followPaused(ev) {
			t.Errorf("worker on the page: %s (network id %q) followed as a worker's", ev.Request.URL, ev.NetworkID)
		}
	}
	var urls []string
	for _, q := range r.out.Requests {
		urls = append(urls, q.URL)
	}
	if want := []string{script.Request.URL, workerXHR.Request.URL}; !slices.Equal(urls, want) {
		t.Errorf("requests listed %q, want %q", urls, want)
	}
}
