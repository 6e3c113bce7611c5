package specialists

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/qafleet/fleetd/fleet"
)

// Security limits.
const (
	secAdmin          = 8 // admin functions simulated
	secDocs           = 4 // docs pages
	secNames          = 4 // public names' faces
	secHosts          = 2 // hosts probed for exposed paths
	secLinks          = 8 // same-host links followed from docs and index pages
	secMetadata       = 8 // metadata reads for stored XSS
	secSecretFindings = 5 // secret findings per run
)

// exposedPath is a commonly exposed file and how to recognize the real
// thing (a soft-404 page that answers 200 for every path must not count).
type exposedPath struct {
	path string
	what string
	sig  *regexp.Regexp // nil: only a secret in it is a finding
}

// exposedPaths is the short, generic list probed on every allowlisted host
// of the target: deployment secrets, VCS metadata, cloud credentials,
// runtime debug endpoints and backups.
var exposedPaths = []exposedPath{
	{"/.env", "environment file", regexp.MustCompile(`(?m)^[A-Z][A-Z0-9_]{2,}=\S`)},
	{"/.git/config", "git repository metadata", regexp.MustCompile(`\[core\]|repositoryformatversion`)},
	{"/.aws/credentials", "cloud credentials file", regexp.MustCompile(`aws_access_key_id|aws_secret_access_key`)},
	{"/config.json", "configuration file", nil},
	{"/debug/vars", "runtime debug variables", regexp.MustCompile(`"memstats"\s*:|"cmdline"\s*:`)},
	{"/server-status", "server status page", regexp.MustCompile(`Apache Server Status|Server uptime|Total Accesses`)},
	{"/backup.zip", "backup archive", regexp.MustCompile(`^PK\x03\x04`)},
	{"/keys", "key listing", nil},
}

// activeHTML is content that runs script in a browser: script elements,
// event-handler attributes, javascript: URLs, frames and plugins.
var activeHTML = regexp.MustCompile(`(?is)<script\b[^>]*>.*?</script\s*>|<script\b[^>]*>|<[a-z][a-z0-9]*\b[^>]*\son[a-z]+\s*=[^>]*>|<[a-z][a-z0-9]*\b[^>]*(?:href|src|action)\s*=\s*["']?\s*javascript:[^>]*>|<(?:iframe|object|embed)\b[^>]*>`)

// metadataFields are the metadata keys commonly rendered into a page.
var metadataFields = []string{"face", "title", "html", "content", "description", "bio"}

// identityHeaders are request headers that proxies and frameworks use to
// pass an authenticated identity; an endpoint must not take them from a
// client.
var identityHeaders = []string{"X-Caller", "X-User", "X-Forwarded-User", "X-Auth-User", "X-Remote-User"}

// identityClaims are identities a caller can claim in a request body.
var identityClaims = []string{"admin", "owner", "root", "0x0000000000000000000000000000000000000000"}

// security probes trust boundaries; see the package doc for each rule.
// The passive rules run on every page the crawl found (p.crawl) plus the
// commonly exposed paths; the active ones follow.
func security(p *probe) {
	secAdminFunctions(p)
	pages := secPages(p)
	secSecrets(p, pages)
	secHeaders(p, pages)
	secCORS(p, pages)
	secMixedContent(p, pages)
	injectStored(p, pages) // stored injection per field and context (inject.go)
	secExercise(p)
	injectReflected(p, pages) // reflected injection and path handling (inject_reflect.go)
	agentRedTeam(p)           // the agent endpoint's own attack class (agent.go)
}

// secAdminFunctions simulates every admin function from a fresh address:
// each must revert.
func secAdminFunctions(p *probe) {
	fns := p.t.AdminFunctions
	switch {
	case len(fns) == 0:
		p.Skip("target.admin_functions not configured: admin check skipped")
		return
	case !p.can("qa_chain"):
		p.Skip("qa_chain unavailable: admin functions not simulated")
		return
	}
	for _, sig := range first(fns, secAdmin) {
		if !p.room(1) {
			return
		}
		r := p.Chain("simulate", sig)
		if !r.IsOK() {
			p.Skip("simulate %s failed (%s)", sig, clip(r.Err(), 120))
			if strings.Contains(r.Err(), "not configured") {
				return
			}
			continue
		}
		if flag(r, "reverted") {
			continue
		}
		p.reportChecked(fleet.SeverityCritical, fleet.SurfaceRegistry,
			fmt.Sprintf("Admin function %s does not revert when called by a fresh, unprivileged address (eth_call simulation from %s succeeded): anyone can call it. Expected a revert such as an ownership check.",
				sig, str(r, "from")),
			"qa_chain", map[string]any{"method": "simulate", "params": []any{sig}},
			func(r fleet.Result) bool { return r.IsOK() && !flag(r, "reverted") })
	}
}

