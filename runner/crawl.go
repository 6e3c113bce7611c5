package runner

import (
	"context"
	"fmt"
	"os/exec"
	"time"

	headless "github.com/qafleet/fleetd/browser"
	"github.com/qafleet/fleetd/qatools"
	"github.com/qafleet/fleetd/specialists/replay"
)

// Crawl engines (crawl.engine).
const (
	EngineAuto    = "auto"
	EngineStatic  = "static"
	EngineBrowser = "browser"
)

// Crawl is how the specialists crawl the web surface (crawl:), as values:
// reading responses as text only (static), or also opening each HTML page
// in headless Chromium (browser: the rendering crawl).
type Crawl struct {
	Engine string // "" or EngineAuto: the browser when one is found; EngineStatic; EngineBrowser
	// Chromium is the browser: a name looked up in PATH or a path; "":
	// browser.Find.
	Chromium    string
	PageTimeout time.Duration
	// Jail is the browser's jail; a run's jail dir replaces its Dir.
	Jail headless.Jail
}

// Choose decides the crawl engine: the browser's path when the rendering
// crawl is on ("" when off), and why. err is set only when the engine is
// EngineBrowser and there is no browser, or its jail cannot be built (the
// renderer is jailed like every other tool). The jail is checked from
// inside (a probe; no browser starts).
func (c Crawl) Choose() (exe, why string, err error) {
	if c.Engine == EngineStatic {
		return "", "crawl.engine is static: pages are read as text only", nil
	}
	var prot headless.Protections
	exe, ferr := c.FindBrowser()
	if ferr == nil {
		prot, ferr = headless.CheckJail(context.Background(), c.Jail, exe)
		if ferr != nil {
			ferr = fmt.Errorf("%w (set crawl.jail: off to render unjailed)", ferr)
		}
	}
	switch {
	case ferr == nil:
		return exe, fmt.Sprintf("rendering crawl on: %s renders each crawled HTML page (%s)", exe, prot), nil
	case c.Engine == EngineBrowser:
		return "", "", fmt.Errorf("crawl.engine is browser, but %w", ferr)
	}
	return "", fmt.Sprintf("rendering crawl off: %v; pages are read as text only", ferr), nil
}

// FindBrowser locates c.Chromium, or browser.Find's; errors name
// crawl.chromium.
func (c Crawl) FindBrowser() (string, error) {
	if c.Chromium == "" {
		return headless.Find()
	}
	exe, err := exec.LookPath(c.Chromium)
	if err != nil {
		return "", fmt.Errorf("crawl.chromium %s: %w", c.Chromium, err)
	}
	return exe, nil
}

// Renderer is Config.Renderer over c: the run's rendering crawl (nil when
// it is off; NewRenderer), jailed in jailDir ("": a temporary one), its
// stop, and what the run record says of it (the engine, the jail).
func (c Crawl) Renderer(env *Env, writes *qatools.PageWrites, jailDir string, sessions *qatools.Sessions) (replay.Renderer, func(), string, error) {
	exe, why, err := c.Choose()
	if err != nil || exe == "" {
		return nil, func() {}, why, err
	}
	jail := c.Jail
	jail.Dir = jailDir
	b, err := NewRenderer(env, writes, sessions, exe, jail, c.PageTimeout)
	if err != nil {
		return nil, func() {}, why, err
	}
	return b, func() { b.Close() }, why, nil
}
