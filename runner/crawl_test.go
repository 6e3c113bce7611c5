package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qafleet/fleetd/browser"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/qatools"
)

// TestCrawlChoose: static never looks for a browser; without one, auto
// reads text only and browser refuses; with one (and its jail off) the
// rendering crawl is on, and the run's Renderer over it is a browser whose
// stop the run calls, while an engine that is off gives no renderer and a
// stop that does nothing.
func TestCrawlChoose(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "chromium")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "none")
	env := &Env{Env: &qatools.Env{Target: fleet.Target{FetchAllow: []string{"127.0.0.1:1"}}}}
	off := browser.Jail{Off: true}
	for _, tc := range []struct {
		name    string
		c       Crawl
		exe     string
		why     string // in why, or in the error when failing
		failing bool
	}{
		{"static", Crawl{Engine: EngineStatic, Chromium: fake, Jail: off}, "", "text only", false},
		{"auto, no browser", Crawl{Chromium: missing, Jail: off}, "", "rendering crawl off: crawl.chromium " + missing, false},
		{"browser, no browser", Crawl{Engine: EngineBrowser, Chromium: missing, Jail: off}, "", "crawl.engine is browser, but crawl.chromium " + missing, true},
		{"auto with a browser", Crawl{Chromium: fake, Jail: off}, fake, "rendering crawl on: " + fake, false},
		{"browser with a browser", Crawl{Engine: EngineBrowser, Chromium: fake, Jail: off}, fake, "rendering crawl on: " + fake, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exe, why, err := tc.c.Choose()
			text := why
			if err != nil {
				text = err.Error()
			}
			if exe != tc.exe || (err != nil) != tc.failing || !strings.Contains(text, tc.why) {
				t.Fatalf("Choose() = %q, %q, %v; want %q and %q (failing %v)", exe, why, err, tc.exe, tc.why, tc.failing)
			}
			r, stop, how, err := tc.c.Renderer(env, nil, t.TempDir(), nil)
			if (err != nil) != tc.failing || (r != nil) != (tc.exe != "") || stop == nil || (err == nil && how != why) {
				t.Fatalf("Renderer() = %v, %q, %v; want a renderer %v and how %q", r, how, err, tc.exe != "", why)
			}
			stop()
		})
	}
}