// secPages is the crawl plus the commonly exposed paths on the first
// secHosts origins, each URL once.
func secPages(p *probe) []page {
	if !p.can("qa_fetch") {
		p.Skip("qa_fetch unavailable: pages, secrets, stored XSS, headers and CORS not checked")
		return nil
	}
	pages := slices.Clone(p.crawl())
	for _, o := range first(targetOrigins(p.t), secHosts) {
		for _, e := range exposedPaths {
			url := o + e.path
			if _, done := p.pageAt(url); done {
				continue // the crawl met it: its page is already in the list
			}
			if r, ok := p.get(url); ok {
				pages = append(pages, page{url: url, kind: "exposed", res: r})
			}
		}
	}
	return pages
}

// secSecrets reports credentials on any fetched page (one finding per
// page) and exposed files recognized by their content.
func secSecrets(p *probe, pages []page) {
	reported := 0
	known := map[string]bool{} // kind and prefix of secrets already reported
	repeats := 0
	defer func() {
		if repeats > 0 {
			p.notef("%d more page(s) repeat a secret already reported", repeats)
		}
	}()
	for _, pg := range pages {
		if !answered(pg.res) {
			continue
		}
		found := ScanSecrets(body(pg.res))
		fresh := false
		for _, s := range found {
			fresh = fresh || !known[s.Kind+s.Prefix]
		}
		if len(found) > 0 && !fresh {
			// The same secrets again (a page served at many paths): one
			// exposure, reported once.
			repeats++
			continue
		}
		for _, s := range found {
			known[s.Kind+s.Prefix] = true
		}
		if len(found) > 0 && reported < secSecretFindings {
			reported++
			sev := fleet.SeverityHigh
			var kinds []string
			for _, s := range found {
				if s.Sev == fleet.SeverityCritical {
					sev = fleet.SeverityCritical
				}
				if d := s.describe(); !slices.Contains(kinds, d) && len(kinds) < 4 {
					kinds = append(kinds, d)
				}
			}
			first := found[0]
			p.reportChecked(sev, surfaceOf(p.t, pg.url),
				fmt.Sprintf("Public URL %s (HTTP %d) exposes %d secret(s): %s. Anyone can read it; rotate the credential and remove it from public paths.",
					describePage(pg), status(pg.res), len(found), strings.Join(kinds, "; ")),
				"qa_fetch", map[string]any{"url": pg.url},
				func(r fleet.Result) bool { return holdsSecret(body(r), first) })
			continue
		}
		if pg.kind != "exposed" || status(pg.res) != 200 {
			continue
		}
		for _, e := range exposedPaths {
			if strings.HasSuffix(pg.url, e.path) && e.sig != nil && e.sig.MatchString(body(pg.res)) {
				p.Report(fleet.SeverityMedium, "web",
					fmt.Sprintf("A %s is publicly readable at %s (HTTP 200, content matches). Expected 404 or 403 for deployment files.", e.what, pg.url),
					"qa_fetch", map[string]any{"url": pg.url})
			}
		}
	}
}

// secStoredXSS checks faces that carry active content against the name's
// metadata: active content a user stored and the face serves verbatim is
// stored XSS.
func secStoredXSS(p *probe, pages []page) {
	reads := 0
	for _, pg := range pages {
		if pg.kind != "face" || !answered(pg.res) || !activeHTML.MatchString(body(pg.res)) {
			continue
		}
		name := nameOfFace(p.t, pg.url)
		if name == "" {
			continue
		}
		if !p.can("qa_chain") {
			p.Skip("qa_chain unavailable: stored content behind active faces not checked")
			return
		}
		for _, field := range metadataFields {
			if reads == secMetadata || !p.room(1) {
				return
			}
			reads++
			r := p.Chain("metadata", name, field)
			if !r.IsOK() {
				p.Skip("metadata reads failed (%s)", clip(r.Err(), 120))
				return
			}
			frag := servedVerbatim(str(r, "result"), body(pg.res))
			if frag == "" {
				continue
			}
			sev, csp := fleet.SeverityHigh, ""
			if blocksInlineScript(headers(pg.res)["content-security-policy"]) {
				sev, csp = fleet.SeverityMedium, " A Content-Security-Policy without 'unsafe-inline' limits the impact."
			}
			p.reportChecked(sev, fleet.SurfaceFace,
				fmt.Sprintf("Stored XSS: the face of %q serves its %q metadata unescaped, including active content %s that runs in every visitor's browser. Expected user-supplied metadata to be HTML-escaped or sanitized.%s",
					name, field, quote(frag, 120), csp),
				"qa_fetch", map[string]any{"url": pg.url},
				func(r fleet.Result) bool { return strings.Contains(body(r), frag) })
			break
		}
	}
}

