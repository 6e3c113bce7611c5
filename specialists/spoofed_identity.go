package specialists

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/qafleet/fleetd/crawl"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/specialists/replay"
)

// Limits of the identity names learned from the target.
const (
	identHeadersMax = 8 // learned header names tried per run (the fixed list comes on top)
	identFieldsMax  = 6 // learned body field names tried per run
	identNameLen    = 48
	identJSONDepth  = 4
	identJSONKeys   = 200 // keys read from one JSON answer
)

// identName is a request header or body field name learned from the
// target, and where it was learned (for the finding).
type identName struct {
	Name   string
	Header bool // a request header; else a JSON body field
	Where  string
	rank   int // 0 docs, 1 a header list in a response, 2 a response header or JSON field
}

// identityWords are words of a name that say it carries who the caller is
// or acts as: user, account, role, tenant, the actor or principal, an
// impersonation. Generic vocabulary of proxies, gateways and frameworks.
var identityWords = map[string]bool{
	"user": true, "userid": true, "username": true, "uid": true, "account": true, "acct": true,
	"role": true, "roles": true, "tenant": true, "caller": true, "actor": true, "principal": true,
	"impersonate": true, "impersonating": true, "impersonation": true, "behalf": true, "sub": true,
	"subject": true, "identity": true, "whoami": true, "owner": true, "login": true, "member": true,
	"persona": true, "customer": true, "admin": true, "acting": true, "sudo": true, "su": true,
}

// identityStop are words that make a name about something else than the
// caller (User-Agent, a user count, an avatar URL).
var identityStop = map[string]bool{
	"agent": true, "count": true, "total": true, "url": true, "uri": true, "link": true, "avatar": true,
	"image": true, "icon": true, "photo": true, "limit": true, "max": true, "min": true, "created": true,
	"updated": true, "since": true, "until": true, "length": true, "size": true, "type": true,
}

// identityReserved are names the check must not send as claims: the call's
// own fields, credentials and hop-by-hop headers (qa_call refuses some).
var identityReserved = []string{"target", "message", "from", "authorization", "cookie", "set-cookie",
	"proxy-authorization", "www-authenticate", "host", "content-type", "content-length"}

// identWords splits a name into lowercase words at separators and camel
// case: "X-Acting-As" and "actingAs" give acting, as.
func identWords(name string) []string {
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	rs := []rune(name)
	for i, r := range rs {
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			flush()
		case unicode.IsUpper(r) && len(cur) > 0 && (unicode.IsLower(cur[len(cur)-1]) || i+1 < len(rs) && unicode.IsLower(rs[i+1])):
			flush()
			cur = append(cur, r)
		default:
			cur = append(cur, r)
		}
	}
	flush()
	return words
}

// identityLike reports whether a header or field name looks like it
// carries the caller's identity, role or the user it acts for.
func identityLike(name string) bool {
	if name == "" || len(name) > identNameLen || slices.Contains(identityReserved, strings.ToLower(name)) {
		return false
	}
	words := identWords(name)
	hit := false
	for i, w := range words {
		if identityStop[w] {
			return false
		}
		// "as" alone is too common a word; it counts as run-as, act-as,
		// X-As-User, or the whole name.
		if identityWords[w] || w == "as" && (len(words) == 1 || i > 0 && (words[i-1] == "run" || words[i-1] == "act" || words[i-1] == "acting") || i+1 < len(words) && identityWords[words[i+1]]) {
			hit = true
		}
	}
	return hit
}

