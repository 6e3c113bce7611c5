package specialists

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/qafleet/fleetd/crawl"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/specialists/authz"
	"github.com/qafleet/fleetd/specialists/replay"
)

// Stored XSS behind the login (issue 33): the rendering crawl behind a
// SIWE login, and stored injection on the pages only a signed-in user
// sees. It runs after authz.Run, with the fresh identities it signed in
// (a and b), and only through the run's browser rendering as one of them
// (replay.RenderAs: refused below exercise, never a sign-out link).
//
//  1. The crawl: from the who-am-I answer (fetched as a) and a's own
//     documented resources, the HTML pages a's session reaches are
//     rendered as a, and the links their rendered DOM holds followed (GET
//     only, on the allowlist, never a sign-out link, nor the sign-in's
//     endpoints; at most signedInPages renders). A page the public crawl
//     read comes after the others (an app's shell may fill itself only
//     for a session).
//  2. Stored injection: each documented update of a's own resource (PATCH
//     or PUT, with the fields the docs list as writable) gets, in each
//     writable string field, markup calling the renderer's canary hook
//     with a canary and the field's name (qa_submit as a). The pages of
//     the crawl are rendered again as b (another fresh account), then as
//     a; a field is vulnerable when the browser ran exactly that canary,
//     and again after a second write with a fresh canary. The fields get
//     their values back afterwards, as a, and are read again to be sure
//     (replay.RestoreFields): what a refusal, a platform that ignores the
//     write or no write left keeps is listed as left on the platform.
//
// Findings name who did what (identity a wrote, identity b's browser ran
// it) with no address, key or session value.

// Limits of the signed-in rendering crawl.
const (
	signedInPages   = 4  // pages rendered as a in the crawl
	signedInFetches = 10 // qa_fetch calls as a to find them
	signedInUpdates = 2  // documented updates written with canaries
)

// signedInPage is a page behind the login as identity a's browser
// rendered it.
type signedInPage struct {
	url string
	r   crawl.Rendered
}

// secSignedInStored runs the crawl and the stored injection above. ids
// are the identities authz.Run signed in, by name.
func secSignedInStored(p *replay.Play, pages []replay.Page, ids map[string]string) {
	if len(ids) == 0 || ids["a"] == "" {
		return // nobody signed in: at observe, or no login
	}
	if !p.RendersAs() {
		p.Notef("no rendering crawl that signs in: the pages behind the login were read as text only")
		return
	}
	flow := authz.Learn(pages, p.Target().Auth)
	crawled := signedInCrawl(p, flow, ids["a"])
	if len(crawled) == 0 {
		return
	}
	var paths []string
	for _, pg := range crawled {
		paths = append(paths, siHideAddr(siPath(pg.url), ids))
	}
	p.Notef("rendering crawl behind the login (identity a, a fresh account): %d pages rendered: %s", len(crawled), strings.Join(paths, ", "))
	updates := 0
	for _, e := range flow.Updates {
		if updates == signedInUpdates {
			break
		}
		if len(e.Writable) == 0 || e.Method != "PATCH" && e.Method != "PUT" {
			continue
		}
		updates++
		signedInStore(p, e, crawled, ids)
	}
}

