package specialists

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/specialists/authz"
	"github.com/qafleet/fleetd/specialists/inject"
	"github.com/qafleet/fleetd/specialists/probe"
	"github.com/qafleet/fleetd/specialists/redteam"
)

// Security limits.
const (
	secAdmin          = 8 // admin functions simulated
	secDocs           = 4 // docs pages
	secNames          = 4 // public names' faces
	secHosts          = 2 // hosts probed for exposed paths
	secLinks          = 8 // same-host links followed from docs and index pages
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

// identityHeaders are request headers that authenticating proxies and
// gateways set to pass an identity upstream; an endpoint must not take
// them from a client. The field's names, most common first: the generic
// forwarded and remote-user headers (Apache, nginx auth_request,
// oauth2-proxy's pass_user_headers, Kubernetes' authenticating proxy),
// oauth2-proxy's own (X-Auth-Request-User, X-Forwarded-Email), Authelia's
// Remote-User, API gateways' consumer headers (Kong, APISIX), Grafana's
// auth proxy. A platform's own names come from its docs and answers
// (learnIdentityNames), never from this list.
var identityHeaders = []string{
	"X-Forwarded-User", "X-Remote-User", "X-User", "X-User-Id", "X-Auth-Request-User", "X-Forwarded-Email",
	"X-Email", "Remote-User", "X-Consumer-Username", "X-Consumer-Id", "X-Authenticated-Userid",
	"X-Authenticated-User", "X-Auth-User", "X-Webauth-User", "X-Forwarded-Preferred-Username",
}

// identityClaims are identities a caller can claim in a request body.
var identityClaims = []string{"admin", "owner", "root", "0x0000000000000000000000000000000000000000"}

// security probes trust boundaries; see the package doc for each rule.
// The passive rules run on every page the crawl found (Probe.Crawl) plus the
// commonly exposed paths; the active ones follow.
func security(p *probe.Probe, o Options) {
	secAdminFunctions(p)
	pages := secPages(p)
	fns := secRegistrySurface(p, pages, o.ABIs) // every selector in the registry's bytecode, named or not
	secSecrets(p, pages, fns)                   // keys among them verified against the chain
	secInvariants(p, o.properties(), fns)       // properties over simulated call sequences
	secHeaders(p, pages)
	secCORS(p, pages)
	secMixedContent(p, pages)
	secBrowserReports(p)                  // CSP violations and mixed content the browser reported
	secRenderedSecrets(p)                 // secrets only the rendered DOM shows
	own, wrote := inject.Stored(p, pages) // stored injection per field and context; own: the name it probed with
	spoofed := secExercise(p, o.Corpus, own, pages)
	signedIn := authz.Run(p, pages) // behind a SIWE login: two fresh identities (issue 33)
	secSpoofSignedIn(p, pages, signedIn, spoofed)
	inject.Reflected(p, pages)        // reflected injection and path handling
	secDOMXSS(p)                      // URL canaries run in the browser
	byBrowser := secForms(p)          // forms submitted in the browser with canaries
	secPostForms(p, pages, byBrowser) // forms submitted over HTTP, the rest named in a note
	secStoredDOM(p)                   // canaries in stored fields the pages read back, run in the browser
	secStoredDOMName(p, own, wrote)   // the same for the fresh name's metadata on its face
	redteam.Run(p, o.Families, own)   // the agent endpoint's own attack class
	p.UndoWrites()                    // delete what the run's POSTs created; list what stays
}

// secAdminFunctions simulates every admin function from a fresh address:
// each must revert.
func secAdminFunctions(p *probe.Probe) {
	fns := p.Target().AdminFunctions
	switch {
	case len(fns) == 0:
		p.Skip("target.admin_functions not configured: admin check skipped")
		return
	case !p.Can("qa_chain"):
		p.Skip("qa_chain unavailable: admin functions not simulated")
		return
	}
	for _, sig := range probe.First(fns, secAdmin) {
		if !p.Room(1) {
			return
		}
		r := p.Chain("simulate", sig)
		if !r.IsOK() {
			p.Skip("simulate %s failed (%s)", sig, probe.Clip(r.Err(), 120))
			if strings.Contains(r.Err(), "not configured") {
				return
			}
			continue
		}
		if probe.Flag(r, "reverted") {
			continue
		}
		p.ReportChecked(fleet.SeverityCritical, fleet.SurfaceRegistry,
			fmt.Sprintf("Admin function %s does not revert when called by a fresh, unprivileged address (eth_call simulation from %s succeeded): anyone can call it. Expected a revert such as an ownership check.",
				sig, probe.Str(r, "from")),
			"qa_chain", map[string]any{"method": "simulate", "params": []any{sig}},
			func(r fleet.Result) bool { return r.IsOK() && !probe.Flag(r, "reverted") })
	}
}

// secPages is the crawl plus the commonly exposed paths on the first
// secHosts origins, each URL once.
func secPages(p *probe.Probe) []probe.Page {
	if !p.Can("qa_fetch") {
		p.Skip("qa_fetch unavailable: pages, secrets, stored XSS, headers and CORS not checked")
		return nil
	}
	pages := slices.Clone(p.Crawl())
	for _, o := range probe.First(probe.TargetOrigins(p.Target()), secHosts) {
		for _, e := range exposedPaths {
			url := o + e.path
			if _, done := p.PageAt(url); done {
				continue // the crawl met it: its page is already in the list
			}
			if r, ok := p.Get(url); ok {
				pages = append(pages, probe.Page{URL: url, Kind: "exposed", Res: r})
			}
		}
	}
	return pages
}

// secSecrets reports credentials on any fetched page (one finding per
// page) and exposed files recognized by their content. A page holding a
// key that could control an account is secKeys' to judge, with the page's
// other secrets in the same finding.
func secSecrets(p *probe.Probe, pages []probe.Page, fns []surfFn) {
	reported := 0
	known := map[string]bool{} // kind and prefix of secrets already reported
	repeats := 0
	var keyPages []keyPage
	defer func() {
		if repeats > 0 {
			p.Notef("%d more page(s) repeat a secret already reported", repeats)
		}
		secKeys(p, append(keyPages, renderedKeyPages(p, keyPages)...), fns)
	}()
	for _, pg := range pages {
		if !probe.Answered(pg.Res) {
			continue
		}
		found := immediateSecrets(probe.Body(pg.Res))
		if len(chainKeys(probe.Body(pg.Res))) > 0 {
			keyPages = append(keyPages, keyPage{page: pg, found: found})
			continue
		}
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
				if d := s.Describe(); !slices.Contains(kinds, d) && len(kinds) < 4 {
					kinds = append(kinds, d)
				}
			}
			first := found[0]
			p.ReportChecked(sev, probe.SurfaceOf(p.Target(), pg.URL),
				fmt.Sprintf("Public URL %s (HTTP %d) exposes %d secret(s): %s. Anyone can read it; rotate the credential and remove it from public paths.",
					probe.DescribePage(pg), probe.Status(pg.Res), len(found), strings.Join(kinds, "; ")),
				"qa_fetch", map[string]any{"url": pg.URL},
				func(r fleet.Result) bool { return probe.HoldsSecret(probe.Body(r), first) })
			continue
		}
		if pg.Kind != "exposed" || probe.Status(pg.Res) != 200 {
			continue
		}
		for _, e := range exposedPaths {
			if strings.HasSuffix(pg.URL, e.path) && e.sig != nil && e.sig.MatchString(probe.Body(pg.Res)) {
				p.Report(fleet.SeverityMedium, "web",
					fmt.Sprintf("A %s is publicly readable at %s (HTTP 200, content matches). Expected 404 or 403 for deployment files.", e.what, pg.URL),
					"qa_fetch", map[string]any{"url": pg.URL})
			}
		}
	}
}