var (
	// curlHeader is a header a curl example sends: -H 'Name: value'.
	curlHeader = regexp.MustCompile(`(?:^|\s)(?:-H|--header)\s*['"]?\s*([A-Za-z][A-Za-z0-9_-]{0,47})\s*:`)
	// headerLine is a "Name: value" line with a hyphenated name, as in a
	// raw HTTP example.
	headerLine = regexp.MustCompile(`(?m)^[\s>]*\x60?([A-Za-z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)+)\x60?\s*:\s*\S`)
	// xHeader is an X- header named in prose or a table.
	xHeader = regexp.MustCompile(`\b([Xx]-[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*)\b`)
	// namedHeader is "the `Name` header" or "header `Name`".
	namedHeader = regexp.MustCompile("(?i)\x60([A-Za-z][A-Za-z0-9_-]{0,47})\x60\\s+(?:request\\s+)?header|header\\s+\x60([A-Za-z][A-Za-z0-9_-]{0,47})\x60")
	// jsonKey is a quoted key of a JSON example.
	jsonKey = regexp.MustCompile(`"([A-Za-z_][A-Za-z0-9_-]{0,47})"\s*:`)
	// queryParam is a query parameter of a documented URL.
	queryParam = regexp.MustCompile(`[?&]([A-Za-z_][A-Za-z0-9_.-]{0,47})=`)
	// namedParam is "the `name` parameter / field".
	namedParam = regexp.MustCompile("(?i)\x60([A-Za-z_][A-Za-z0-9_.-]{0,47})\x60\\s+(?:query\\s+|body\\s+|request\\s+|json\\s+)?(?:parameter|param|field|property|key)")
)

// docNamesMemo caches docIdentityNames over page bodies across replays.
var docNamesMemo replay.Memo[[]identName]

// docIdentityNames returns the identity-like header and parameter names a
// docs page (or a script, or any text but JSON) uses: curl -H examples, raw
// header lines, X- headers and headers named in prose, JSON keys of
// examples, query parameters of documented URLs, and parameters named in
// prose.
func docIdentityNames(pageURL, contentType, body string) []identName {
	return docNamesMemo.Get(pageURL+"\x00"+contentType+"\x00"+body, func(string) []identName {
		text, in := body, " in the docs at "
		switch crawl.Sniff(pageURL, contentType, body) {
		case crawl.KindJSON, crawl.KindBinary, crawl.KindCSS:
			return nil // a JSON answer's keys are respIdentityNames'
		case crawl.KindHTML:
			text = crawl.Text(body)
		case crawl.KindMarkdown, crawl.KindText:
		default:
			in = " in "
		}
		var out []identName
		add := func(name string, header bool, how string) {
			if identityLike(name) {
				out = append(out, identName{Name: name, Header: header, Where: how + in + pageURL})
			}
		}
		for _, m := range curlHeader.FindAllStringSubmatch(text, -1) {
			add(m[1], true, "a curl -H example")
		}
		for _, m := range headerLine.FindAllStringSubmatch(text, -1) {
			add(m[1], true, "a header line")
		}
		for _, m := range namedHeader.FindAllStringSubmatch(text, -1) {
			add(m[1]+m[2], true, "a header named")
		}
		for _, m := range xHeader.FindAllStringSubmatch(text, -1) {
			add(m[1], true, "a header named")
		}
		for _, m := range jsonKey.FindAllStringSubmatch(text, -1) {
			add(m[1], false, "a JSON field")
		}
		for _, m := range queryParam.FindAllStringSubmatch(text, -1) {
			add(m[1], false, "a query parameter")
		}
		for _, m := range namedParam.FindAllStringSubmatch(text, -1) {
			add(m[1], false, "a parameter named")
		}
		return out
	})
}

