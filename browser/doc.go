// Package browser is the rendering crawl's adapter: headless Chromium,
// driven over the DevTools protocol with chromedp, opens one page at a time
// and reports what the page did (crawl.Rendered): the DOM after its scripts
// ran, every request it made, uncaught exceptions, console errors, failed
// subresources, Content-Security-Policy violations, mixed content and the
// dialogs it opened.
//
// Nothing the browser asks for leaves the fetch allowlist. Two fences, both
// fed by the caller's Config.Allow:
//
//   - every request of the page (documents, subresources, fetch and XHR,
//     redirects hop by hop) is paused with the DevTools Fetch domain and
//     either continued, after Config.Pace granted it a slot (the tools'
//     per-host pacing), or failed as blocked by the client;
//   - the browser's only way out is a proxy inside this package
//     (--proxy-server, loopback included), which refuses every connection
//     to a host:port off the allowlist: WebSockets, workers and anything
//     else the Fetch domain does not see. It ends the browser's TLS with a
//     key only this browser trusts (--ignore-certificate-errors-spki-list)
//     and verifies the site's certificate itself, so it reads every
//     request of every target. No UDP leaves: WebRTC uses no UDP that is
//     not proxied, QUIC and WebRTC's mDNS are off.
//
// The dial reaches the page: every write a page tries (a method other than
// GET and HEAD, a WebSocket handshake) is asked of Config.Write by both
// fences before it is sent, and held (failed in the browser, refused by
// the proxy) when refused; a write the tab let through is not asked again
// at the proxy. nil Config.Write holds every write.
//
// A page is bounded by Config.PageTimeout: it settles when no request is in
// flight, its dedicated workers' included (workers.go: the tab's Fetch
// domain follows them from request to response; shared and service workers
// outlive the page and are not waited for), and the DOM has not
// changed for Config.Quiet (a MutationObserver
// in an isolated world reports changes through a binding); a page that
// never settles, a script that loops, dialogs that keep opening or a
// redirect off the allowlist end the render at the budget with a note.
// Dialogs are dismissed as they open. Each page gets a fresh tab.
//
// The browser process starts on the first Render and stops in Close, which
// also kills any Chromium child process left with the run's profile
// directory: no browser process outlives its Browser.
//
// Chromium runs jailed (jail.go, Config.Jail): under prlimit(1) with the
// sandbox's rlimits and bubblewrap, in mount, pid and user namespaces of
// its own where only the system's read-only files and the run's jail
// directory (its home, profile and only writable place) are visible, the
// key files and data dir (Jail.Hide) not at all, checked from inside
// before every start; inside, it is an unprivileged uid and keeps its own
// sandbox on. Where the jail cannot be built Render fails with ErrNoJail;
// only Jail.Off renders unjailed. Protections says which are on.
//
// Find locates Chromium (FLEETD_CHROMIUM, then the usual names on PATH);
// ErrNoBrowser says none is installed, and the rendering crawl is then off.
package browser