// runCanary returns this run's canary: a unique token inside a script element
// and an event handler, with no quotes or backslashes so it fits in any
// string literal. Both would run where served unescaped, and both only
// call a function named by the token if one is defined (self.TOKEN?.()):
// none is, so in a visitor's browser the canary does nothing (no
// exception, no request, no dialog).
func runCanary(p *probe.Probe) (token, text string) {
	token = fmt.Sprintf("qa%08x", uint32(p.Seed()>>11))
	return token, fmt.Sprintf("qa-canary %s<script>self.%s?.()</script><details open ontoggle=self.%s?.()>", token, token, token)
}

// reflectsRaw reports whether text holds the canary's markup unescaped.
func reflectsRaw(text, token string) bool {
	return strings.Contains(text, "<script>self."+token) || strings.Contains(text, "ontoggle=self."+token)
}

// secExercise runs the checks that need the exercise rung: a canary
// through the call endpoint, spoofed identities, and a canary published to
// a fresh name. It returns the identity names the spoofed-identity checks
// found.
func secExercise(p *probe.Probe, corpus []string, own string, pages []probe.Page) (spoofedNames []string) {
	token, canary := runCanary(p)
	target := probe.FirstName(p.Target())
	ids := platformIDs(p, pages) // the platform's own identities, read once a claim is sent
	if target != "" && p.Can("qa_call") && p.Room(1) {
		a := probe.CallArgs{Target: target, Message: canary}
		ex := p.Exchange("qa_call", a)
		if probe.RefusedByDial(ex) {
			p.Skip("qa_call refused (%s): reflection and identity checks skipped", ex.Result.Err())
		} else {
			reflected := func(r fleet.Result) bool {
				return reflectsRaw(probe.Body(r), token) && strings.Contains(strings.ToLower(probe.Str(r, "content_type")), "html")
			}
			if reflected(ex.Result) {
				p.ReportChecked(fleet.SeverityHigh, fleet.SurfaceCall,
					fmt.Sprintf("Reflected XSS: the call endpoint returns the message's markup unescaped in an HTML reply (%s). Expected escaping or a non-HTML content type.", probe.Str(ex.Result, "content_type")),
					"qa_call", a, reflected)
			}
			spoofedNames = secSpoof(p, target, pages, ids)
		}
	}
	spoofedNames = append(spoofedNames, secSpoofQuery(p, pages, ids)...)
	if _, asked := p.Minted(); !p.Can("qa_create") && !asked {
		if p.Has("qa_create") {
			p.Skip("qa_create not allowed: published-canary check skipped")
		}
		return
	}
	if own != "" {
		return // the stored-injection probes covered every field of a fresh name
	}
	src := ""
	for _, s := range bySize(corpus) {
		if loc := stringLiteral.FindStringIndex(s); loc != nil {
			src = s[:loc[0]] + `"` + canary + `"` + s[loc[1]:]
			break
		}
	}
	if src == "" {
		p.Skip("no corpus program with a string literal to carry the canary: published-canary check skipped")
		return
	}
	if !p.Room(3) {
		return
	}
	name := p.FreshName()
	if name == "" || !p.Can("qa_publish") {
		p.Skip("no fresh name to publish the canary to")
		return
	}
	if r := p.Publish(name, src); !r.IsOK() {
		p.Skip("publishing the canary failed (%s)", probe.Clip(r.Err(), 120))
		return
	}
	if !p.Can("qa_fetch") {
		return
	}
	face := p.Fetch(p.Target().FaceURL(name))
	switch {
	case reflectsRaw(probe.Body(face), token):
		const stored = "Stored XSS: a canary published to a fresh name's metadata (a <script> element and an ontoggle handler inside a string literal of a known-good program) is served unescaped in the name's face. " +
			"Expected published content to be escaped or sanitized. Steps: qa_create, qa_publish a program whose string literal holds <script>self.x?.()</script><details open ontoggle=self.x?.()>, qa_fetch the name's face (target.faces)."
		// The name is released when the run ends, so the finding has no
		// repro; the replay the quality bar asks for is a second fetch now.
		if !p.Room(1) || !p.Can("qa_fetch") {
			p.Report(fleet.SeverityMedium, fleet.SurfaceFace, stored+" (Not confirmed by a replay: no call left for it.)", "", nil)
		} else if reflectsRaw(probe.Body(p.Fetch(p.Target().FaceURL(name))), token) {
			p.Report(fleet.SeverityHigh, fleet.SurfaceFace, stored, "", nil)
		} else {
			p.Report(fleet.SeverityLow, fleet.SurfaceFace, stored+" Fetching the face again did not show it: flaky, filed at low.", "", nil, probe.StateArgs{Flaky: true})
		}
	case strings.Contains(probe.Body(face), token):
		p.Notef("the published canary is escaped in the face")
	default:
		p.Notef("the published canary does not appear in the face (HTTP %d)", probe.Status(face))
	}
	return spoofedNames
}

