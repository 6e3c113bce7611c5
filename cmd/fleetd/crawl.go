package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	headless "github.com/qafleet/fleetd/browser"
	"github.com/qafleet/fleetd/doctor"
	"github.com/qafleet/fleetd/runner"
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

func (c CrawlConfig) validate() error {
	var errs []error
	switch c.Engine {
	case "", runner.EngineAuto, runner.EngineStatic, runner.EngineBrowser:
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

// crawl is crawl: as values (runner.Crawl: the engine chosen, the run's
// renderer): a browser path resolves against the config file.
func (a *app) crawl() runner.Crawl {
	c := a.cfg.Crawl
	exe := c.Chromium
	if strings.ContainsRune(exe, filepath.Separator) {
		exe = a.cfg.resolve(exe)
	}
	return runner.Crawl{Engine: c.Engine, Chromium: exe, PageTimeout: c.PageTimeout, Jail: a.renderJail()}
}

// renderJail is the browser's jail (a run's jail dir is added per run):
// out of its sight the data dir, the key files and the config (API keys
// reach it through ${ENV}, but it is the daemon's).
func (a *app) renderJail() headless.Jail {
	hide := []string{a.dataDir()}
	if a.cfg.path != "" {
		hide = append(hide, abs(a.cfg.path))
	}
	for _, k := range []string{a.cfg.Chain.FleetKeyFile, a.cfg.Chain.SponsorKeyFile} {
		if k != "" {
			hide = append(hide, abs(a.cfg.resolve(k)))
		}
	}
	return headless.Jail{Off: a.cfg.Crawl.Jail == jailOff, Hide: hide}
}

// crawlCheck is doctor's line on the crawl engine (doctor.CrawlEngine).
func (a *app) crawlCheck() doctor.Check {
	exe, why, err := a.crawl().Choose()
	return doctor.CrawlEngine(exe, why, err, a.cfg.Crawl.Engine == runner.EngineStatic)
}

// jailCheck is doctor's line on the renderer's jail, checked from inside
// the jail the run's browser gets (doctor.RenderJail); no browser runs
// with crawl.engine static or no browser found.
func (a *app) jailCheck() doctor.Check {
	c := doctor.Check{Name: "renderer jail"}
	if a.cfg.Crawl.Engine == runner.EngineStatic {
		c.OK, c.Detail = true, "no browser runs (crawl.engine is static)"
		return c
	}
	exe, err := a.crawl().FindBrowser()
	if err != nil {
		c.OK, c.Detail = true, fmt.Sprintf("no browser runs: %v", err)
		return c
	}
	prot, err := headless.CheckJail(context.Background(), a.renderJail(), exe)
	return doctor.RenderJail(prot, err, a.cfg.Crawl.Engine == runner.EngineBrowser)
}