// respIdentityNames returns the identity-like names a response uses: its
// header names, the headers Vary and Access-Control-Allow-Headers /
// -Expose-Headers list, and the keys of a JSON answer (any depth).
func respIdentityNames(where string, r fleet.Result) []identName {
	var out []identName
	hd := replay.Headers(r)
	for _, k := range slices.Sorted(maps.Keys(hd)) {
		if identityLike(k) {
			out = append(out, identName{Name: k, Header: true, Where: "a response header of " + where, rank: 2})
		}
		if k == "vary" || k == "access-control-allow-headers" || k == "access-control-expose-headers" {
			for _, h := range strings.Split(hd[k], ",") {
				if h = strings.TrimSpace(h); identityLike(h) {
					out = append(out, identName{Name: h, Header: true, Where: "the " + k + " header of " + where, rank: 1})
				}
			}
		}
	}
	body := strings.TrimSpace(replay.Body(r))
	if !strings.HasPrefix(body, "{") && !strings.HasPrefix(body, "[") {
		return out
	}
	var v any
	if json.Unmarshal([]byte(body), &v) != nil {
		return out
	}
	seen := 0
	var walk func(v any, depth int)
	walk = func(v any, depth int) {
		if depth > identJSONDepth || seen >= identJSONKeys {
			return
		}
		switch t := v.(type) {
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(t)) {
				seen++
				if identityLike(k) {
					out = append(out, identName{Name: k, Where: "a JSON field of " + where, rank: 2})
				}
				walk(t[k], depth+1)
			}
		case []any:
			for _, e := range t[:min(len(t), 3)] {
				walk(e, depth+1)
			}
		}
	}
	walk(v, 0)
	return out
}

// learnIdentityNames gathers the identity-like names the target itself
// uses: in its docs and other non-face pages, in every crawled response,
// and in the call endpoint's own answers (extra). Names of the fixed list
// are left out (they are tried anyway); each name once (the first place
// it was seen, docs first), at most identHeadersMax headers and
// identFieldsMax fields.
func learnIdentityNames(pages []replay.Page, extra map[string]fleet.Result) (headers, fields []identName) {
	var all []identName
	for _, pg := range pages {
		if !pg.OK() {
			continue
		}
		if pg.Kind != "face" && pg.Kind != "fresh-face" {
			all = append(all, docIdentityNames(pg.URL, replay.Str(pg.Res, "content_type"), replay.Body(pg.Res))...)
		}
		all = append(all, respIdentityNames(pg.URL, pg.Res)...)
	}
	for _, where := range slices.Sorted(maps.Keys(extra)) {
		all = append(all, respIdentityNames(where, extra[where])...)
	}
	slices.SortStableFunc(all, func(a, b identName) int { return a.rank - b.rank })
	seen := map[string]bool{}
	for _, h := range identityHeaders {
		seen["h"+strings.ToLower(h)] = true
	}
	for _, n := range all {
		key := "f" + n.Name
		if n.Header {
			key = "h" + strings.ToLower(n.Name)
		}
		if seen[key] {
			continue
		}
		seen[key] = true
		switch {
		case n.Header && len(headers) < identHeadersMax:
			headers = append(headers, n)
		case !n.Header && len(fields) < identFieldsMax:
			fields = append(fields, n)
		}
	}
	return headers, fields
}

// identClaims are the values a claim sends: a privileged name, or the
// first id for a name that says it holds an id.
var identClaims = []string{"admin", "1"}

// identClaim is the value claimed for a header or field: 1 when its last
// word says it holds an id (X-User-Id, uid, accountNo), else admin. A
// list of names (a set sent together) claims admin.
func identClaim(name string) string {
	ws := identWords(name)
	if strings.Contains(name, ",") || len(ws) == 0 {
		return "admin"
	}
	switch ws[len(ws)-1] {
	case "id", "uid", "userid", "no", "num", "number":
		return "1"
	}
	return "admin"
}

// identQueryTargets bounds the GET endpoints tried with identity
// parameters per run.
const identQueryTargets = 4

// secSpoofQuery adds the identity-like parameter names learned from the
// target to the query of the JSON endpoints the crawl fetched (GET, at
// the exercise rung: it sends claims), set to admin (or 1), then, where
// that made no difference, to each identity the platform itself uses
// (ids: platformIdentities, read once a claim is sent), and compares the
// answer with a second plain fetch: a materially different answer (see spoofed) means the endpoint
// takes the caller's identity from the query. It returns the endpoints
// found ("query " and the URL without its query), which the pass with
// the signed-in identities' addresses (secSpoofSignedIn) skips.
func secSpoofQuery(p *replay.Play, pages []replay.Page, ids func() []platformIdent) []string {
	if !p.Can("qa_fetch") || !p.Exercised() {
		return nil
	}
	return spoofQuery(p, pages, true, ids(), nil)
}

