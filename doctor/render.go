package doctor

import "github.com/qafleet/fleetd/browser"

// CrawlEngine is the line on the crawl engine the specialists use, from
// what cmd/fleetd's choice said: the browser's path (exe, "" when the
// rendering crawl is off) and why, or err when crawl.engine asks for a
// browser there is none of (fatal). static: crawl.engine is static, so no
// browser is expected. A missing browser is otherwise a warning: the text
// crawl runs instead.
func CrawlEngine(exe, why string, err error, static bool) Check {
	switch {
	case err != nil:
		return Check{Name: "crawl engine", Fatal: true, Detail: err.Error(),
			Fix: "install Chromium (Debian: apt-get install chromium), set crawl.chromium, or set crawl.engine: static"}
	case exe != "", static:
		return Check{Name: "crawl engine", OK: true, Detail: why}
	}
	return Check{Name: "crawl engine", Warn: true, Detail: why,
		Fix: "install Chromium (Debian: apt-get install chromium) to render pages that build themselves with JavaScript"}
}

// RenderJail is the line on the renderer's jail from what browser.CheckJail
// found inside it: which protections are on (the bwrap jail, Chromium's
// own sandbox, the key files and data dir out of its sight), or err when
// the jail could not be built: fatal when required (crawl.engine is
// browser), else a warning (the rendering crawl is off). Unjailed
// (crawl.jail: off) is a warning.
func RenderJail(prot browser.Protections, err error, required bool) Check {
	c := Check{Name: "renderer jail"}
	const fix = "apt-get install bubblewrap and allow user namespaces (sysctl kernel.unprivileged_userns_clone=1; under systemd, RestrictNamespaces as configs/fleetd.service sets it), or set crawl.jail: off to render unjailed"
	switch {
	case err != nil && required:
		c.Fatal, c.Detail, c.Fix = true, err.Error()+": the rendering crawl refuses to start", fix
	case err != nil:
		c.Warn, c.Detail, c.Fix = true, err.Error()+": the rendering crawl is off", fix
	case !prot.Jailed:
		c.Warn, c.Detail = true, prot.String()
		c.Fix = "remove crawl.jail: off (needs bubblewrap: apt-get install bubblewrap)"
	case !prot.Sandboxed:
		c.Warn, c.Detail = true, prot.String()
		c.Fix = "allow nested user namespaces (kernel.unprivileged_userns_clone=1, no seccomp policy refusing clone(CLONE_NEWUSER)) so Chromium's own sandbox can start"
	default:
		c.OK, c.Detail = true, prot.String()
	}
	return c
}
