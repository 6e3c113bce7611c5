package poster

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
)

func finding(summary string) fleet.Finding {
	return fleet.Finding{Source: "qa-test", Severity: fleet.SeverityLow, Surface: fleet.SurfaceCompiler, Run: "r-1", Summary: summary}
}

// countText returns how many log entries hold text.
func countText(t *testing.T, l *chain.FeedbackLog, text string) int {
	t.Helper()
	n := 0
	if _, err := l.Scan(context.Background(), 0, func(p []chain.Entry) error {
		for _, e := range p {
			if e.Text == text {
				n++
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

// flakyNode is a reverse proxy in front of the dev chain that can be
// switched off, as an RPC outage would.
type flakyNode struct {
	srv  *httptest.Server
	down atomic.Bool
}

func newFlakyNode(t *testing.T, target string) *flakyNode {
	t.Helper()
	u, _ := url.Parse(target)
	proxy := httputil.NewSingleHostReverseProxy(u)
	f := &flakyNode{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f.down.Load() {
			hj, _ := w.(http.Hijacker)
			conn, _, _ := hj.Hijack()
			conn.Close() // the connection drops, as with a dead node
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func TestReporterOutboxExactlyOnce(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	outbox := filepath.Join(t.TempDir(), "outbox")
	node := newFlakyNode(t, h.chainURL)
	viaProxy, err := chain.Dial(ctx, node.srv.URL, chain.Options{Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer viaProxy.Close()
	node.down.Store(true)
	down, err := New(Config{Log: viaProxy.FeedbackLog(h.log.Address()), Identity: h.fleetKey, Sponsor: h.sponsor, OutboxDir: outbox, PostTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for i := range 3 {
		res, err := down.Report(ctx, finding("queued while the chain is down #"+string(rune('a'+i))))
		if err != nil || res.Status != Queued {
			t.Fatalf("report with the chain down = %+v, %v", res, err)
		}
		texts = append(texts, res.Text)
	}
	files, _ := filepath.Glob(filepath.Join(outbox, "*.json"))
	if len(files) != 3 {
		t.Fatalf("%d outbox files, want 3", len(files))
	}

	// One of them did reach the chain before the crash that kept it in the
	// outbox (posted, then the process died before removing the file).
	if _, err := h.log.SubmitFor(ctx, h.fleetKey, h.sponsor, texts[1]); err != nil {
		t.Fatal(err)
	}

	// While the node is still down, Flush keeps everything.
	if p, r, err := down.Flush(ctx); p != 0 || r != 3 || err == nil {
		t.Errorf("Flush with the node down = %d, %d, %v", p, r, err)
	}
	// After restart the node is back: a new reporter flushes the outbox.
	node.down.Store(false)
	up, err := New(Config{Log: viaProxy.FeedbackLog(h.log.Address()), Identity: h.fleetKey, Sponsor: h.sponsor, OutboxDir: outbox})
	if err != nil {
		t.Fatal(err)
	}
	posted, remaining, err := up.Flush(ctx)
	if err != nil || posted != 2 || remaining != 0 {
		t.Fatalf("Flush = %d posted, %d remaining, %v; want 2, 0", posted, remaining, err)
	}
	for _, text := range texts {
		if n := countText(t, h.log, text); n != 1 {
			t.Errorf("%q is on chain %d times, want exactly once", text, n)
		}
	}
	if files, _ := filepath.Glob(filepath.Join(outbox, "*.json")); len(files) != 0 {
		t.Errorf("outbox not empty: %v", files)
	}
	if p, r, err := up.Flush(ctx); p != 0 || r != 0 || err != nil {
		t.Errorf("second Flush = %d, %d, %v", p, r, err)
	}
}

func TestReporterDedupeAndRateLimit(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	r, err := New(Config{Log: h.log, Identity: h.fleetKey, Sponsor: h.sponsor, OutboxDir: filepath.Join(t.TempDir(), "o"), PerSource: 3, Window: time.Minute, DedupeWindow: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	r.now = func() time.Time { return now }
	f := finding("compiler crash on enum E{}")
	f.Repro = &fleet.Repro{Tool: "qa_compile", Args: []byte(`{"source":"enum E{}"}`)}
	first, err := r.Report(ctx, f)
	if err != nil || first.Status != Posted {
		t.Fatalf("first = %+v, %v", first, err)
	}
	// Same repro, different wording and whitespace: same fingerprint.
	g := f
	g.Summary = "Compiler   CRASH on enum"
	g.Repro = &fleet.Repro{Tool: "qa_compile", Args: []byte(`{ "source" : "enum E{}" }`)}
	if res, _ := r.Report(ctx, g); res.Status != Deduped || res.FP != first.FP {
		t.Errorf("duplicate = %+v (fp %s vs %s)", res, res.FP, first.FP)
	}
	// The dedupe window passes: reported again. (The log checks the window
	// by chain time, which a fake clock cannot move: a reporter whose window
	// is a nanosecond stands for "long after".)
	now = now.Add(2 * time.Hour)
	later, err := New(Config{Log: h.log, Identity: h.fleetKey, Sponsor: h.sponsor, OutboxDir: filepath.Join(t.TempDir(), "o"), DedupeWindow: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	later.now = func() time.Time { return now }
	// Chain time moves a block at a time (a second on the dev chain).
	if _, err := h.log.Submit(ctx, h.sponsor, "a block later"); err != nil {
		t.Fatal(err)
	}
	if res, _ := later.Report(ctx, g); res.Status != Posted {
		t.Errorf("after the dedupe window = %+v", res)
	}
	r.mu.Lock()
	r.mem.Posted[g.Source] = append(r.mem.Posted[g.Source], now) // as if r had posted it
	r.mu.Unlock()
	// Rate limit: 3 per minute per source.
	var statuses []string
	for i := range 5 {
		res, _ := r.Report(ctx, finding("distinct finding "+strings.Repeat("x", i)))
		statuses = append(statuses, string(res.Status))
	}
	if got := strings.Join(statuses, ","); got != "posted,posted,rate_limited,rate_limited,rate_limited" {
		t.Errorf("statuses %s", got)
	}
	// Another source is not limited by the first.
	other := finding("other source finding")
	other.Source = "qa-other"
	if res, _ := r.Report(ctx, other); res.Status != Posted {
		t.Errorf("other source = %+v", res)
	}
	// A finding the codec refuses is rejected, not queued.
	bad := finding("")
	bad.Surface = "Not A Surface!"
	if _, err := r.Report(ctx, bad); err == nil {
		t.Error("invalid finding accepted")
	}
	if files, _ := filepath.Glob(filepath.Join(r.cfg.OutboxDir, "*")); len(files) != 0 {
		t.Errorf("outbox holds %v after successful posts", files)
	}
}

func TestOutboxCorruptFileKept(t *testing.T) {
	dir := t.TempDir()
	r, err := New(Config{OutboxDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "20260101T000000.000000000-x.json"), []byte("{torn"), 0o600)
	items, err := r.Pending()
	if err != nil || len(items) != 0 {
		t.Fatalf("Pending = %v, %v", items, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "20260101T000000.000000000-x.json.corrupt")); err != nil {
		t.Error("corrupt outbox file was not kept aside")
	}
}

// TestReporterRemembersAcrossProcesses: every Reporter here stands for a new
// process (a cron job's next run). Sharing a data dir, they share the state
// file; with separate data dirs, the log is what they share.
func TestReporterRemembersAcrossProcesses(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	data := t.TempDir()
	newProc := func(dataDir string, cfg Config) *Poster {
		t.Helper()
		cfg.Log, cfg.Identity, cfg.Sponsor = h.log, h.fleetKey, h.sponsor
		cfg.OutboxDir = filepath.Join(dataDir, "outbox")
		cfg.StateFile = filepath.Join(dataDir, "reporter", "state.json")
		r, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	f := finding("the compiler hangs on a constant-true loop")
	f.Repro = &fleet.Repro{Tool: "qa_compile", Args: []byte(`{"source":"while true {}"}`)}

	var statuses []string
	for range 3 { // for i in 1 2 3; do fleetd probe ...; done
		res, err := newProc(data, Config{}).Report(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		statuses = append(statuses, string(res.Status))
	}
	if got := strings.Join(statuses, ","); got != "posted,deduped,deduped" {
		t.Errorf("three processes on one data dir: %s", got)
	}
	// Another data dir (another pod): nothing in its state, the log says it.
	if res, _ := newProc(t.TempDir(), Config{}).Report(ctx, f); res.Status != Deduped {
		t.Errorf("a process with its own data dir: %s, want deduped from the log", res.Status)
	}
	text, _ := fleet.Format(func() fleet.Finding { g := f; g.Fingerprint = fleet.Fingerprint(f); return g }())
	if n := countText(t, h.log, text); n != 1 {
		t.Errorf("the finding is on the log %d times, want 1", n)
	}

	// A stranger posting a fingerprint first cannot silence it.
	stranger, _ := chain.GenerateKey()
	g := finding("a face leaks a key")
	g.Surface = fleet.SurfaceFace
	g.Repro = &fleet.Repro{Tool: "qa_fetch", Args: []byte(`{"url":"http://x/.env"}`)}
	g.Fingerprint = fleet.Fingerprint(g)
	spoof, _ := fleet.Format(g)
	if _, err := h.log.SubmitFor(ctx, stranger, h.sponsor, spoof); err != nil {
		t.Fatal(err)
	}
	if res, _ := newProc(t.TempDir(), Config{}).Report(ctx, g); res.Status != Posted {
		t.Errorf("after a stranger posted the fingerprint: %s, want posted", res.Status)
	}
	// ... but a trusted sender's post counts.
	colleague, _ := chain.GenerateKey()
	k := finding("a page leaks a stack trace")
	k.Surface = fleet.SurfaceFace
	k.Fingerprint = fleet.Fingerprint(k)
	other, _ := fleet.Format(k)
	if _, err := h.log.SubmitFor(ctx, colleague, h.sponsor, other); err != nil {
		t.Fatal(err)
	}
	if res, _ := newProc(t.TempDir(), Config{Trusted: []fleet.Address{colleague.Address()}}).Report(ctx, k); res.Status != Deduped {
		t.Errorf("after a trusted sender posted the fingerprint: %s, want deduped", res.Status)
	}

	// The per-source rate limit holds across processes too.
	rl := t.TempDir()
	statuses = nil
	for i := range 4 {
		res, _ := newProc(rl, Config{PerSource: 2}).Report(ctx, finding("distinct "+strings.Repeat("y", i)))
		statuses = append(statuses, string(res.Status))
	}
	if got := strings.Join(statuses, ","); got != "posted,posted,rate_limited,rate_limited" {
		t.Errorf("rate limit across processes: %s", got)
	}

	// A state file that is not ours is moved aside, not overwritten, and
	// the state is rebuilt from the log.
	bad := t.TempDir()
	state := filepath.Join(bad, "reporter", "state.json")
	os.MkdirAll(filepath.Dir(state), 0o700)
	os.WriteFile(state, []byte("{not json"), 0o600)
	if res, _ := newProc(bad, Config{}).Report(ctx, f); res.Status != Deduped {
		t.Errorf("with a corrupt state file: %s, want deduped (rebuilt from the log)", res.Status)
	}
	if b, err := os.ReadFile(state + ".corrupt"); err != nil || string(b) != "{not json" {
		t.Errorf("the corrupt state was not kept aside: %q, %v", b, err)
	}
}

// TestOutboxFlushOnceAcrossProcesses: two processes, each with its own data
// dir, queued the same finding while the chain was down; both flush when it
// is back. The log takes it once; both outboxes end empty.
func TestOutboxFlushOnceAcrossProcesses(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	node := newFlakyNode(t, h.chainURL)
	viaProxy, err := chain.Dial(ctx, node.srv.URL, chain.Options{Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer viaProxy.Close()
	f := finding("the same finding, found by two pods")
	f.Repro = &fleet.Repro{Tool: "qa_compile", Args: []byte(`{"source":"PANIC"}`)}
	node.down.Store(true)
	var reps []*Poster
	for i := range 2 {
		dir := t.TempDir()
		r, err := New(Config{Log: viaProxy.FeedbackLog(h.log.Address()), Identity: h.fleetKey, Sponsor: h.sponsor,
			OutboxDir: filepath.Join(dir, "outbox"), StateFile: filepath.Join(dir, "reporter", "state.json"), PostTimeout: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		g := f
		g.Run = fmt.Sprintf("r-%d", i) // each pod's own run: the texts differ, the fingerprint does not
		if res, err := r.Report(ctx, g); err != nil || res.Status != Queued {
			t.Fatalf("pod %d with the chain down: %+v %v", i, res, err)
		}
		reps = append(reps, r)
	}
	node.down.Store(false)
	var wg sync.WaitGroup
	for _, r := range reps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, left, err := r.Flush(ctx); err != nil || left != 0 {
				t.Errorf("flush: %d left, %v", left, err)
			}
		}()
	}
	wg.Wait()
	n := 0
	if _, err := h.log.Scan(ctx, 0, func(p []chain.Entry) error {
		for _, e := range p {
			if fd, err := fleet.Parse(e.Text); err == nil && fd.Fingerprint == fleet.Fingerprint(f) {
				n++
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("the finding is on the log %d times after two flushes, want 1", n)
	}
	for i, r := range reps {
		if items, _ := r.Pending(); len(items) != 0 {
			t.Errorf("pod %d's outbox still holds %d items", i, len(items))
		}
	}
}