// queryClaim is one value a query claim sends: generic (each name's
// identClaim) or one of the platform's own identities.
type queryClaim struct {
	generic bool
	id      platformIdent
}

// spoofQuery is secSpoofQuery's loop: the generic claim first when asked,
// then each of ids, on up to identQueryTargets endpoints not in skip.
func spoofQuery(p *replay.Play, pages []replay.Page, generic bool, ids []platformIdent, skip []string) (found []string) {
	if !p.Can("qa_fetch") || !p.Exercised() {
		return nil
	}
	_, fields := learnIdentityNames(pages, nil)
	if len(fields) == 0 {
		return nil
	}
	var claims []queryClaim
	if generic {
		claims = append(claims, queryClaim{generic: true})
	}
	for _, id := range ids {
		claims = append(claims, queryClaim{id: id})
	}
	tried := 0
	seen := map[string]bool{}
	for _, pg := range pages {
		if tried == identQueryTargets || !p.Room(3) {
			return found
		}
		u, err := url.Parse(pg.URL)
		if err != nil || !pg.OK() || pg.Kind == "face" || pg.Kind == "fresh-face" || pg.URL == p.Target().Call ||
			crawl.Sniff(pg.URL, replay.Str(pg.Res, "content_type"), replay.Body(pg.Res)) != crawl.KindJSON {
			continue
		}
		q := u.Query()
		var names []identName
		for _, f := range fields {
			if !q.Has(f.Name) {
				names = append(names, f)
			}
		}
		key := u.Scheme + "://" + u.Host + u.Path
		if len(names) == 0 || seen[key] || slices.Contains(skip, "query "+key) || p.HostBusy(u.Host, nil) {
			continue
		}
		seen[key] = true
		tried++
		base := p.Fetch(pg.URL)
		if p.HostBusy(u.Host, base) || !replay.Answered(base) {
			continue
		}
		stable := replay.Body(base) == replay.Body(pg.Res) && replay.Status(base) == replay.Status(pg.Res)
		for _, c := range claims {
			if !p.Room(2) {
				return found
			}
			value := func(n identName) string {
				if c.generic {
					return identClaim(n.Name)
				}
				return c.id.Value
			}
			with := func(ns []identName) string {
				v := u.Query()
				for _, n := range ns {
					v.Set(n.Name, value(n))
				}
				w := *u
				w.RawQuery = v.Encode()
				return w.String()
			}
			sent := identClaims
			if !c.generic {
				sent = append([]string{c.id.Value}, identClaims...)
			}
			all := with(names)
			d, sev, ok := spoofed(base, p.Fetch(all), sent, stable)
			if !ok {
				continue
			}
			repro, which, how, d, sev := isolateName(p, names, all, d, sev, with, func(one string) (string, fleet.Severity, bool) {
				return spoofed(base, p.Fetch(one), sent, stable)
			})
			var summary string
			if c.generic {
				summary = fmt.Sprintf("Spoofed identity: %s takes the caller's identity from a query parameter (%s=%s%s). The same GET with it answers materially differently (%s) than without it. Expected identity to come from authentication, never from a claim in the URL.",
					key, which, identClaim(which), how, d)
			} else {
				show := c.id.Value
				if c.id.Show != "" {
					show = c.id.Show
				}
				summary = fmt.Sprintf("Spoofed identity: %s takes the caller's identity from a query parameter (%s=%s%s) when it holds an identity the platform itself uses: %s. The same GET with it answers materially differently (%s) than without it, where generic claims (admin, 1) made none. Expected identity to come from authentication, never from a claim in the URL, whoever it names.",
					key, which, show, how, c.id.What, d)
			}
			p.FileChecked(sev, replay.SurfaceOf(p.Target(), pg.URL), summary,
				"qa_fetch", map[string]any{"url": repro}, func(r fleet.Result) bool { _, _, ok := spoofed(base, r, sent, stable); return ok })
			found = append(found, "query "+key)
			break
		}
	}
	return found
}

