package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fixtures/spa"
	"github.com/qafleet/fleetd/fixtures/twin"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/fleet/fleettest"
	"github.com/qafleet/fleetd/qatools"
	"github.com/qafleet/fleetd/sandbox"
)

// TestCrawlEngine: crawl.engine decides the engine and doctor says which;
// a missing browser turns the rendering crawl off (a warning) unless the
// config asks for it (fatal), and a run then stops before it starts.
func TestCrawlEngine(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "chromium")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "no-such-browser")
	for _, tc := range []struct {
		name             string
		crawl            CrawlConfig
		ok, warn, fatal  bool
		detail           string
		rendering, error bool
	}{
		{"static", CrawlConfig{Engine: "static"}, true, false, false, "text only", false, false},
		{"auto with a browser", CrawlConfig{Chromium: fake}, true, false, false, "rendering crawl on: " + fake, true, false},
		{"auto without", CrawlConfig{Chromium: missing}, false, true, false, "rendering crawl off", false, false},
		{"browser without", CrawlConfig{Engine: "browser", Chromium: missing}, false, false, true, "crawl.engine is browser", false, true},
		{"browser relative to the config", CrawlConfig{Engine: "browser", Chromium: "./chromium"}, true, false, false, "rendering crawl on", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &app{cfg: &Config{Crawl: tc.crawl, path: filepath.Join(dir, "fleetd.yaml")}}
			c := a.crawlCheck()
			if c.OK != tc.ok || c.Warn != tc.warn || c.Fatal != tc.fatal || !strings.Contains(c.Detail, tc.detail) {
				t.Errorf("check %+v, want ok=%v warn=%v fatal=%v detail ~ %q", c, tc.ok, tc.warn, tc.fatal, tc.detail)
			}
			env := &fleetEnv{Env: &qatools.Env{Target: fleet.Target{FetchAllow: []string{"127.0.0.1:1"}}}}
			r, stop, _, err := a.crawl().Renderer(env, observeWrites(), "", nil)
			defer stop()
			if (err != nil) != tc.error || (r != nil) != tc.rendering {
				t.Errorf("renderer %v, err %v", r, err)
			}
		})
	}
	if err := (CrawlConfig{Engine: "chrome"}).validate(); err == nil || !strings.Contains(err.Error(), "crawl.engine") {
		t.Errorf("a bad engine: %v", err)
	}
	if err := (CrawlConfig{PageTimeout: -1}).validate(); err == nil || !strings.Contains(err.Error(), "crawl.page_timeout") {
		t.Errorf("a negative page timeout: %v", err)
	}
}

// TestRendererUnderFencesAndPacing: the run's browser, as runSpecialist
// builds it, sends nothing off target.fetch_allow and waits for the tools'
// pacer (shared with qa_fetch) before every request it sends.
func TestRendererUnderFencesAndPacing(t *testing.T) {
	exe := findChromium(t)
	var foreign atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { foreign.Add(1) }))
	defer other.Close()
	var seen atomic.Int32
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Add(1)
		if r.URL.Path == "/" {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprintf(w, `<!doctype html><img src="/a.png"><img src="/b.png"><img src="/c.png"><img src="%s/x.png"><script>fetch('/d.json'); fetch('%s/y')</script>`, other.URL, other.URL)
			return
		}
		w.WriteHeader(404)
	}))
	defer site.Close()
	host := strings.TrimPrefix(site.URL, "http://")
	a := &app{cfg: &Config{Crawl: CrawlConfig{Engine: "browser", Chromium: exe}}}
	pacer := qatools.NewPacer(4, 1) // one request every 250 ms
	env := &fleetEnv{Env: &qatools.Env{Target: fleet.Target{FetchAllow: []string{host}}, Pacer: pacer}}
	r, stop, _, err := a.crawl().Renderer(env, observeWrites(), "", nil)
	if err != nil || r == nil {
		t.Fatalf("renderer: %v", err)
	}
	defer stop()
	start := time.Now()
	page, err := r.Render(context.Background(), site.URL+"/")
	if err != nil {
		t.Fatal(err)
	}
	// 6 requests (the page, three images, one fetch, the favicon) at 4 a
	// second: the last waits over a second for its slot.
	if took := time.Since(start); took < 1200*time.Millisecond || seen.Load() != 6 {
		t.Errorf("%d requests in %s: not paced at 4/s (notes %v)", seen.Load(), took, page.Notes)
	}
	// The pacer is shared: a host's back-off (a 429 qa_fetch saw) holds
	// the browser too.
	pacer.Observe("127.0.0.1", http.StatusTooManyRequests, "2")
	start = time.Now()
	if _, err := r.Render(context.Background(), site.URL+"/"); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 2*time.Second {
		t.Errorf("rendered in %s while the host asked for 2 s of quiet", took)
	}
	if n := foreign.Load(); n > 0 {
		t.Errorf("%d requests reached a host off fetch_allow", n)
	}
}