// signedInCrawl finds and renders, as a, the HTML pages only a session
// reaches: see the top of this file.
func signedInCrawl(p *replay.Play, flow authz.Flow, addr string) []signedInPage {
	public := map[string]bool{}
	for _, pg := range p.Crawl() {
		if pg.OK() {
			public[replay.StripFragment(pg.URL)] = true
		}
	}
	skip := func(u string) bool {
		return u == "" || crawl.SignOut(u) || strings.ContainsAny(u, "{}") ||
			siSamePath(u, flow.Nonce.URL) || siSamePath(u, flow.Verify.URL) || siSamePath(u, flow.Logout.URL) ||
			!replay.AllowedURL(p.Target().FetchAllow, u)
	}
	// A page the public crawl read waits until the others are done: an
	// app's shell fills itself only for a session, but most are the
	// public pages a signed-in page links back to.
	var queue, later []string
	seen := map[string]bool{}
	add := func(u string) {
		u = replay.StripFragment(u)
		if seen[u] || skip(u) {
			return
		}
		seen[u] = true
		if public[u] {
			later = append(later, u)
		} else {
			queue = append(queue, u)
		}
	}
	add(flow.Me.URL)
	for _, e := range flow.Objects {
		add(authz.Fill(e.URL, addr, ""))
	}
	var out []signedInPage
	for fetched := 0; len(queue)+len(later) > 0 && len(out) < signedInPages && fetched < signedInFetches; fetched++ {
		if len(queue) == 0 {
			queue, later = later, nil
		}
		u := queue[0]
		queue = queue[1:]
		if !p.Can("qa_fetch") || !p.Room(2) {
			break
		}
		res := p.Call("qa_fetch", map[string]any{"url": u, "as": "a"})
		if st := replay.Status(res); st < 200 || st > 299 {
			continue
		}
		ct := replay.Str(res, "content_type")
		if crawl.Sniff(u, ct, replay.Body(res)) != crawl.KindHTML {
			for _, l := range crawl.Links(u, ct, replay.Body(res)) {
				if l.Method == "" || l.Method == "GET" {
					add(l.URL)
				}
			}
			continue
		}
		r, ok := p.RenderAs(u, "a")
		if !ok || r.Status < 200 || r.Status > 299 {
			continue
		}
		out = append(out, signedInPage{url: u, r: r})
		for _, l := range crawl.Links(u, "text/html", r.HTML) {
			if (l.Method == "" || l.Method == "GET") && (l.Kind == "a" || l.Kind == "area" || l.Kind == "iframe") {
				add(l.URL)
			}
		}
	}
	return out
}