// isolateName, once the learned names together made a difference (all, with
// d and sev), tries each name alone while calls are left, and returns the
// repro to report, which names it is about and how they were found: the
// first name that alone makes the difference, or all of them together.
func isolateName[R any](p *replay.Play, names []identName, all R, d string, sev fleet.Severity, with func([]identName) R,
	try func(R) (string, fleet.Severity, bool)) (repro R, which, how, dOut string, sevOut fleet.Severity) {
	var list []string
	for _, n := range names {
		list = append(list, n.Name)
	}
	repro, which, how, dOut, sevOut = all, strings.Join(list, ", "), " (together; none alone)", d, sev
	for _, n := range names {
		if len(names) == 1 {
			return repro, n.Name, ", a name learned from " + n.Where, dOut, sevOut
		}
		if !p.Room(1) {
			return repro, which, " (together; not isolated: no call left)", dOut, sevOut
		}
		one := with([]identName{n})
		if d1, sev1, ok := try(one); ok {
			return one, n.Name, ", a name learned from " + n.Where, d1, sev1
		}
	}
	return repro, which, how, dOut, sevOut
}

// platformIdent is an identity the platform itself uses, claimed where a
// generic value (admin, 1) made no difference, and what it is.
// Show, when set, stands for the value in a finding (an identity's
// address is not written out).
type platformIdent struct{ Value, What, Show string }

// platformIdentsMax bounds the platform's own identities claimed per run.
const platformIdentsMax = 5

// addrRE is an EVM address as pages and answers show one.
var addrRE = regexp.MustCompile(`\b0x[0-9a-fA-F]{40}\b`)

// registryOwnersMax bounds the names whose owner is read from the
// registry on chain per run (the called agent first).
const registryOwnersMax = 3

// registryOwner is a name's owner as the registry on chain says.
type registryOwner struct{ Name, Address string }

// registryOwners reads, with qa_chain owner_of, the owners of the called
// agent (target) and the other agents' names from the name registry on
// chain (target.registry): the platform's own record of who owns what,
// which a page may not show. Nothing when no registry is configured or
// qa_chain is unavailable; a free name (the zero address) or a failed
// read is left out.
func registryOwners(p *replay.Play, target string) []registryOwner {
	if p.Target().Registry == "" || !p.Can("qa_chain") {
		return nil
	}
	var out []registryOwner
	names := append([]string{target}, p.Target().Names...)
	seen := map[string]bool{}
	for _, n := range names {
		if n == "" || seen[n] || len(seen) == registryOwnersMax || !p.Room(4) {
			continue
		}
		seen[n] = true
		r := p.Chain("owner_of", n)
		if a := replay.Str(r, "result"); r.IsOK() && replay.Flag(r, "registered") && addrRE.MatchString(a) {
			out = append(out, registryOwner{Name: n, Address: a})
		}
	}
	return out
}