// TestProbeRendersSPA: `fleetd probe security` against a platform whose
// pages render in the browser (fixtures/spa), through the real tools and
// the real browser: the DOM XSS, the form's XSS and the stored DOM XSS
// (written with the real qa_submit) reach the log, doctor says the
// rendering crawl is on, and no Chromium process is left behind.
func TestProbeRendersSPA(t *testing.T) {
	findChromium(t)
	if testing.Short() {
		t.Skip("a devnet, the testbed and the spa fixture")
	}
	f := newFleetFixture(t, fleet.Exercise, nil)
	app, err := spa.Serve(context.Background(), twin.Flawed)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	editConfigInPlace(t, f.config, func(cfg map[string]any) {
		tg := cfg["target"].(map[string]any)
		st := app.Target()
		tg["faces"], tg["call"], tg["docs"], tg["fetch_allow"], tg["names"] = st.Faces, st.Call, st.Docs, st.FetchAllow, st.Names
	})
	if stdout, _, _ := run(t, "", "doctor", "--config", f.config); !strings.Contains(stdout, "rendering crawl on") {
		t.Errorf("doctor does not say the rendering crawl is on:\n%s", stdout)
	}
	if stdout, stderr, code := run(t, "", "probe", "security", "--config", f.config); code != 0 {
		t.Fatalf("probe security: exit %d\n%s%s", code, stdout, stderr)
	}
	var dom []string
	if _, err := f.dn.Log.Scan(context.Background(), 0, func(page []chain.Entry) error {
		for _, e := range page {
			if fd, err := fleet.Parse(e.Text); err == nil && fd.Surface == "dom" {
				dom = append(dom, fd.Summary)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// The stored status line goes through the real qa_submit (a PUT, its
	// writes on the run's meter).
	for _, want := range []string{"URL's fragment", "query parameter q", "query parameter next", "through the form POST", `Stored DOM-based XSS (CWE-79): the field "status"`} {
		if !slices.ContainsFunc(dom, func(s string) bool { return strings.Contains(s, want) }) {
			t.Errorf("no DOM finding on the log with %q: %q", want, dom)
		}
	}
	// The run record says how the renderer was confined: jailed, with
	// Chromium's own sandbox.
	records, _ := filepath.Glob(filepath.Join(f.dataDir, "runs", "*.jsonl"))
	for _, rec := range records {
		raw, _ := os.ReadFile(rec)
		head, _, _ := strings.Cut(string(raw), "\n")
		if !strings.Contains(head, "bwrap jail on, Chromium sandbox on") {
			t.Errorf("run record %s: the header does not say the renderer was jailed: %.600s", rec, head)
		}
	}
	if len(records) == 0 {
		t.Errorf("no run record in %s", f.dataDir)
	}
	// The run's browser is gone: no Chromium process (or the jail that
	// holds it) is this process's child.
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		st, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(st)
		i := strings.LastIndexByte(s, ')')
		if i < 0 || !strings.Contains(s[:i], "(chrom") && !strings.Contains(s[:i], "(bwrap") {
			continue
		}
		if f := strings.Fields(s[i+1:]); len(f) > 1 && f[0] != "Z" && f[1] == fmt.Sprint(os.Getpid()) {
			t.Errorf("a browser process outlives its run: %s", s)
		}
	}
}

// observeWrites is the page-write gate of a run at observe: every write a
// rendered page tries is held.
func observeWrites() *qatools.PageWrites {
	return qatools.NewPageWrites(fleettest.Dial(fleet.Observe), sandbox.NewMeter(fleet.Budget{}))
}