// signedInStore writes canaries into the writable fields of a's own
// resource at e and renders the crawled pages as b, then as a.
func signedInStore(p *replay.Play, e authz.Endpoint, pages []signedInPage, ids map[string]string) {
	target := authz.Fill(e.URL, ids["a"], "")
	shown := siHideAddr(siPath(target), ids)
	if !p.Can("qa_submit") || !p.Room(4) {
		return
	}
	body := replay.Body(p.Call("qa_fetch", map[string]any{"url": target, "as": "a"}))
	orig := siJSONObj(body)
	var before map[string]json.RawMessage // what the restore writes back and compares with
	json.Unmarshal([]byte(body), &before)
	var fields []string
	for _, f := range e.Writable {
		if _, isStr := orig[f].(string); isStr && !slices.Contains(identityKeys, strings.ToLower(f)) {
			fields = append(fields, f)
		}
	}
	if len(fields) == 0 {
		p.Notef("stored XSS behind the login: %s %s lists no writable text field a's resource holds", e.Method, shown)
		return
	}
	left := -1
	write := func(vals map[string]any) bool {
		if left >= 0 && left < 2 || !p.Can("qa_submit") || !p.Room(1) {
			return false
		}
		r := p.Call("qa_submit", map[string]any{"url": target, "method": e.Method, "enctype": "json", "json": string(replay.Marshal(vals)), "as": "a"})
		if _, ok := r["writes_left"]; ok {
			left = replay.Int(r, "writes_left")
		}
		return replay.Answered(r) && replay.Status(r) < 300
	}
	payload := func(canary string) map[string]any {
		vals := map[string]any{}
		if e.Method == "PUT" {
			for k, v := range orig {
				vals[k] = v
			}
		}
		for _, f := range fields {
			vals[f] = strings.ReplaceAll(formText(canary), "{field}", f)
		}
		return vals
	}
	// ran renders the pages as viewer and returns, per field, the first
	// page its canary ran on.
	ran := func(canary, viewer string, only []string) map[string]string {
		hits := map[string]string{}
		for _, pg := range pages {
			if only != nil && !slices.Contains(only, pg.url) {
				continue
			}
			r, ok := p.RenderAs(storedFragment(pg.url, canary+"-"+viewer), viewer)
			if !ok {
				continue
			}
			for _, d := range r.Dialogs {
				if f, ok := strings.CutPrefix(d, canary+"-"); ok && slices.Contains(fields, f) && hits[f] == "" {
					hits[f] = pg.url
				}
			}
		}
		return hits
	}
	canary := domCanary(p, target, "signed-in", "stored1")
	if !write(payload(canary)) {
		p.Notef("stored XSS behind the login: writing %s %s as identity a was refused", e.Method, shown)
		return
	}
	// b first: a value one account stores, run in another's browser, is
	// the worse finding; a's own pages only where b's showed nothing.
	byB := map[string]string{}
	if ids["b"] != "" {
		byB = ran(canary, "b", nil)
	}
	byA := ran(canary, "a", nil)
	type hit struct{ field, viewer, page string }
	var found []hit
	for _, f := range fields {
		viewer, page := "b", byB[f]
		if page == "" {
			viewer, page = "a", byA[f]
		}
		if page == "" {
			continue
		}
		fresh := domCanary(p, target, "signed-in-"+f, "stored2")
		if !write(payload(fresh)) || ran(fresh, viewer, []string{page})[f] == "" {
			p.Notef("a stored XSS canary in field %s of %s ran once behind the login and not after a second write", f, shown)
			continue
		}
		found = append(found, hit{f, viewer, page})
	}
	// Not deferred: a playbook's call stops its program to be made, and a
	// deferred call would then be made in its place.
	undo := "The field got its value back afterwards (read back to be sure)."
	if !p.RestoreFields(replay.Restore{URL: target, Shown: shown, Whose: "identity a's own account", Method: e.Method, As: "a", Before: before, Fields: fields}, nil) {
		undo = "Restoring the field failed: the run record lists it as left on the platform."
	}
	for _, h := range found {
		f, viewer, page := h.field, h.viewer, h.page
		who, sev, impact := "identity b (another fresh account)", fleet.SeverityHigh,
			"Any account runs script in the browser of every signed-in user who opens the page, with their session."
		if viewer == "a" {
			who, sev, impact = "identity a itself", fleet.SeverityMedium,
				"Only the account's own pages showed it (self-XSS): anyone who can set the field (a forged request, a shared device) runs script in that account's session."
		}
		p.File(sev, surfaceDOM, fmt.Sprintf(
			"Stored XSS behind the login (CWE-79): identity a (a fresh account) stored markup in its field %q with %s %s, a write the docs list (writable fields: %s), and it ran when %s opened %s, a page only a signed-in user sees: the browser called fleetd's renderer hook with CANARY-%s, and again after a second write with a fresh canary. %s Expected stored values put into the page as text (escaped), never as HTML. Steps: qa_login {identity: a}, qa_login {identity: b}, qa_submit {url: %s, method: %s, json: {%q: <details open ontoggle=...>}, as: a}, then open %s signed in as %s. %s",
			f, e.Method, shown, strings.Join(e.Writable, ", "), who, siPath(page), f, impact, shown, e.Method, f, siPath(page), viewer, undo), "", nil)
	}
}

// siJSONObj is body's top-level JSON object, nil when it is none.
func siJSONObj(body string) map[string]any {
	var m map[string]any
	if json.Unmarshal([]byte(body), &m) != nil {
		return nil
	}
	return m
}

// siHideAddr puts {address} for the identities' addresses in s: no
// identity's address goes into a note or a finding.
func siHideAddr(s string, ids map[string]string) string {
	for _, a := range ids {
		if a != "" {
			s = strings.ReplaceAll(strings.ReplaceAll(s, a, "{address}"), strings.ToLower(a), "{address}")
		}
	}
	return s
}

func siPath(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return u.Path
}

// siSamePath reports whether a and b name the same host and path.
func siSamePath(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && strings.EqualFold(ua.Host, ub.Host) && strings.TrimSuffix(ua.Path, "/") == strings.TrimSuffix(ub.Path, "/")
}
