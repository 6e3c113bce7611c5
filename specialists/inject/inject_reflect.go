package inject

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/qafleet/fleetd/crawl"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/specialists/replay"
	"golang.org/x/net/html"
)

// Reflection limits.
const (
	refURLs     = 20 // URL patterns probed
	refParams   = 3  // parameters per URL
	refLandings = 3  // places per parameter tried with a payload
	travDepth   = 8  // ../ steps of a traversal payload
)

// reflParam is one parameter of a discovered URL.
type reflParam struct {
	Name  string // query key, or "path segment N"
	Query bool
	Index int // the path segment, for path parameters
	Value string
}

// reflTarget is a discovered URL and its parameters.
type reflTarget struct {
	pattern string // origin, path with parameter segments as *, sorted query keys
	u       *url.URL
	params  []reflParam
}

var (
	fileLike   = regexp.MustCompile(`^[A-Za-z0-9_.~-]*[A-Za-z0-9_~-]\.[A-Za-z0-9]{1,5}$`)
	numeric    = regexp.MustCompile(`^[0-9]{1,12}$`)
	winIniRE   = regexp.MustCompile(`(?i)^\s*; for 16-bit app support|^\[(?:fonts|extensions|mci extensions)\]\s*$`)
	fileParams = map[string]bool{
		"file": true, "filename": true, "path": true, "filepath": true, "page": true, "doc": true, "document": true,
		"template": true, "tpl": true, "include": true, "inc": true, "folder": true, "dir": true, "img": true,
		"image": true, "download": true, "attachment": true, "load": true, "read": true, "view": true,
		"src": true, "resource": true, "asset": true, "log": true, "f": true, "p": true,
	}
	redirectParams = map[string]bool{
		"redirect": true, "redirect_uri": true, "redirect_url": true, "redirecturi": true, "redirecturl": true,
		"return": true, "return_to": true, "returnto": true, "returnurl": true, "return_url": true, "next": true,
		"url": true, "goto": true, "go": true, "dest": true, "destination": true, "continue": true, "redir": true,
		"r": true, "u": true, "to": true, "out": true, "forward": true, "callback": true, "success_url": true,
		"successurl": true, "fail_url": true, "back": true, "backurl": true, "returnpath": true,
	}
)

// fetchRaw is qa_fetch that returns a redirect itself, with every header.
func fetchRaw(p *replay.Play, u string) fleet.Result {
	return p.Call("qa_fetch", map[string]any{"url": u, "follow_redirects": false})
}

