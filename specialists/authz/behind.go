package authz

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/qafleet/fleetd/crawl"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/specialists/replay"
)

// behindMax bounds the pages and routes the crawl behind the login
// fetches with a session.
const behindMax = 10

// signOut reports whether a URL ends a session: the flow's logout
// endpoint, or a path that says log out or sign out. The crawl behind the
// login never fetches one: a GET sign-out link would end the session the
// checks after it use.
func (r *run) signOut(u string) bool {
	return reLogout.MatchString(pathOf(u)) || r.flow.Logout.URL != "" && pathOf(u) == pathOf(r.flow.Logout.URL)
}

// crawlBehind fetches, as identity a, the pages and API routes only a
// session reaches: from the who-am-I endpoint and a's own documented
// resources, breadth first along the links their answers hold
// (crawl.Links: HTML, JSON strings, ...). GET only, on the fetch
// allowlist, never a sign-out link nor the sign-in's own endpoints, at
// most behindMax. A page that answers a with 2xx and refuses no session
// is behind the login; internals it leaks (replay.ScanLeaks) are a finding
// the public crawl could not make. It returns those pages.
func (r *run) crawlBehind(a *identity) []string {
	var queue, behind []string
	seen := map[string]bool{}
	add := func(u string) {
		if p, err := url.Parse(u); err == nil {
			p.Fragment = ""
			u = p.String()
		}
		if u == "" || seen[u] || r.signOut(u) || pathOf(u) == pathOf(r.flow.Nonce.URL) || pathOf(u) == pathOf(r.flow.Verify.URL) ||
			!replay.AllowedURL(r.p.Target().FetchAllow, u) || strings.ContainsAny(u, "{}") {
			return
		}
		seen[u] = true
		queue = append(queue, u)
	}
	add(r.flow.Me.URL)
	for _, e := range r.flow.Objects {
		add(Fill(e.URL, a.addr, a.id))
	}
	leaked := 0
	own := regexp.MustCompile(`(?i)` + regexp.QuoteMeta(a.addr))
	if a.addr == "" {
		own = regexp.MustCompile(`$^`)
	}
	for fetched := 0; len(queue) > 0 && fetched < behindMax && r.p.Room(3); fetched++ {
		u := queue[0]
		queue = queue[1:]
		res := r.fetch(u, a.name)
		if !ok2xx(res) {
			continue
		}
		if anon := r.fetch(u, ""); replay.Status(anon) < 400 {
			continue // public: the public crawl's
		}
		behind = append(behind, u)
		body := replay.Body(res)
		if leaks := replay.ScanLeaks(body); len(leaks) > 0 && leaked < 2 {
			leaked++
			u := own.ReplaceAllString(u, "{address}") // no identity's address in a finding
			r.p.File(fleet.SeverityMedium, replay.SurfaceOf(r.p.Target(), u), fmt.Sprintf(
				"Leaked internals behind the login: GET %s, a page only a signed-in session reaches (without one it is refused), shows %s. Expected internal errors logged, not shown to users. Steps: qa_login {identity: a}, qa_fetch {url: %s, as: a}.",
				pathOf(u), replay.DescribeLeaks(leaks), u), "", nil)
		}
		for _, l := range crawl.Links(u, replay.Str(res, "content_type"), body) {
			if l.Method == "" || l.Method == "GET" {
				add(l.URL)
			}
		}
	}
	if len(behind) > 0 {
		var paths []string
		for _, u := range behind {
			paths = append(paths, own.ReplaceAllString(pathOf(u), "{address}"))
		}
		r.p.Notef("behind the login (identity a): %d pages and routes only a session reaches: %s", len(behind), strings.Join(replay.First(paths, 8), ", "))
	}
	return behind
}