var stringLiteral = regexp.MustCompile(`"(?:[^"\\\n]|\\.)*"`)

// secSpoof compares replies with and without a claimed identity, and
// returns the header and field names it found trusted. ids gives the
// platform's own identities, claimed where generic ones showed nothing.
func secSpoof(p *probe.Probe, target string, pages []probe.Page, ids func() []platformIdent) (found []string) {
	base := probe.CallArgs{Target: target, Message: "whoami"}
	if !p.Room(3) {
		return nil
	}
	b1 := p.Agent(base)
	if !probe.Answered(b1) {
		p.Skip("the call endpoint did not answer (%s): identity checks skipped", probe.Clip(b1.Err(), 120))
		return nil
	}
	b2 := p.Agent(base)
	stable := probe.Body(b1) == probe.Body(b2) && probe.Status(b1) == probe.Status(b2)
	if !stable {
		p.Notef("replies to identical calls differ: identity checks only count status changes and new secrets")
	}
	for _, claim := range identityClaims {
		if !p.Room(1) {
			return nil
		}
		a := base
		a.From = claim
		if d, sev, ok := spoofed(b1, p.Agent(a), []string{claim}, stable); ok {
			p.ReportChecked(sev, fleet.SurfaceCall,
				fmt.Sprintf("Spoofed identity: the call endpoint takes the caller's identity from the request body. The same %q call to %q with \"from\": %q gets a materially different reply (%s) than without it. Expected identity to come from authentication, never from a claim.",
					base.Message, target, claim, d),
				"qa_call", a, func(r fleet.Result) bool { _, _, ok := spoofed(b1, r, []string{claim}, stable); return ok })
			break
		}
	}
	headers, fields := learnIdentityNames(pages, map[string]fleet.Result{"the call endpoint's answer to " + probe.Quote(base.Message, 20): b1})
	if len(headers)+len(fields) > 0 {
		var names []string
		for _, n := range append(slices.Clone(headers), fields...) {
			names = append(names, n.Name)
		}
		p.Notef("identity names learned from the target (tried on the call endpoint, parameters also on JSON endpoints): %s", strings.Join(names, ", "))
	}
	found = append(secSpoofHeaders(p, base, b1, stable, headers), secSpoofFields(p, base, b1, stable, fields)...)
	// The names generic values did not show, claimed with the platform's
	// own identities (issue 33).
	return append(found, secSpoofOwnAll(p, base, b1, stable, headers, fields, found, ids())...)
}