// platformIdentities returns the identities the platform itself uses, most
// telling first: the owners the registry on chain records (owners, the
// called agent's first), the addresses on the called agent's face (its
// owner's, typically), the called agent's own name, the other agents'
// names, then addresses the crawl saw elsewhere (answers, docs). The
// addresses of the identities the run signs in come later
// (secSpoofSignedIn). Each once, the zero address never, at most
// platformIdentsMax. A gateway that checks a claimed identity against the
// platform's own refuses "admin" and still lets an owner's address in.
func platformIdentities(t fleet.Target, target string, pages []replay.Page, owners []registryOwner) []platformIdent {
	var out []platformIdent
	seen := map[string]bool{strings.ToLower("0x" + strings.Repeat("0", 40)): true}
	add := func(v, what string) {
		if k := strings.ToLower(v); v != "" && !seen[k] && len(out) < platformIdentsMax {
			seen[k] = true
			out = append(out, platformIdent{Value: v, What: what})
		}
	}
	for _, o := range owners {
		what := "the owner of " + o.Name + ", read from the name registry on chain (ownerOf)"
		if o.Name == target {
			what = "the called agent's owner, read from the name registry on chain (ownerOf)"
		}
		add(o.Address, what)
	}
	face := t.FaceURL(target)
	for _, pg := range pages {
		if pg.OK() && pg.URL == face {
			for _, a := range addrRE.FindAllString(replay.Body(pg.Res), 3) {
				add(a, "an address on the called agent's face "+face+" (its owner's?)")
			}
		}
	}
	add(target, "the called agent's own name")
	for _, n := range t.Names {
		add(n, "another agent's name")
	}
	for _, pg := range pages {
		if pg.OK() {
			for _, a := range addrRE.FindAllString(replay.Body(pg.Res), 3) {
				add(a, "an address the platform shows at "+pg.URL)
			}
		}
	}
	return out
}

