package browser

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/qafleet/fleetd/crawl"
)

// The rendering crawl behind a login (issue 33). RenderAs opens a page as
// a signed-in identity: the identity's credentials (its cookies, its
// bearer token) are added by the tab's Fetch domain, at the moment each
// request is let through, to the requests for the origin the identity
// signed in at, and to nothing else. The fences:
//
//   - the session comes from Config.Session, asked at every RenderAs (the
//     caller's dial is read there: below exercise it refuses and nothing
//     is opened); nil refuses every RenderAs;
//   - a request to a sign-out link (crawl.SignOut) or to one of the
//     session's own Never URLs (its logout endpoint) is failed inside the
//     browser, whoever asked for it: the document, a script, a redirect;
//   - writes stay with Config.Write, as in every render: a session adds no
//     write;
//   - what the render leaves in the browser's cookie jar (cookies a
//     signed-in page set) is cleared when it ends, so a later render, and
//     every render at observe, carries nothing of the session;
//   - the proxy (workers' requests) never adds a session: only the tab's
//     own requests carry one.

// Session is a signed-in identity's credentials, as the browser attaches
// them.
type Session struct {
	// Identity names the identity (a, b, admin), for notes.
	Identity string
	// Origin is scheme://host[:port] the identity signed in at: only
	// requests to it carry Header.
	Origin string
	// Header holds the credentials: Cookie and Authorization. Values are
	// never put in a result.
	Header http.Header
	// Never are URLs a signed-in render must never request (the
	// session's logout endpoint), besides every crawl.SignOut link.
	Never []string
}

// ErrNoSession is returned by RenderAs when Config.Session is nil.
var ErrNoSession = errors.New("no sessions: the rendering crawl behind a login is off")

// ErrSignOut is returned by RenderAs for a sign-out URL, and fails every
// request to one inside a signed-in render.
var ErrSignOut = errors.New("a sign-out link: never fetched with a session")

// RenderAs opens rawURL as Render does, as identity: see the top of this
// file. It fails, opening nothing, when rawURL is a sign-out link or
// Config.Session refuses the identity.
func (b *Browser) RenderAs(ctx context.Context, rawURL, identity string) (crawl.Rendered, error) {
	if b.cfg.Session == nil {
		return crawl.Rendered{URL: rawURL}, ErrNoSession
	}
	s, err := b.cfg.Session(ctx, identity)
	if err != nil {
		return crawl.Rendered{URL: rawURL}, fmt.Errorf("render %s as %s: %w", rawURL, identity, err)
	}
	if s.Identity == "" {
		s.Identity = identity
	}
	if s.refused(rawURL) {
		return crawl.Rendered{URL: rawURL}, fmt.Errorf("render %s as %s: %w", rawURL, identity, ErrSignOut)
	}
	return b.open(ctx, rawURL, nil, &s)
}

// refused reports whether a signed-in render must not request rawURL.
func (s *Session) refused(rawURL string) bool {
	if crawl.SignOut(rawURL) {
		return true
	}
	for _, n := range s.Never {
		if n != "" && samePath(n, rawURL) {
			return true
		}
	}
	return false
}

func samePath(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && strings.EqualFold(ua.Host, ub.Host) && strings.TrimSuffix(ua.Path, "/") == strings.TrimSuffix(ub.Path, "/")
}

// covers reports whether a request to rawURL carries the session: the
// same scheme, host and port as Origin.
func (s *Session) covers(rawURL string) bool {
	u, err := url.Parse(rawURL)
	o, err2 := url.Parse(s.Origin)
	return err == nil && err2 == nil && o.Host != "" && u.Scheme == o.Scheme && strings.EqualFold(u.Host, o.Host)
}

// headers are the request's headers with the session's added (replacing
// any of the same name).
func (s *Session) headers(req network.Headers) []*fetch.HeaderEntry {
	var out []*fetch.HeaderEntry
	for k, v := range req {
		if s.Header.Get(k) != "" {
			continue
		}
		out = append(out, &fetch.HeaderEntry{Name: k, Value: fmt.Sprint(v)})
	}
	for k, vs := range s.Header {
		if len(vs) > 0 {
			out = append(out, &fetch.HeaderEntry{Name: k, Value: strings.Join(vs, "; ")})
		}
	}
	return out
}