// secSpoofOwnAll claims ids in the headers (learned, then the fixed list)
// and the fields not in found, and returns the names it found trusted.
func secSpoofOwnAll(p *probe.Probe, base probe.CallArgs, b1 fleet.Result, stable bool, headers, fields []identName, found []string, ids []platformIdent) []string {
	var hs, fs []identName
	for _, n := range headers {
		if !slices.Contains(found, n.Name) {
			hs = append(hs, n)
		}
	}
	for _, h := range identityHeaders {
		if !slices.Contains(found, h) {
			hs = append(hs, identName{Name: h, Header: true, Where: "the headers proxies commonly set"})
		}
	}
	for _, n := range fields {
		if !slices.Contains(found, n.Name) {
			fs = append(fs, n)
		}
	}
	return append(secSpoofOwn(p, base, b1, stable, hs, ids), secSpoofOwn(p, base, b1, stable, fs, ids)...)
}

// secSpoofSignedIn claims the addresses of the identities the sign-in
// checks created (signedIn, by name) in the identity query parameters of
// the JSON endpoints and the call endpoint's identity headers and fields
// that no claim showed before (spoofed): a gateway that takes any known
// account's address from a header or a parameter lets anyone be anyone.
func secSpoofSignedIn(p *probe.Probe, pages []probe.Page, signedIn map[string]string, spoofed []string) {
	var ids []platformIdent
	for _, name := range slices.Sorted(maps.Keys(signedIn)) {
		if len(ids) < platformIdentsMax {
			ids = append(ids, platformIdent{Value: signedIn[name], Show: "{identity " + name + "'s address}",
				What: "the address of identity " + name + ", a fresh account fleetd signed in"})
		}
	}
	if len(ids) == 0 {
		return
	}
	spoofQuery(p, pages, false, ids, spoofed) // in the query of the JSON endpoints
	target := probe.FirstName(p.Target())
	if target == "" || !p.Can("qa_call") || !p.Room(4) {
		return
	}
	base := probe.CallArgs{Target: target, Message: "whoami"}
	b1 := p.Agent(base)
	if !probe.Answered(b1) {
		return
	}
	b2 := p.Agent(base)
	stable := probe.Body(b1) == probe.Body(b2) && probe.Status(b1) == probe.Status(b2)
	headers, fields := learnIdentityNames(pages, map[string]fleet.Result{"the call endpoint's answer to " + probe.Quote(base.Message, 20): b1})
	secSpoofOwnAll(p, base, b1, stable, headers, fields, spoofed, ids)
}

