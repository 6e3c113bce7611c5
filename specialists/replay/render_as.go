package replay

import (
	"context"
	"strings"

	"github.com/qafleet/fleetd/crawl"
)

// SessionRenderer is a Renderer that also renders as an identity the
// run's qa_login signed in (package browser's Browser.RenderAs): the
// rendering crawl behind the login. It refuses below exercise (the dial
// read at each call) and never requests a sign-out link.
type SessionRenderer interface {
	RenderAs(ctx context.Context, url, identity string) (crawl.Rendered, error)
}

// signedInBudget bounds the pages rendered as a signed-in identity a run,
// apart from the public rendering crawl's budget (the login's pages come
// after it).
const signedInBudget = 12

// asKey keys a signed-in render among a run's renders.
func asKey(identity, url string) string { return "as:" + identity + " " + url }

// RendersAs reports whether this run's rendering crawl can render as a
// signed-in identity.
func (p *Play) RendersAs() bool {
	if p.cfg.Renders == nil {
		return false
	}
	_, ok := p.cfg.Renders.r.(SessionRenderer)
	return ok
}

// RenderAs opens url in the run's browser as identity (a name qa_login
// signed in), once per run as Render does. ok is false when the run cannot
// render as an identity, url is off the allowlist or a sign-out link, the
// signed-in budget (signedInBudget) is spent, or the browser refused (the
// dial below exercise) or failed: a skip says why.
func (p *Play) RenderAs(url, identity string) (crawl.Rendered, bool) {
	rs := p.cfg.Renders
	if !p.RendersAs() || !AllowedURL(p.t.FetchAllow, url) || crawl.SignOut(url) {
		return crawl.Rendered{}, false
	}
	key := asKey(identity, url)
	rs.mu.Lock()
	_, kept := rs.m[key]
	n := 0
	for k := range rs.m {
		if strings.HasPrefix(k, "as:") {
			n++
		}
	}
	rs.mu.Unlock()
	if !kept && n >= signedInBudget {
		p.Notef("rendering crawl behind the login: page budget (%d) spent", signedInBudget)
		return crawl.Rendered{}, false
	}
	ctx := p.ctx()
	rd, err, _ := rs.do(ctx, key, func() (crawl.Rendered, error) {
		return rs.r.(SessionRenderer).RenderAs(ctx, url, identity)
	})
	if err != nil {
		p.Skip("rendering %s as identity %s failed (%s)", url, identity, Clip(err.Error(), 120))
		return crawl.Rendered{}, false
	}
	return rd, true
}
