package main

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	headless "github.com/qafleet/fleetd/browser"
	"github.com/qafleet/fleetd/doctor"
	"github.com/qafleet/fleetd/qatools"
	"github.com/qafleet/fleetd/runner"
	"github.com/qafleet/fleetd/specialists/replay"
)

// CrawlConfig chooses how the specialists crawl the web surface: reading
// responses as text only (static), or also opening each HTML page in
// headless Chromium (browser: the rendering crawl, package browser).
type CrawlConfig struct {
	// Engine is auto (the default: the browser when one is found, static
	// otherwise), static or browser (a missing browser is then an error).
	Engine string `yaml:"engine"`
	// Chromium is the browser binary: a name looked up in PATH, or a path
	// (relative to the config file). Empty: $FLEETD_CHROMIUM, then the
	// usual names on PATH.
	Chromium string `yaml:"chromium"`
	// PageTimeout bounds one rendered page (default 15s).
	PageTimeout time.Duration `yaml:"page_timeout"`
	// Jail is on (the default) or off. On, Chromium runs in a bwrap jail
	// (package browser, jail.go) with the run's jail dir as its home and
	// profile, the key files, the data dir and the config out of sight,
	// and its own sandbox where the kernel allows it; where the jail cannot
	// be built the rendering crawl refuses. off renders unjailed: an
	// explicit opt-out, which doctor and every run record state.
	Jail string `yaml:"jail"`
}

// Values of crawl.jail.
const (
	jailOn  = "on"
	jailOff = "off"
)

// Crawl engines.
const (
	engineAuto    = "auto"
	engineStatic  = "static"
	engineBrowser = "browser"
)

func (c CrawlConfig) validate() error {
	var errs []error
	switch c.Engine {
	case "", engineAuto, engineStatic, engineBrowser:
	default:
		errs = append(errs, fmt.Errorf("crawl.engine: %q is not one of auto, static, browser", c.Engine))
	}
	switch c.Jail {
	case "", jailOn, jailOff:
	default:
		errs = append(errs, fmt.Errorf("crawl.jail: %q is not one of on, off", c.Jail))
	}
	if c.PageTimeout < 0 {
		errs = append(errs, fmt.Errorf("crawl.page_timeout: must not be negative, got %s", c.PageTimeout))
	}
	return errors.Join(errs...)
}

// crawlEngine decides the crawl engine: the browser's path when the
// rendering crawl is on ("" when off), and why. err is set only when the
// config asks for the browser and there is none, or its jail cannot be
// built (crawl.jail on): the renderer is jailed like every other tool.
//
// The jail is checked from inside (a probe; no browser starts).
func (a *app) crawlEngine() (exe, why string, err error) {
	c := a.cfg.Crawl
	if c.Engine == engineStatic {
		return "", "crawl.engine is static: pages are read as text only", nil
	}
	var prot headless.Protections
	exe, ferr := a.findChromium()
	if ferr == nil {
		prot, ferr = headless.CheckJail(context.Background(), a.renderJail(""), exe)
		if ferr != nil {
			ferr = fmt.Errorf("%w (set crawl.jail: off to render unjailed)", ferr)
		}
	}
	switch {
	case ferr == nil:
		return exe, fmt.Sprintf("rendering crawl on: %s renders each crawled HTML page (%s)", exe, prot), nil
	case c.Engine == engineBrowser:
		return "", "", fmt.Errorf("crawl.engine is browser, but %w", ferr)
	}
	return "", fmt.Sprintf("rendering crawl off: %v; pages are read as text only", ferr), nil
}

// renderJail is the browser's jail for a run whose jail dir is dir ("":
// a temporary one): out of its sight the data dir, the key files and the
// config (API keys reach it through ${ENV}, but it is the daemon's).
func (a *app) renderJail(dir string) headless.Jail {
	hide := []string{a.dataDir()}
	if a.cfg.path != "" {
		hide = append(hide, abs(a.cfg.path))
	}
	for _, k := range []string{a.cfg.Chain.FleetKeyFile, a.cfg.Chain.SponsorKeyFile} {
		if k != "" {
			hide = append(hide, abs(a.cfg.resolve(k)))
		}
	}
	return headless.Jail{Off: a.cfg.Crawl.Jail == jailOff, Dir: dir, Hide: hide}
}

// findChromium locates the configured browser, or browser.Find's.
func (a *app) findChromium() (string, error) {
	p := a.cfg.Crawl.Chromium
	if p == "" {
		return headless.Find()
	}
	if strings.ContainsRune(p, filepath.Separator) {
		p = a.cfg.resolve(p)
	}
	exe, err := exec.LookPath(p)
	if err != nil {
		return "", fmt.Errorf("crawl.chromium %s: %w", p, err)
	}
	return exe, nil
}

// renderer returns the run's rendering crawl (nil when it is off), the
// function that stops its browser, and what the run record says of it
// (the engine, the jail): every request the browser makes goes through
// the target's fetch allowlist and the tools' per-host pacing, every write
// a page tries is decided by writes (the dial, read at each one, and the
// run's write budget), and the browser runs in the run's jail dir
// (jailDir; "": a temporary one).
func (a *app) renderer(env *fleetEnv, writes *qatools.PageWrites, jailDir string) (replay.Renderer, func(), string, error) {
	return a.rendererAs(env, writes, jailDir, nil)
}

// rendererAs is renderer whose browser may also render as an identity the
// run's qa_login signed in (sessions; nil: never), only while the dial
// allows exercise, never requesting a sign-out link (browser.RenderAs).
func (a *app) rendererAs(env *fleetEnv, writes *qatools.PageWrites, jailDir string, sessions *qatools.Sessions) (replay.Renderer, func(), string, error) {
	exe, why, err := a.crawlEngine()
	if err != nil || exe == "" {
		return nil, func() {}, why, err
	}
	b, err := runner.NewRenderer(env, writes, sessions, exe, a.renderJail(jailDir), a.cfg.Crawl.PageTimeout)
	if err != nil {
		return nil, func() {}, why, err
	}
	return b, func() { b.Close() }, why, nil
}

// crawlCheck is doctor's line on the crawl engine (doctor.CrawlEngine).
func (a *app) crawlCheck() doctor.Check {
	exe, why, err := a.crawlEngine()
	return doctor.CrawlEngine(exe, why, err, a.cfg.Crawl.Engine == engineStatic)
}

// jailCheck is doctor's line on the renderer's jail, checked from inside
// the jail the run's browser gets (doctor.RenderJail); no browser runs
// with crawl.engine static or no browser found.
func (a *app) jailCheck() doctor.Check {
	c := doctor.Check{Name: "renderer jail"}
	if a.cfg.Crawl.Engine == engineStatic {
		c.OK, c.Detail = true, "no browser runs (crawl.engine is static)"
		return c
	}
	exe, err := a.findChromium()
	if err != nil {
		c.OK, c.Detail = true, fmt.Sprintf("no browser runs: %v", err)
		return c
	}
	prot, err := headless.CheckJail(context.Background(), a.renderJail(""), exe)
	return doctor.RenderJail(prot, err, a.cfg.Crawl.Engine == engineBrowser)
}
