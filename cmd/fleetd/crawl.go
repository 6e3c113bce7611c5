package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	headless "github.com/qafleet/fleetd/browser"
	"github.com/qafleet/fleetd/qatools"
	"github.com/qafleet/fleetd/specialists/probe"
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
}

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
	if c.PageTimeout < 0 {
		errs = append(errs, fmt.Errorf("crawl.page_timeout: must not be negative, got %s", c.PageTimeout))
	}
	return errors.Join(errs...)
}

// crawlEngine decides the crawl engine: the browser's path when the
// rendering crawl is on ("" when off), and why. err is set only when the
// config asks for the browser and there is none.
func (a *app) crawlEngine() (exe, why string, err error) {
	c := a.cfg.Crawl
	if c.Engine == engineStatic {
		return "", "crawl.engine is static: pages are read as text only", nil
	}
	exe, ferr := a.findChromium()
	switch {
	case ferr == nil:
		return exe, fmt.Sprintf("rendering crawl on: %s renders each crawled HTML page", exe), nil
	case c.Engine == engineBrowser:
		return "", "", fmt.Errorf("crawl.engine is browser, but %w", ferr)
	}
	return "", fmt.Sprintf("rendering crawl off: %v; pages are read as text only", ferr), nil
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

// renderer returns the run's rendering crawl (nil when it is off) and the
// function that stops its browser: every request the browser makes goes
// through the target's fetch allowlist and the tools' per-host pacing, and
// every write a page tries is decided by writes (the dial, read at each
// one, and the run's write budget).
func (a *app) renderer(env *fleetEnv, writes *qatools.PageWrites) (probe.Renderer, func(), error) {
	exe, _, err := a.crawlEngine()
	if err != nil || exe == "" {
		return nil, func() {}, err
	}
	allow, err := qatools.NewAllowlist(env.Target.FetchAllow)
	if err != nil {
		return nil, func() {}, fmt.Errorf("target.fetch_allow: %w", err)
	}
	pacer := env.Pacer
	dial := allow.DialContext(cmp.Or(a.cfg.Crawl.PageTimeout, headless.DefaultPageTimeout), nil)
	b, err := headless.New(headless.Config{
		Exec: exe, Allow: allow.Allows, PageTimeout: a.cfg.Crawl.PageTimeout,
		Write: func(w headless.Write) error {
			return writes.Decide(w.Method, w.URL, w.Via)
		},
		// qa_fetch's connect-time checks: a name on a wildcard pattern that
		// resolves into the host's own network is refused, as for qa_fetch.
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dial(ctx, network, addr)
			if errors.Is(err, qatools.ErrNotAllowed) {
				err = fmt.Errorf("%w: %w", headless.ErrRefused, err)
			}
			return c, err
		},
		Pace: func(ctx context.Context, raw string) error {
			if pacer == nil {
				return nil
			}
			u, err := url.Parse(raw)
			if err != nil {
				return err
			}
			_, err = pacer.Wait(ctx, u.Hostname())
			return err
		},
	})
	if err != nil {
		return nil, func() {}, err
	}
	return b, func() { b.Close() }, nil
}

// crawlCheck is doctor's line on the crawl engine: which one the
// specialists use. A missing browser is a warning (the text crawl runs
// instead) unless crawl.engine asks for the browser.
func (a *app) crawlCheck() check {
	exe, why, err := a.crawlEngine()
	switch {
	case err != nil:
		return check{name: "crawl engine", fatal: true, detail: err.Error(),
			fix: "install Chromium (Debian: apt-get install chromium), set crawl.chromium, or set crawl.engine: static"}
	case exe != "":
		return check{name: "crawl engine", ok: true, detail: why}
	case a.cfg.Crawl.Engine == engineStatic:
		return check{name: "crawl engine", ok: true, detail: why}
	}
	return check{name: "crawl engine", warn: true, detail: why,
		fix: "install Chromium (Debian: apt-get install chromium) to render pages that build themselves with JavaScript"}
}