// reflectTargets lists the discovered URLs with query or path parameters:
// links and documented GET endpoints on the fetched pages, and the faces
// template's name segment, on allowlisted hosts, each pattern once.
func reflectTargets(p *replay.Play, pages []replay.Page) []reflTarget {
	var urls []string
	add := func(u string) {
		if u != "" && replay.AllowedURL(p.Target().FetchAllow, u) && !slices.Contains(urls, u) {
			urls = append(urls, u)
		}
	}
	if p.Target().Faces != "" && len(p.Target().Names) > 0 {
		add(p.Target().FaceURL(p.Target().Names[0]))
	}
	for _, pg := range pages {
		if !replay.Answered(pg.Res) || replay.Status(pg.Res) >= 400 {
			continue
		}
		add(pg.URL)
		b := replay.Body(pg.Res)
		for _, l := range extractLinks(pg.URL, b) {
			if filled, ok := fillPlaceholders(l, replay.FirstName(p.Target())); ok {
				add(filled)
			}
		}
		for _, e := range docEndpoints(pg.URL, b) {
			if filled, ok := fillPlaceholders(e.URL, replay.FirstName(p.Target())); ok && e.Method == "GET" {
				add(filled)
			}
		}
		if looksHTML(pg.Res) {
			for _, f := range getForms(pg.URL, b) {
				add(f)
			}
		}
	}
	faceSeg := -1
	if p.Target().Faces != "" {
		if fu, err := url.Parse(strings.ReplaceAll(p.Target().Faces, "{name}", "qanameqa")); err == nil {
			faceSeg = slices.IndexFunc(strings.Split(fu.EscapedPath(), "/"), func(s string) bool { return strings.Contains(s, "qanameqa") })
		}
	}
	var out []reflTarget
	seen := map[string]bool{}
	for _, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil || strings.SplitN(raw, "?", 2)[0] == p.Target().Call {
			continue // the call endpoint is POST, probed by the agent rules
		}
		rt := reflTarget{u: u}
		segs := strings.Split(u.EscapedPath(), "/")
		last := len(segs) - 1
		for last > 0 && segs[last] == "" {
			last--
		}
		isFace := p.Target().Faces != "" && replay.NameOfFace(p.Target(), raw) != ""
		pat := slices.Clone(segs)
		if isFace && faceSeg > 0 && faceSeg < len(segs) {
			rt.params = append(rt.params, reflParam{Name: "path segment " + fmt.Sprint(faceSeg), Index: faceSeg, Value: segs[faceSeg]})
			pat[faceSeg] = "*"
		} else if last > 0 && (fileLike.MatchString(segs[last]) || numeric.MatchString(segs[last])) {
			rt.params = append(rt.params, reflParam{Name: "path segment " + fmt.Sprint(last), Index: last, Value: segs[last]})
			pat[last] = "*"
		}
		var keys []string
		for _, kv := range strings.Split(u.RawQuery, "&") {
			k, v, _ := strings.Cut(kv, "=")
			key, err1 := url.QueryUnescape(k)
			val, err2 := url.QueryUnescape(v)
			if k == "" || err1 != nil || err2 != nil || slices.Contains(keys, key) {
				continue
			}
			keys = append(keys, key)
			rt.params = append(rt.params, reflParam{Name: key, Query: true, Value: val})
		}
		if len(rt.params) == 0 {
			continue
		}
		sorted := slices.Clone(keys)
		slices.Sort(sorted)
		rt.pattern = u.Scheme + "://" + u.Host + strings.Join(pat, "/")
		if len(sorted) > 0 {
			rt.pattern += "?" + strings.Join(sorted, "=&") + "="
		}
		if seen[rt.pattern] {
			continue
		}
		seen[rt.pattern] = true
		out = append(out, rt)
	}
	return replay.First(out, refURLs)
}

// with returns the target's URL with prm set to raw, which is inserted as
// is (already encoded as the probe wants it on the wire).
func (rt reflTarget) with(prm reflParam, raw string) string {
	path, query := rt.u.EscapedPath(), rt.u.RawQuery
	if prm.Query {
		var parts []string
		done := false
		for _, kv := range strings.Split(query, "&") {
			k, _, _ := strings.Cut(kv, "=")
			if key, err := url.QueryUnescape(k); err == nil && key == prm.Name && !done {
				kv, done = k+"="+raw, true
			}
			if kv != "" {
				parts = append(parts, kv)
			}
		}
		if !done {
			parts = append(parts, url.QueryEscape(prm.Name)+"="+raw)
		}
		query = strings.Join(parts, "&")
	} else {
		segs := strings.Split(path, "/")
		if prm.Index < len(segs) {
			segs[prm.Index] = raw
		}
		path = strings.Join(segs, "/")
	}
	s := rt.u.Scheme + "://" + rt.u.Host + path
	if query != "" {
		s += "?" + query
	}
	return s
}

// encode escapes a payload for where prm sits.
func (prm reflParam) encode(s string) string {
	if prm.Query {
		return url.QueryEscape(s)
	}
	return url.PathEscape(s)
}

