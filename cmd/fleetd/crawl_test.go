package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/qatools"
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
			if c.ok != tc.ok || c.warn != tc.warn || c.fatal != tc.fatal || !strings.Contains(c.detail, tc.detail) {
				t.Errorf("check %+v, want ok=%v warn=%v fatal=%v detail ~ %q", c, tc.ok, tc.warn, tc.fatal, tc.detail)
			}
			env := &fleetEnv{Env: &qatools.Env{Target: fleet.Target{FetchAllow: []string{"127.0.0.1:1"}}}}
			r, stop, err := a.renderer(env)
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