// secSpoofOwn claims, in the identity headers or body fields (names, all
// of one kind) that generic values did not show, the identities the
// platform itself uses (ids): each value in every name at once, then one
// name at a time when it makes a difference. The first that does is the
// finding: a gateway that checks a claim against the platform's own
// identities refuses "admin" and lets an owner's address or an agent's
// name through.
func secSpoofOwn(p *probe.Probe, base probe.CallArgs, b1 fleet.Result, stable bool, names []identName, ids []platformIdent) (found []string) {
	if len(names) == 0 {
		return nil
	}
	header := names[0].Header
	for _, id := range ids {
		if !p.Room(2) {
			return nil
		}
		with := func(ns []identName) probe.CallArgs {
			a := base
			if header {
				a.Headers = map[string]string{}
				for _, n := range ns {
					a.Headers[n.Name] = id.Value
				}
				return a
			}
			body := map[string]any{"target": base.Target, "message": base.Message}
			for _, n := range ns {
				body[n.Name] = id.Value
			}
			raw, _ := json.Marshal(body)
			s := string(raw)
			a.RawBody = &s
			return a
		}
		claims := append([]string{id.Value}, identClaims...)
		all := with(names)
		d, sev, ok := spoofed(b1, p.Agent(all), claims, stable)
		if !ok {
			continue
		}
		repro, which, how, d, sev := isolateName(p, names, all, d, sev, with, func(one probe.CallArgs) (string, fleet.Severity, bool) {
			return spoofed(b1, p.Agent(one), claims, stable)
		})
		show := id.Value
		if id.Show != "" {
			show = id.Show
		}
		claim := fmt.Sprintf("header (%s: %s", which, show)
		if !header {
			claim = fmt.Sprintf("request body field (%q: %s", which, show)
		}
		p.ReportChecked(sev, fleet.SurfaceCall,
			fmt.Sprintf("Spoofed identity: the call endpoint trusts a client-supplied identity %s%s) when it holds an identity the platform itself uses: %s. The same %q call to %q gets a materially different reply (%s) than without it, where generic claims (admin, 1) made none. Expected identity to come from authentication, never from a claim, whoever it names.",
				claim, how, id.What, base.Message, base.Target, d),
			"qa_call", repro, func(r fleet.Result) bool { _, _, ok := spoofed(b1, r, claims, stable); return ok })
		return strings.Split(which, ", ")
	}
	return nil
}

// secSpoofHeaders sends the identity headers (the fixed list and those
// learned from the target) set to admin, all at once, then one by one when
// the set makes a difference.
func secSpoofHeaders(p *probe.Probe, base probe.CallArgs, b1 fleet.Result, stable bool, learned []identName) (found []string) {
	if !p.Room(1) {
		return nil
	}
	// The target's own names first: isolating which header made the
	// difference tries them before the field's list.
	var names []string
	where := map[string]string{}
	for _, n := range learned {
		names = append(names, n.Name)
		where[n.Name] = n.Where
	}
	names = append(names, identityHeaders...)
	all := base
	all.Headers = map[string]string{}
	for _, h := range names {
		all.Headers[h] = identClaim(h)
	}
	d, sev, ok := spoofed(b1, p.Agent(all), identClaims, stable)
	if !ok {
		return nil
	}
	repro, which, how := all, strings.Join(names, ", "), " (together; none alone)"
	for _, h := range names {
		if !p.Room(1) {
			how = " (together; not isolated: no call left)"
			break
		}
		one := base
		one.Headers = map[string]string{h: identClaim(h)}
		if d1, sev1, ok1 := spoofed(b1, p.Agent(one), identClaims, stable); ok1 {
			repro, which, d, sev = one, h, d1, sev1
			how = ", a header proxies commonly set"
			if w, ok := where[h]; ok {
				how = ", a name learned from " + w
			}
			break
		}
	}
	p.ReportChecked(sev, fleet.SurfaceCall,
		fmt.Sprintf("Spoofed identity: the call endpoint trusts a client-supplied identity header (%s: %s%s). The same %q call to %q gets a materially different reply (%s) than without it. Expected such headers to be stripped or ignored unless set by a trusted proxy.",
			which, identClaim(which), how, base.Message, base.Target, d),
		"qa_call", repro, func(r fleet.Result) bool { _, _, ok := spoofed(b1, r, identClaims, stable); return ok })
	return strings.Split(which, ", ")
}