// Reflected probes every discovered URL parameter, with the
// exercise rung only: a canary shows where the value lands (body, Location,
// other headers); then reflected XSS (a payload per landing, CWE-79), open
// redirect (CWE-601), CRLF header injection (CWE-113) and, for file-like
// parameters, path traversal (plain, encoded and double-encoded ../, CWE-22).
// One finding per (URL pattern, class).
func Reflected(p *replay.Play, pages []replay.Page) {
	if !p.Can("qa_fetch") {
		return
	}
	if !p.Exercised() {
		p.Skip("reflected injection and path probes send attack payloads: they run only at the exercise rung")
		return
	}
	targets := reflectTargets(p, pages)
	if len(targets) == 0 {
		p.Notef("no URL with a query or path parameter was found")
		return
	}
	for _, rt := range targets {
		host := rt.u.Host
		found := map[string]bool{}
		for _, prm := range replay.First(rt.params, refParams) {
			if p.HostBusy(host, nil) || !p.Room(2) {
				return
			}
			marker := tokenFor(p, "reflect", rt.pattern, prm.Name)
			r := fetchRaw(p, rt.with(prm, marker))
			if p.HostBusy(host, r) {
				return
			}
			if !replay.Answered(r) {
				continue
			}
			ls := []landing(nil)
			if looksHTML(r) {
				ls = findLandings(replay.Body(r), marker)
			}
			inLocation, inHeader := false, false
			for k, v := range replay.Headers(r) {
				if containsFold(v, marker) {
					inHeader = true
					inLocation = inLocation || k == "location"
				}
			}
			if len(ls) > 0 && !found["xss"] {
				found["xss"] = reflectXSS(p, rt, prm, ls)
			}
			if !found["redirect"] && prm.Query && (inLocation || redirectParams[strings.ToLower(prm.Name)] || looksLikeURL(prm.Value)) {
				found["redirect"] = reflectRedirect(p, rt, prm)
			}
			if !found["crlf"] && inHeader {
				found["crlf"] = reflectCRLF(p, rt, prm, marker)
			}
			if !found["traversal"] && (fileParams[strings.ToLower(prm.Name)] || fileLike.MatchString(prm.Value)) {
				found["traversal"] = reflectTraversal(p, rt, prm, replay.Body(r))
			}
		}
	}
}

func looksLikeURL(v string) bool {
	v = strings.ToLower(v)
	return strings.HasPrefix(v, "http://") || strings.HasPrefix(v, "https://") || strings.HasPrefix(v, "/") && !strings.HasPrefix(v, "//")
}

// reflectXSS tries a payload for each place the canary landed; it reports
// one finding for the pattern listing every place that broke.
func reflectXSS(p *replay.Play, rt reflTarget, prm reflParam, ls []landing) bool {
	type hit struct {
		l       landing
		url     string
		payload string
		what    string
		csp     string
	}
	var hits []hit
	tried := map[string]bool{}
	for _, l := range ls {
		if len(tried) == refLandings || !p.Room(1) || p.HostBusy(rt.u.Host, nil) {
			break
		}
		if tried[l.key()] {
			continue
		}
		tried[l.key()] = true
		t := tokenFor(p, "reflect-xss", rt.pattern, prm.Name, l.key())
		u := rt.with(prm, prm.encode(payloadFor(l, t)))
		r := fetchRaw(p, u)
		if p.HostBusy(rt.u.Host, r) || !replay.Answered(r) {
			continue
		}
		for _, b := range findBreakouts(replay.Body(r), t) {
			if l.expects(b) {
				hits = append(hits, hit{l: l, url: u, payload: minimalPayload(l, t, b), what: b.What, csp: replay.Headers(r)["content-security-policy"]})
				break
			}
		}
	}
	if len(hits) == 0 {
		return false
	}
	var places []string
	for _, h := range hits {
		places = append(places, fmt.Sprintf("%s (payload %s became %s)", contextPhrase(h.l), replay.Quote(h.payload, 60), h.what))
	}
	sev, csp := fleet.SeverityHigh, ""
	if BlocksInlineScript(hits[0].csp) {
		sev, csp = fleet.SeverityMedium, " A Content-Security-Policy without 'unsafe-inline' limits the impact."
	}
	p.File(sev, replay.SurfaceOf(p.Target(), rt.u.String()),
		fmt.Sprintf("Reflected XSS (CWE-79): parameter %q of %s is written into the page unescaped, in %s. Expected it escaped for each context.%s",
			prm.Name, rt.pattern, strings.Join(places, "; "), csp),
		"qa_fetch", map[string]any{"url": hits[0].url, "follow_redirects": false})
	return true
}

