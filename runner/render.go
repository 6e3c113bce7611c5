package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"time"

	headless "github.com/qafleet/fleetd/browser"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/qatools"
)

// NewRenderer starts a run's rendering crawl: headless Chromium (exe) in
// jail, whose every request goes through the target's fetch allowlist (the
// connect-time checks qa_fetch makes included) and the tools' per-host
// pacing, and every write a page tries is decided by writes (the dial, read
// at each one, and the run's write budget). With sessions (not nil) it may
// also render as an identity the run's qa_login signed in, only while the
// dial allows exercise, never requesting a sign-out link (browser.RenderAs).
// Close stops it.
func NewRenderer(env *Env, writes *qatools.PageWrites, sessions *qatools.Sessions, exe string, jail headless.Jail, pageTimeout time.Duration) (*headless.Browser, error) {
	allow, err := qatools.NewAllowlist(env.Target.FetchAllow)
	if err != nil {
		return nil, fmt.Errorf("target.fetch_allow: %w", err)
	}
	pacer := env.Pacer
	dial := allow.DialContext(cmp.Or(pageTimeout, headless.DefaultPageTimeout), nil)
	return headless.New(headless.Config{
		Exec: exe, Allow: allow.Allows, PageTimeout: pageTimeout, Jail: jail,
		Write: func(w headless.Write) error {
			return writes.Decide(w.Method, w.URL, w.Via)
		},
		// What an allowed write's answer names as created, the run's
		// qa_submit may DELETE (and the probe's undo does).
		Created: func(w headless.Write, u string) { writes.Created(w.Method, w.URL, u) },
		Session: browserSession(env.Target, sessions),
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
}

// browserSession gives the browser the sessions of the identities the
// run's qa_login signed in (qatools.Sessions.Browser: at exercise only),
// with target.auth.logout among the URLs it never requests; nil sessions:
// the browser renders as nobody.
func browserSession(tg fleet.Target, sessions *qatools.Sessions) func(context.Context, string) (headless.Session, error) {
	if sessions == nil {
		return nil
	}
	var logout string
	if tg.Auth != nil {
		logout = tg.Auth.Logout
	}
	return func(ctx context.Context, identity string) (headless.Session, error) {
		s, err := sessions.Browser(ctx, identity, logout)
		return headless.Session{Identity: identity, Origin: s.Origin, Header: s.Header, Never: s.Never}, err
	}
}