// secSpoofFields sends the identity-like body fields learned from the
// target set to admin beside the call's own fields, all at once, then one
// by one when the set makes a difference.
func secSpoofFields(p *probe.Probe, base probe.CallArgs, b1 fleet.Result, stable bool, fields []identName) (found []string) {
	if len(fields) == 0 || !p.Room(1) {
		return nil
	}
	with := func(ns []identName) probe.CallArgs {
		body := map[string]any{"target": base.Target, "message": base.Message}
		for _, n := range ns {
			body[n.Name] = identClaim(n.Name)
		}
		raw, _ := json.Marshal(body)
		a := base
		s := string(raw)
		a.RawBody = &s
		return a
	}
	all := with(fields)
	d, sev, ok := spoofed(b1, p.Agent(all), identClaims, stable)
	if !ok {
		return nil
	}
	repro, which, how, d, sev := isolateName(p, fields, all, d, sev, with, func(one probe.CallArgs) (string, fleet.Severity, bool) {
		return spoofed(b1, p.Agent(one), identClaims, stable)
	})
	p.ReportChecked(sev, fleet.SurfaceCall,
		fmt.Sprintf("Spoofed identity: the call endpoint takes the caller's identity from a request body field (%q: %q%s). The same %q call to %q gets a materially different reply (%s) than without it. Expected identity to come from authentication, never from a claim.",
			which, identClaim(which), how, base.Message, base.Target, d),
		"qa_call", repro, func(r fleet.Result) bool { _, _, ok := spoofed(b1, r, identClaims, stable); return ok })
	return strings.Split(which, ", ")
}

var wordRE = regexp.MustCompile(`[a-z][a-z_]{2,}`)

// spoofed decides whether reply (with a claimed identity) differs
// materially from base (without): a refusal turned into success, a secret that was
// not there, or (when replies are stable) at least three new words beyond
// an echo of the claim. It returns a description and the severity.
func spoofed(base, reply fleet.Result, claims []string, stable bool) (string, fleet.Severity, bool) {
	if !probe.Answered(reply) || probe.Status(reply) >= 400 && probe.Status(base) < 400 {
		return "", "", false // refusing a claim is the right answer
	}
	var why []string
	sev := fleet.SeverityHigh
	if probe.Status(base) >= 400 && probe.Status(reply) < 400 {
		why = append(why, fmt.Sprintf("HTTP %d instead of %d", probe.Status(reply), probe.Status(base)))
	}
	for _, s := range probe.ScanSecrets(probe.Body(reply)) {
		if !strings.Contains(probe.Body(base), s.Prefix) {
			why = append(why, "it reveals a "+s.Describe())
			sev = fleet.SeverityCritical
			break
		}
	}
	if stable {
		text := strings.ToLower(probe.Body(reply))
		for _, c := range claims {
			text = strings.ReplaceAll(text, strings.ToLower(c), " ")
		}
		old := map[string]bool{}
		for _, w := range wordRE.FindAllString(strings.ToLower(probe.Body(base)), -1) {
			old[w] = true
		}
		var fresh []string
		for _, w := range wordRE.FindAllString(text, -1) {
			if !old[w] && !slices.Contains(fresh, w) {
				fresh = append(fresh, w)
			}
		}
		if len(fresh) >= 3 {
			why = append(why, fmt.Sprintf("%d new words, %s instead of %s", len(fresh), probe.Quote(probe.Body(reply), 160), probe.Quote(probe.Body(base), 80)))
		}
	}
	if len(why) == 0 {
		return "", "", false
	}
	return strings.Join(why, "; "), sev, true
}

// secHeaders reports, per host, the security headers missing from its
// HTML pages (every crawled HTML page that answered below 400).
func secHeaders(p *probe.Probe, pages []probe.Page) {
	type hostInfo struct {
		missing []string
		htmlURL string
	}
	var order []string
	info := map[string]*hostInfo{}
	for _, pg := range pages {
		if !pg.OK() || !isHTML(pg.Res) {
			continue
		}
		h := probe.HostOf(pg.URL)
		hi := info[h]
		if hi == nil {
			hi = &hostInfo{htmlURL: pg.URL}
			info[h] = hi
			order = append(order, h)
		}
		hd := probe.Headers(pg.Res)
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
	ct := strings.ToLower(probe.Headers(r)["content-type"])
	if ct == "" {
		ct = strings.ToLower(probe.Str(r, "content_type"))
	}
	return strings.Contains(ct, "html")
}