// servedVerbatim returns the first active fragment of stored that page
// contains as is, "" if none.
func servedVerbatim(stored, page string) string {
	for _, f := range activeHTML.FindAllString(stored, 8) {
		if strings.Contains(page, f) {
			return f
		}
	}
	return ""
}

// blocksInlineScript reports whether a CSP stops inline script.
func blocksInlineScript(csp string) bool {
	if csp == "" {
		return false
	}
	for _, d := range strings.Split(csp, ";") {
		f := strings.Fields(strings.ToLower(d))
		if len(f) > 0 && (f[0] == "script-src" || f[0] == "default-src") {
			return !slices.Contains(f[1:], "'unsafe-inline'")
		}
	}
	return false
}

// canary returns this run's canary: a unique token inside a script element
// and an event handler, with no quotes or backslashes so it fits in any
// string literal.
func (p *probe) canary() (token, text string) {
	token = fmt.Sprintf("qa%08x", uint32(p.seed>>11))
	return token, fmt.Sprintf("qa-canary %s<script>%s()</script><img src=x onerror=%s()>", token, token, token)
}

// reflectsRaw reports whether text holds the canary's markup unescaped.
func reflectsRaw(text, token string) bool {
	return strings.Contains(text, "<script>"+token) || strings.Contains(text, "onerror="+token)
}

// secExercise runs the checks that need the exercise rung: a canary
// through the call endpoint, spoofed identities, and a canary published to
// a fresh name.
func secExercise(p *probe) {
	token, canary := p.canary()
	if target := firstName(p.t); target != "" && p.can("qa_call") && p.room(1) {
		a := callArgs{Target: target, Message: canary}
		ex := p.call("qa_call", a)
		if refusedByDial(ex) {
			p.Skip("qa_call refused (%s): reflection and identity checks skipped", ex.Result.Err())
		} else {
			reflected := func(r fleet.Result) bool {
				return reflectsRaw(body(r), token) && strings.Contains(strings.ToLower(str(r, "content_type")), "html")
			}
			if reflected(ex.Result) {
				p.reportChecked(fleet.SeverityHigh, fleet.SurfaceCall,
					fmt.Sprintf("Reflected XSS: the call endpoint returns the message's markup unescaped in an HTML reply (%s). Expected escaping or a non-HTML content type.", str(ex.Result, "content_type")),
					"qa_call", a, reflected)
			}
			secSpoof(p, target)
		}
	}
	if !p.can("qa_create") && p.webState().fresh == nil {
		if p.has("qa_create") {
			p.Skip("qa_create not allowed: published-canary check skipped")
		}
		return
	}
	if p.own != "" {
		return // the stored-injection probes covered every field of a fresh name
	}
	src := ""
	for _, s := range bySize(p.pb.opts.Corpus) {
		if loc := stringLiteral.FindStringIndex(s); loc != nil {
			src = s[:loc[0]] + `"` + canary + `"` + s[loc[1]:]
			break
		}
	}
	if src == "" {
		p.Skip("no corpus program with a string literal to carry the canary: published-canary check skipped")
		return
	}
	if !p.room(3) {
		return
	}
	name := p.freshName()
	if name == "" || !p.can("qa_publish") {
		p.Skip("no fresh name to publish the canary to")
		return
	}
	if r := p.Publish(name, src); !r.IsOK() {
		p.Skip("publishing the canary failed (%s)", clip(r.Err(), 120))
		return
	}
	if !p.can("qa_fetch") {
		return
	}
	face := p.Fetch(p.t.FaceURL(name))
	switch {
	case reflectsRaw(body(face), token):
		const stored = "Stored XSS: a canary published to a fresh name's metadata (a <script> element and an onerror handler inside a string literal of a known-good program) is served unescaped in the name's face. " +
			"Expected published content to be escaped or sanitized. Steps: qa_create, qa_publish a program whose string literal holds <script>x()</script><img src=x onerror=x()>, qa_fetch the name's face (target.faces)."
		// The name is released when the run ends, so the finding has no
		// repro; the replay the quality bar asks for is a second fetch now.
		if !p.room(1) || !p.can("qa_fetch") {
			p.Report(fleet.SeverityMedium, fleet.SurfaceFace, stored+" (Not confirmed by a replay: no call left for it.)", "", nil)
		} else if reflectsRaw(body(p.Fetch(p.t.FaceURL(name))), token) {
			p.Report(fleet.SeverityHigh, fleet.SurfaceFace, stored, "", nil)
		} else {
			p.report(fleet.SeverityLow, fleet.SurfaceFace, stored+" Fetching the face again did not show it: flaky, filed at low.", "", nil, stateArgs{Flaky: true})
		}
	case strings.Contains(body(face), token):
		p.notef("the published canary is escaped in the face")
	default:
		p.notef("the published canary does not appear in the face (HTTP %d)", status(face))
	}
}