// redirectHost is the host a browser goes to for a Location value.
func redirectHost(loc string, base *url.URL) string {
	loc = strings.ReplaceAll(urlTrim(loc), `\`, "/")
	u, err := url.Parse(loc)
	if err != nil {
		return ""
	}
	return strings.ToLower(base.ResolveReference(u).Hostname())
}

// refreshTarget returns the URL of a meta refresh in body, "" if none.
func refreshTarget(body string) string {
	for _, t := range tokenize(body) {
		if t.Type != html.StartTagToken && t.Type != html.SelfClosingTagToken || t.Name != "meta" {
			continue
		}
		refresh, content := false, ""
		for _, a := range t.Attrs {
			switch a.Key {
			case "http-equiv":
				refresh = strings.EqualFold(strings.TrimSpace(a.Val), "refresh")
			case "content":
				content = a.Val
			}
		}
		if refresh {
			if _, u, ok := strings.Cut(strings.ToLower(content), "url="); ok {
				return strings.Trim(strings.TrimSpace(content[len(content)-len(u):]), `'"`)
			}
		}
	}
	return ""
}

// reflectRedirect sends an outside host in the parameter (absolute,
// scheme-relative, and with a backslash browsers read as a slash) and
// checks where the answer sends the browser.
func reflectRedirect(p *replay.Play, rt reflTarget, prm reflParam) bool {
	t := tokenFor(p, "redirect", rt.pattern, prm.Name)
	host := t + ".invalid" // reserved: never resolves (RFC 2606)
	for _, v := range []string{"https://" + host + "/", "//" + host + "/", `/\` + host + "/"} {
		if !p.Room(1) || p.HostBusy(rt.u.Host, nil) {
			return false
		}
		u := rt.with(prm, url.QueryEscape(v))
		r := fetchRaw(p, u)
		if p.HostBusy(rt.u.Host, r) || !replay.Answered(r) {
			continue
		}
		loc, how := "", ""
		if st := replay.Status(r); st >= 300 && st < 400 {
			loc, how = replay.Headers(r)["location"], fmt.Sprintf("HTTP %d with Location %s", st, replay.Quote(replay.Headers(r)["location"], 100))
		} else if ref := refreshTarget(replay.Body(r)); ref != "" {
			loc, how = ref, "a meta refresh to "+replay.Quote(ref, 100)
		}
		if loc == "" || redirectHost(loc, rt.u) != host {
			continue
		}
		p.File(fleet.SeverityMedium, replay.SurfaceOf(p.Target(), rt.u.String()),
			fmt.Sprintf("Open redirect (CWE-601): parameter %q of %s sends the browser to any site: %s=%s answered %s. Expected only same-site targets or an allowlist.",
				prm.Name, rt.pattern, prm.Name, replay.Quote(v, 80), how),
			"qa_fetch", map[string]any{"url": u, "follow_redirects": false})
		return true
	}
	return false
}

// reflectCRLF sends CR LF (and a bare LF) followed by a header of its own in
// a parameter whose value reaches the response headers.
func reflectCRLF(p *replay.Play, rt reflTarget, prm reflParam, marker string) bool {
	t := tokenFor(p, "crlf", rt.pattern, prm.Name)
	for _, nl := range []string{"%0d%0a", "%0a"} {
		if !p.Room(1) || p.HostBusy(rt.u.Host, nil) {
			return false
		}
		raw := marker + nl + t + ":%20crlf"
		u := rt.with(prm, raw)
		r := fetchRaw(p, u)
		if p.HostBusy(rt.u.Host, r) || !replay.Answered(r) {
			continue
		}
		if replay.Headers(r)[t] == "" {
			continue
		}
		p.File(fleet.SeverityMedium, replay.SurfaceOf(p.Target(), rt.u.String()),
			fmt.Sprintf("HTTP header injection (CWE-113): parameter %q of %s reaches the response headers with %s intact: %s=%s added a response header %q. Expected CR and LF removed or the value refused (response splitting).",
				prm.Name, rt.pattern, map[string]string{"%0d%0a": "CR LF", "%0a": "a bare LF"}[nl], prm.Name, replay.Quote(raw, 80), t),
			"qa_fetch", map[string]any{"url": u, "follow_redirects": false})
		return true
	}
	return false
}

// reflectTraversal replaces a file-like parameter with ../ steps to
// /etc/passwd (plain, %2f-encoded, double-encoded) and ..\ to win.ini, and
// looks for the file's content, which the canary's answer must not hold.
func reflectTraversal(p *replay.Play, rt reflTarget, prm reflParam, baseline string) bool {
	if replay.PasswdRE.MatchString(baseline) || winIniRE.MatchString(baseline) {
		return false
	}
	for _, v := range []struct{ how, raw string }{
		{"../", strings.Repeat("../", travDepth) + "etc/passwd"},
		{"..%2f (encoded)", strings.Repeat("..%2f", travDepth) + "etc%2fpasswd"},
		{"..%252f (double-encoded)", strings.Repeat("..%252f", travDepth) + "etc%252fpasswd"},
		{`..%5c (encoded backslash)`, strings.Repeat("..%5c", travDepth) + "windows%5cwin.ini"},
	} {
		if !p.Room(1) || p.HostBusy(rt.u.Host, nil) {
			return false
		}
		u := rt.with(prm, v.raw)
		r := fetchRaw(p, u)
		if p.HostBusy(rt.u.Host, r) || !replay.Answered(r) {
			continue
		}
		b := replay.Body(r)
		file := ""
		switch {
		case replay.PasswdRE.MatchString(b):
			file = "/etc/passwd (" + replay.Quote(replay.PasswdRE.FindString(b), 40) + ")"
		case winIniRE.MatchString(b):
			file = "win.ini"
		default:
			continue
		}
		p.File(fleet.SeverityHigh, replay.SurfaceOf(p.Target(), rt.u.String()),
			fmt.Sprintf("Path traversal (CWE-22): %s of %s reads files outside its directory: with %s steps it returned %s. Expected the path confined to its directory (.. and encoded separators refused after decoding).",
				paramPhrase(prm), rt.pattern, v.how, file),
			"qa_fetch", map[string]any{"url": u, "follow_redirects": false})
		return true
	}
	return false
}

func paramPhrase(prm reflParam) string {
	if prm.Query {
		return fmt.Sprintf("parameter %q", prm.Name)
	}
	return "the " + prm.Name
}

// getForms returns a URL per GET form of an HTML page: its action resolved
// against the page, with each named field (value or "x"), so a form's
// parameters are probed like a link's. Password and file fields are left
// out; POST forms are not submitted.
func getForms(base, body string) []string {
	b, err := url.Parse(base)
	if err != nil {
		return nil
	}
	var out []string
	in, get := false, false
	var action string
	var q []string
	for _, t := range tokenize(body) {
		switch {
		case t.Type == html.StartTagToken && t.Name == "form":
			in, get, action, q = true, true, "", nil
			for _, a := range t.Attrs {
				switch a.Key {
				case "method":
					get = strings.EqualFold(strings.TrimSpace(a.Val), "get") || strings.TrimSpace(a.Val) == ""
				case "action":
					action = a.Val
				}
			}
		case in && (t.Type == html.StartTagToken || t.Type == html.SelfClosingTagToken) && (t.Name == "input" || t.Name == "select" || t.Name == "textarea"):
			name, value, typ := "", "x", ""
			for _, a := range t.Attrs {
				switch a.Key {
				case "name":
					name = a.Val
				case "value":
					if a.Val != "" {
						value = a.Val
					}
				case "type":
					typ = strings.ToLower(a.Val)
				}
			}
			if name != "" && typ != "password" && typ != "file" && typ != "submit" && typ != "button" && typ != "image" && len(q) < 8 {
				q = append(q, url.QueryEscape(name)+"="+url.QueryEscape(value))
			}
		case in && t.Type == html.EndTagToken && t.Name == "form":
			in = false
			if !get || len(q) == 0 {
				continue
			}
			u := crawl.Resolve(b, action)
			if action == "" {
				u = crawl.Resolve(b, b.Path)
			}
			if u == "" {
				continue
			}
			ru, err := url.Parse(u)
			if err != nil {
				continue
			}
			ru.RawQuery = strings.Join(q, "&")
			out = append(out, ru.String())
		}
	}
	return out
}
