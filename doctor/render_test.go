package doctor

import (
	"errors"
	"strings"
	"testing"

	"github.com/qafleet/fleetd/browser"
)

// TestCrawlEngine: a browser asked for and missing is fatal, a browser
// found or the text crawl chosen passes, a browser merely missing is a
// warning with the install to do.
func TestCrawlEngine(t *testing.T) {
	if c := CrawlEngine("", "", errors.New("crawl.engine is browser, but no chromium"), false); c.OK || !c.Fatal || !strings.Contains(c.Detail, "no chromium") || c.Fix == "" {
		t.Errorf("browser required, none: %+v", c)
	}
	if c := CrawlEngine("/usr/bin/chromium", "rendering crawl on", nil, false); !c.OK || c.Detail != "rendering crawl on" {
		t.Errorf("browser found: %+v", c)
	}
	if c := CrawlEngine("", "crawl.engine is static", nil, true); !c.OK || c.Warn {
		t.Errorf("static: %+v", c)
	}
	if c := CrawlEngine("", "rendering crawl off: no chromium", nil, false); c.OK || !c.Warn || c.Fatal || !strings.Contains(c.Fix, "chromium") {
		t.Errorf("auto, none: %+v", c)
	}
}

// TestRenderJail: every protection on passes; unjailed or without
// Chromium's own sandbox is a warning naming what to change; a jail that
// cannot be built is fatal only when the browser is required.
func TestRenderJail(t *testing.T) {
	full := browser.Protections{Jailed: true, Sandboxed: true, Detail: "bwrap"}
	if c := RenderJail(full, nil, true); !c.OK || c.Detail != full.String() {
		t.Errorf("all on: %+v", c)
	}
	if c := RenderJail(browser.Protections{Sandboxed: true}, nil, false); c.OK || !c.Warn || !strings.Contains(c.Fix, "crawl.jail: off") {
		t.Errorf("unjailed: %+v", c)
	}
	if c := RenderJail(browser.Protections{Jailed: true}, nil, false); c.OK || !c.Warn || !strings.Contains(c.Fix, "user namespaces") {
		t.Errorf("no Chromium sandbox: %+v", c)
	}
	noJail := errors.New("bwrap: not found")
	if c := RenderJail(browser.Protections{}, noJail, true); c.OK || !c.Fatal || !strings.Contains(c.Detail, "refuses to start") || !strings.Contains(c.Fix, "bubblewrap") {
		t.Errorf("no jail, browser required: %+v", c)
	}
	if c := RenderJail(browser.Protections{}, noJail, false); c.OK || c.Fatal || !c.Warn || !strings.Contains(c.Detail, "rendering crawl is off") {
		t.Errorf("no jail, auto: %+v", c)
	}
}