var stringLiteral = regexp.MustCompile(`"(?:[^"\\\n]|\\.)*"`)

// secSpoof compares replies with and without a claimed identity.
func secSpoof(p *probe, target string) {
	base := callArgs{Target: target, Message: "whoami"}
	if !p.room(3) {
		return
	}
	b1 := p.Agent(base)
	if !answered(b1) {
		p.Skip("the call endpoint did not answer (%s): identity checks skipped", clip(b1.Err(), 120))
		return
	}
	b2 := p.Agent(base)
	stable := body(b1) == body(b2) && status(b1) == status(b2)
	if !stable {
		p.notef("replies to identical calls differ: identity checks only count status changes and new secrets")
	}
	for _, claim := range identityClaims {
		if !p.room(1) {
			return
		}
		a := base
		a.From = claim
		if d, sev, ok := spoofed(b1, p.Agent(a), []string{claim}, stable); ok {
			p.reportChecked(sev, fleet.SurfaceCall,
				fmt.Sprintf("Spoofed identity: the call endpoint takes the caller's identity from the request body. The same %q call to %q with \"from\": %q gets a materially different reply (%s) than without it. Expected identity to come from authentication, never from a claim.",
					base.Message, target, claim, d),
				"qa_call", a, func(r fleet.Result) bool { _, _, ok := spoofed(b1, r, []string{claim}, stable); return ok })
			break
		}
	}
	if !p.room(1) {
		return
	}
	all := base
	all.Headers = map[string]string{}
	for _, h := range identityHeaders {
		all.Headers[h] = "admin"
	}
	d, sev, ok := spoofed(b1, p.Agent(all), []string{"admin"}, stable)
	if !ok {
		return
	}
	repro, which := all, strings.Join(identityHeaders, ", ")
	for _, h := range identityHeaders {
		if !p.room(1) {
			break
		}
		one := base
		one.Headers = map[string]string{h: "admin"}
		if d1, sev1, ok1 := spoofed(b1, p.Agent(one), []string{"admin"}, stable); ok1 {
			repro, which, d, sev = one, h, d1, sev1
			break
		}
	}
	p.reportChecked(sev, fleet.SurfaceCall,
		fmt.Sprintf("Spoofed identity: the call endpoint trusts a client-supplied identity header (%s: admin). The same %q call to %q gets a materially different reply (%s) than without it. Expected such headers to be stripped or ignored unless set by a trusted proxy.",
			which, base.Message, target, d),
		"qa_call", repro, func(r fleet.Result) bool { _, _, ok := spoofed(b1, r, []string{"admin"}, stable); return ok })
}

var wordRE = regexp.MustCompile(`[a-z][a-z_]{2,}`)