// platformIDs returns the run's platform identities (platformIdentities
// over the registry's owners on chain), read on the first call, so only
// once a claim is sent: never at observe.
func platformIDs(p *replay.Play, pages []replay.Page) func() []platformIdent {
	var ids []platformIdent
	read := false
	return func() []platformIdent {
		if !read {
			target := replay.FirstName(p.Target())
			ids, read = platformIdentities(p.Target(), target, pages, registryOwners(p, target)), true
		}
		return ids
	}
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

// secSpoof compares replies with and without a claimed identity, and
// returns the header and field names it found trusted.
func secSpoof(p *replay.Play, target string, pages []replay.Page, ids func() []platformIdent) (found []string) {
	base := replay.CallArgs{Target: target, Message: "whoami"}
	if !p.Room(3) {
		return nil
	}
	b1 := p.Agent(base)
	if !replay.Answered(b1) {
		p.Skip("the call endpoint did not answer (%s): identity checks skipped", replay.Clip(b1.Err(), 120))
		return nil
	}
	b2 := p.Agent(base)
	stable := replay.Body(b1) == replay.Body(b2) && replay.Status(b1) == replay.Status(b2)
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
			p.FileChecked(sev, fleet.SurfaceCall,
				fmt.Sprintf("Spoofed identity: the call endpoint takes the caller's identity from the request body. The same %q call to %q with \"from\": %q gets a materially different reply (%s) than without it. Expected identity to come from authentication, never from a claim.",
					base.Message, target, claim, d),
				"qa_call", a, func(r fleet.Result) bool { _, _, ok := spoofed(b1, r, []string{claim}, stable); return ok })
			break
		}
	}
	headers, fields := learnIdentityNames(pages, map[string]fleet.Result{"the call endpoint's answer to " + replay.Quote(base.Message, 20): b1})
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
func secSpoofOwnAll(p *replay.Play, base replay.CallArgs, b1 fleet.Result, stable bool, headers, fields []identName, found []string, ids []platformIdent) []string {
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
// checks created (signedIn, by name) in the call endpoint's identity
// headers and fields that no claim showed before (spoofed): a gateway that
// takes any known account's address from a header lets anyone be anyone.
func secSpoofSignedIn(p *replay.Play, pages []replay.Page, signedIn map[string]string, spoofed []string) {
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
	target := replay.FirstName(p.Target())
	if target == "" || !p.Can("qa_call") || !p.Room(4) {
		return
	}
	base := replay.CallArgs{Target: target, Message: "whoami"}
	b1 := p.Agent(base)
	if !replay.Answered(b1) {
		return
	}
	b2 := p.Agent(base)
	stable := replay.Body(b1) == replay.Body(b2) && replay.Status(b1) == replay.Status(b2)
	headers, fields := learnIdentityNames(pages, map[string]fleet.Result{"the call endpoint's answer to " + replay.Quote(base.Message, 20): b1})
	secSpoofOwnAll(p, base, b1, stable, headers, fields, spoofed, ids)
}

// secSpoofOwn claims, in the identity headers or body fields (names, all
// of one kind) that generic values did not show, the identities the
// platform itself uses (ids): each value in every name at once, then one
// name at a time when it makes a difference. The first that does is the
// finding: a gateway that checks a claim against the platform's own
// identities refuses "admin" and lets an owner's address or an agent's
// name through.
func secSpoofOwn(p *replay.Play, base replay.CallArgs, b1 fleet.Result, stable bool, names []identName, ids []platformIdent) (found []string) {
	if len(names) == 0 {
		return nil
	}
	header := names[0].Header
	for _, id := range ids {
		if !p.Room(2) {
			return nil
		}
		with := func(ns []identName) replay.CallArgs {
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
		repro, which, how, d, sev := isolateName(p, names, all, d, sev, with, func(one replay.CallArgs) (string, fleet.Severity, bool) {
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
		p.FileChecked(sev, fleet.SurfaceCall,
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
func secSpoofHeaders(p *replay.Play, base replay.CallArgs, b1 fleet.Result, stable bool, learned []identName) (found []string) {
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
	p.FileChecked(sev, fleet.SurfaceCall,
		fmt.Sprintf("Spoofed identity: the call endpoint trusts a client-supplied identity header (%s: %s%s). The same %q call to %q gets a materially different reply (%s) than without it. Expected such headers to be stripped or ignored unless set by a trusted proxy.",
			which, identClaim(which), how, base.Message, base.Target, d),
		"qa_call", repro, func(r fleet.Result) bool { _, _, ok := spoofed(b1, r, identClaims, stable); return ok })
	return strings.Split(which, ", ")
}

// secSpoofFields sends the identity-like body fields learned from the
// target set to admin beside the call's own fields, all at once, then one
// by one when the set makes a difference.
func secSpoofFields(p *replay.Play, base replay.CallArgs, b1 fleet.Result, stable bool, fields []identName) (found []string) {
	if len(fields) == 0 || !p.Room(1) {
		return nil
	}
	with := func(ns []identName) replay.CallArgs {
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
	repro, which, how, d, sev := isolateName(p, fields, all, d, sev, with, func(one replay.CallArgs) (string, fleet.Severity, bool) {
		return spoofed(b1, p.Agent(one), identClaims, stable)
	})
	p.FileChecked(sev, fleet.SurfaceCall,
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
	if !replay.Answered(reply) || replay.Status(reply) >= 400 && replay.Status(base) < 400 {
		return "", "", false // refusing a claim is the right answer
	}
	var why []string
	sev := fleet.SeverityHigh
	if replay.Status(base) >= 400 && replay.Status(reply) < 400 {
		why = append(why, fmt.Sprintf("HTTP %d instead of %d", replay.Status(reply), replay.Status(base)))
	}
	for _, s := range replay.ScanSecrets(replay.Body(reply)) {
		if !strings.Contains(replay.Body(base), s.Prefix) {
			why = append(why, "it reveals a "+s.Describe())
			sev = fleet.SeverityCritical
			break
		}
	}
	if stable {
		text := strings.ToLower(replay.Body(reply))
		for _, c := range claims {
			text = strings.ReplaceAll(text, strings.ToLower(c), " ")
		}
		old := map[string]bool{}
		for _, w := range wordRE.FindAllString(strings.ToLower(replay.Body(base)), -1) {
			old[w] = true
		}
		var fresh []string
		for _, w := range wordRE.FindAllString(text, -1) {
			if !old[w] && !slices.Contains(fresh, w) {
				fresh = append(fresh, w)
			}
		}
		if len(fresh) >= 3 {
			why = append(why, fmt.Sprintf("%d new words, %s instead of %s", len(fresh), replay.Quote(replay.Body(reply), 160), replay.Quote(replay.Body(base), 80)))
		}
	}
	if len(why) == 0 {
		return "", "", false
	}
	return strings.Join(why, "; "), sev, true
}