// spoofed decides whether reply (with a claimed identity) differs
// materially from base (without): a refusal turned into success, a secret that was
// not there, or (when replies are stable) at least three new words beyond
// an echo of the claim. It returns a description and the severity.
func spoofed(base, reply fleet.Result, claims []string, stable bool) (string, fleet.Severity, bool) {
	if !answered(reply) || status(reply) >= 400 && status(base) < 400 {
		return "", "", false // refusing a claim is the right answer
	}
	var why []string
	sev := fleet.SeverityHigh
	if status(base) >= 400 && status(reply) < 400 {
		why = append(why, fmt.Sprintf("HTTP %d instead of %d", status(reply), status(base)))
	}
	for _, s := range ScanSecrets(body(reply)) {
		if !strings.Contains(body(base), s.Prefix) {
			why = append(why, "it reveals a "+s.describe())
			sev = fleet.SeverityCritical
			break
		}
	}
	if stable {
		text := strings.ToLower(body(reply))
		for _, c := range claims {
			text = strings.ReplaceAll(text, strings.ToLower(c), " ")
		}
		old := map[string]bool{}
		for _, w := range wordRE.FindAllString(strings.ToLower(body(base)), -1) {
			old[w] = true
		}
		var fresh []string
		for _, w := range wordRE.FindAllString(text, -1) {
			if !old[w] && !slices.Contains(fresh, w) {
				fresh = append(fresh, w)
			}
		}
		if len(fresh) >= 3 {
			why = append(why, fmt.Sprintf("%d new words, %s instead of %s", len(fresh), quote(body(reply), 160), quote(body(base), 80)))
		}
	}
	if len(why) == 0 {
		return "", "", false
	}
	return strings.Join(why, "; "), sev, true
}

// secHeaders reports, per host, the security headers missing from its
// HTML pages (every crawled HTML page that answered below 400).
func secHeaders(p *probe, pages []page) {
	type hostInfo struct {
		missing []string
		htmlURL string
	}
	var order []string
	info := map[string]*hostInfo{}
	for _, pg := range pages {
		if !pg.ok() || !isHTML(pg.res) {
			continue
		}
		h := hostOf(pg.url)
		hi := info[h]
		if hi == nil {
			hi = &hostInfo{htmlURL: pg.url}
			info[h] = hi
			order = append(order, h)
		}
		hd := headers(pg.res)
		csp := hd["content-security-policy"]
		for _, m := range []struct {
			name    string
			present bool
		}{
			{"Content-Security-Policy", csp != ""},
			{"X-Content-Type-Options", strings.EqualFold(strings.TrimSpace(hd["x-content-type-options"]), "nosniff")},
			{"X-Frame-Options", hd["x-frame-options"] != "" || strings.Contains(strings.ToLower(csp), "frame-ancestors")},
		} {
			if !m.present && !slices.Contains(hi.missing, m.name) {
				hi.missing = append(hi.missing, m.name)
			}
		}
	}
	for _, h := range order {
		hi := info[h]
		if len(hi.missing) > 0 {
			p.Report(fleet.SeverityLow, "headers",
				fmt.Sprintf("HTML pages on %s lack security headers: %s (seen on %s). Expected a Content-Security-Policy, X-Content-Type-Options: nosniff and X-Frame-Options (or CSP frame-ancestors) on every HTML response.",
					h, strings.Join(hi.missing, ", "), hi.htmlURL),
				"qa_fetch", map[string]any{"url": hi.htmlURL})
		}
	}
}

// isHTML reports whether a fetch result is an HTML document.
func isHTML(r fleet.Result) bool {
	ct := strings.ToLower(headers(r)["content-type"])
	if ct == "" {
		ct = strings.ToLower(str(r, "content_type"))
	}
	return strings.Contains(ct, "html")
}

// targetOrigins returns the allowlisted origins of the target's URLs:
// faces (of its names), the call endpoint and the docs, in that order.
func targetOrigins(t fleet.Target) []string {
	var urls []string
	for _, n := range t.Names {
		urls = append(urls, t.FaceURL(n))
	}
	if len(t.Names) == 0 && t.Faces != "" {
		urls = append(urls, t.FaceURL("x"))
	}
	urls = append(urls, t.Call)
	urls = append(urls, t.Docs...)
	var out []string
	for _, u := range urls {
		if o := origin(u); o != "" && allowedURL(t.FetchAllow, u) && !slices.Contains(out, o) {
			out = append(out, o)
		}
	}
	return out
}

// surfaceOf names the surface a URL belongs to.
func surfaceOf(t fleet.Target, url string) fleet.Surface {
	switch {
	case slices.Contains(t.Docs, url):
		return fleet.SurfaceDocs
	case nameOfFace(t, url) != "":
		return fleet.SurfaceFace
	case url == t.Call:
		return fleet.SurfaceCall
	}
	return "web"
}

// nameOfFace returns the name whose face url is, among target.names.
func nameOfFace(t fleet.Target, url string) string {
	for _, n := range t.Names {
		if t.FaceURL(n) == url {
			return n
		}
	}
	return ""
}

// firstName is the first public name, "" if none.
func firstName(t fleet.Target) string {
	if len(t.Names) == 0 {
		return ""
	}
	return t.Names[0]
}
