package authz

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/qafleet/fleetd/docclaims"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/siwe"
	"github.com/qafleet/fleetd/specialists/replay"
)

// Surfaces of the findings: the sign-in and its sessions, and what a
// session may reach.
const (
	SurfaceAuth  fleet.Surface = "auth"
	SurfaceAuthz fleet.Surface = "authz"
)

// Limits per run.
const (
	maxObjects    = 3 // templated resources tried across identities
	maxReserved   = 3 // role-reserved endpoints tried by a plain identity
	maxUpdates    = 2 // updates tried with privilege fields
	maxPrivFields = 3 // privilege fields per update
)

// privilege are the fields an update must not let a user write about
// themself unless the docs say so, with the value that shows the write.
var privilege = []string{"role", "roles", "is_admin", "admin", "verified", "is_verified", "approved", "kyc", "owner", "balance", "credits", "plan", "tier", "permissions", "scopes"}

// Learn returns the login the docs among pages describe, completed by
// target.auth (a): the flow Run signs in with, and what ux says a refused
// documented endpoint is behind.
func Learn(pages []replay.Page, a *fleet.Auth) Flow {
	var docs []Doc
	for _, pg := range pages {
		if !pg.OK() {
			continue
		}
		ct := replay.Str(pg.Res, "content_type")
		if strings.Contains(ct, "html") || strings.Contains(ct, "markdown") || strings.Contains(ct, "text/plain") {
			docs = append(docs, Doc{URL: pg.URL, ContentType: ct, Text: replay.Body(pg.Res)})
		}
	}
	f := LearnFlow(docs)
	f.withConfig(a)
	return f
}

// Run runs the two-identity checks over the docs among pages. It signs in
// only identities of its own (qa_login), and stops where the dial, the
// cap or the write budget says. It returns the addresses of the
// identities it signed in, by name (a, b, ...), for checks that claim
// them.
func Run(p *replay.Play, pages []replay.Page) (signedIn map[string]string) {
	r := &run{p: p, flow: Learn(pages, p.Target().Auth), ids: map[string]identity{}, writesLeft: -1}
	if !r.flow.SignIn() {
		p.Notef("no Sign-In with Ethereum flow in the docs or target.auth: nothing behind a login probed")
		return r.signedIn()
	}
	if !p.Has("qa_login") {
		p.Skip("qa_login is not among the tools: the sign-in at %s not probed", r.flow.Verify.URL)
		return r.signedIn()
	}
	a, b := r.signIn("a"), r.signIn("b")
	if a == nil || b == nil {
		r.leaveAccounts()
		return r.signedIn()
	}
	r.crawlBehind(a)
	r.objectLevel(a, b)
	r.functionLevel(b)
	r.propertyLevel(a, b)
	r.lifecycle()
	r.rotation()
	r.verification()
	r.leaveAccounts()
	return r.signedIn()
}

// leaveAccounts lists the accounts the run's own sign-ins may have made
// (each identity signed in, and t once a tampered sign-in was answered:
// reuse_nonce signs it in properly first, and a platform may accept the
// others) as left on the platform: a sign-in is a write no check can
// undo.
func (r *run) leaveAccounts() {
	if len(r.accounts) > 0 {
		r.p.LeftOnPlatform("the accounts of identities %s, if the sign-in at %s made one (fleetd removes none)", strings.Join(r.accounts, ", "), pathOf(r.flow.Verify.URL))
	}
}

// signedUp notes an identity whose sign-in may have made an account.
func (r *run) signedUp(name string) {
	if !slices.Contains(r.accounts, name) {
		r.accounts = append(r.accounts, name)
	}
}

// signedIn is the address of each identity signed in so far, by name.
func (r *run) signedIn() map[string]string {
	out := map[string]string{}
	for name, id := range r.ids {
		if id.addr != "" {
			out[name] = id.addr
		}
	}
	return out
}

// identity is one signed-in identity of the run.
type identity struct {
	name, addr, id, session string
}

type run struct {
	p          *replay.Play
	flow       Flow
	ids        map[string]identity
	accounts   []string // identities whose sign-in may have made an account, in order
	failed     bool
	writesLeft int // -1: unknown or unlimited
}

// withConfig completes the flow with target.auth (a): the sign-in pair
// when the docs lack one, the logout and me endpoints they do not name.
func (f *Flow) withConfig(a *fleet.Auth) {
	if a == nil {
		return
	}
	set := func(e *Endpoint, method, u string) {
		if e.URL == "" && u != "" {
			*e = Endpoint{Method: method, URL: u, Quote: "target.auth"}
		}
	}
	if f.Nonce.URL == "" || f.Verify.URL == "" {
		f.Nonce, f.Verify = Endpoint{}, Endpoint{}
		set(&f.Nonce, "GET", a.Nonce)
		set(&f.Verify, "POST", a.Verify)
	}
	set(&f.Logout, "POST", a.Logout)
	set(&f.Me, "GET", a.Me)
	if a.ChainID != 0 {
		f.ChainID = a.ChainID
	}
}

// loginArgs are qa_login's arguments for identity (and a tamper).
func (r *run) loginArgs(name, tamper string) map[string]any {
	args := map[string]any{"identity": name, "nonce_url": r.flow.Nonce.URL, "verify_url": r.flow.Verify.URL}
	if r.flow.ChainID != 0 {
		args["chain_id"] = r.flow.ChainID
	}
	if tamper != "" {
		args["tamper"] = tamper
	}
	return args
}

// writeReserve is what the checks leave of the run's write budget for the
// security checks that run after them (forms, stored DOM XSS).
const writeReserve = 6

// canWrite reports whether n more writes (sign-ins, updates) fit the
// run's budget, keeping writeReserve for the rest of the playbook.
func (r *run) canWrite(n int) bool {
	return r.writesLeft < 0 || r.writesLeft >= n+writeReserve
}

func (r *run) noteWrites(res fleet.Result) {
	if v, ok := replay.Num(res, "writes_left"); ok {
		r.writesLeft = int(v)
	}
}

// signIn signs name in (once a run) and learns its address and id.
func (r *run) signIn(name string) *identity {
	if id, ok := r.ids[name]; ok {
		return &id
	}
	if r.failed || !r.p.Can("qa_login") || !r.p.Room(2) || !r.canWrite(1) {
		return nil
	}
	ex := r.p.Exchange("qa_login", r.loginArgs(name, ""))
	r.noteWrites(ex.Result)
	if replay.RefusedByDial(ex) {
		r.p.Skip("qa_login refused (%s): nothing behind the sign-in at %s probed", replay.Clip(ex.Result.Err(), 80), pathOf(r.flow.Verify.URL))
		r.failed = true
		return nil
	}
	if !ex.Result.IsOK() {
		r.p.Notef("signing in at %s as the docs describe failed: %s", pathOf(r.flow.Verify.URL), replay.Clip(ex.Result.Err(), 160))
		r.failed = true
		return nil
	}
	r.signedUp(name)
	id := identity{name: name, addr: strings.ToLower(replay.Str(ex.Result, "address")), session: replay.Str(ex.Result, "session")}
	if r.flow.Me.URL != "" {
		me := r.fetch(r.flow.Me.URL, name)
		if top := jsonObject(replay.Body(me)); top != nil {
			for _, k := range []string{"id", "user_id", "account_id", "uid"} {
				if v, ok := top[k]; ok {
					id.id = strings.Trim(string(v), `"`)
					break
				}
			}
		}
	}
	r.ids[name] = id
	return &id
}

// fetch GETs u as identity as ("" for none).
func (r *run) fetch(u, as string) fleet.Result {
	if !r.p.Room(1) || !r.p.Can("qa_fetch") {
		return fleet.Result{}
	}
	args := map[string]any{"url": u}
	if as != "" {
		args["as"] = as
	}
	return r.p.Call("qa_fetch", args)
}

func ok2xx(res fleet.Result) bool { st := replay.Status(res); return st >= 200 && st < 300 }

func jsonObject(s string) map[string]json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal([]byte(s), &m) != nil {
		return nil
	}
	return m
}

// fieldNames names the fields of an answer, never their values.
func fieldNames(body string) string {
	keys := docclaims.TopKeys(body)
	if len(keys) == 0 {
		return "no JSON fields"
	}
	return "fields " + strings.Join(replay.First(keys, 8), ", ")
}

// objectLevel: a's resources requested with b's session.
func (r *run) objectLevel(a, b *identity) {
	for _, e := range replay.First(r.flow.Objects, maxObjects) {
		own := Fill(e.URL, a.addr, a.id)
		mine := r.fetch(own, a.name)
		if !ok2xx(mine) {
			r.p.Notef("identity a could not read its own %s (status %d): object-level check skipped there", pathOf(e.URL), replay.Status(mine))
			continue
		}
		theirs := r.fetch(own, b.name)
		if !r.sameObject(mine, theirs, a) {
			continue
		}
		extra, writes := map[string]any{"url": e.URL, "me_url": r.flow.Me.URL}, 2
		if u, ok := r.ownWrite(e.URL); ok {
			// The repro writes first, as the docs' update does (A's
			// create), so B's read shows what A wrote.
			body, _ := json.Marshal(map[string]string{u.Writable[0]: writeMark})
			extra["write_method"], extra["write_json"], writes = u.Method, string(body), 3
		}
		args := r.repro("object", extra)
		sev, note := r.confirm(args, writes, "two more fresh identities")
		r.p.File(sev, SurfaceAuthz, fmt.Sprintf(
			"Broken object-level authorization (OWASP API1, CWE-639): identity b (a fresh account) read identity a's resource at GET %s (a's %s in the URL, learned from a's sign-in), status %d; the answer holds a's %s. Expected 403 or 404 for another account's resource.%s Doc: %s",
			pathOf(e.URL), placeholder(e.URL), replay.Status(theirs), fieldNames(replay.Body(theirs)), note, replay.Quote(e.Quote, 120)), reproTool(args), args)
	}
}

// writeMark is the harmless value an object repro's identity a writes to
// its own resource before b reads it.
const writeMark = "qa-authz-mark"

// ownWrite is the documented update of the resource template u (same
// URL, PUT or PATCH) with a field the docs list as writable.
func (r *run) ownWrite(u string) (Endpoint, bool) {
	for _, e := range r.flow.Updates {
		if e.URL == u && len(e.Writable) > 0 {
			return e, true
		}
	}
	return Endpoint{}, false
}

// reproTool is the tool of a two-identity finding's repro: qa_authz, ""
// for a finding without one (args nil: no call left to confirm it).
func reproTool(args map[string]any) string {
	if args == nil {
		return ""
	}
	return "qa_authz"
}

// repro is the one-call repro of a two-identity finding: qa_authz's
// arguments, which sign in fresh identities of its own. It holds URL
// templates, never an identity's address, session or data.
func (r *run) repro(check string, extra map[string]any) map[string]any {
	if !r.p.Has("qa_authz") {
		return nil
	}
	args := map[string]any{"check": check, "nonce_url": r.flow.Nonce.URL, "verify_url": r.flow.Verify.URL}
	if r.flow.ChainID != 0 {
		args["chain_id"] = r.flow.ChainID
	}
	for k, v := range extra {
		if v != "" {
			args[k] = v
		}
	}
	return args
}

// confirm replays a finding's repro (args) once, which signs in fresh
// identities (who: how the finding names them) and spends writes: high
// when it showed the flaw again, medium when it could not run or did not.
func (r *run) confirm(args map[string]any, writes int, who string) (fleet.Severity, string) {
	if args == nil || !r.p.Can("qa_authz") || !r.canWrite(writes) || !r.p.Room(2) {
		return fleet.SeverityMedium, " Not confirmed: no repro with fresh identities could be run (qa_authz, the write budget or the call cap)."
	}
	ex := r.p.Exchange("qa_authz", args)
	r.noteWrites(ex.Result)
	if replay.Str(ex.Result, "outcome") == "reproduced" {
		return fleet.SeverityHigh, " Confirmed by its repro with " + who + " (qa_authz)."
	}
	return fleet.SeverityMedium, " Not confirmed: its repro with " + who + " did not show it again."
}

// sameObject reports whether theirs (another session's answer) is owner's
// resource: a 2xx holding owner's address, or the very answer owner got.
func (r *run) sameObject(mine, theirs fleet.Result, owner *identity) bool {
	if !ok2xx(theirs) {
		return false
	}
	if replay.Str(mine, "sha256") != "" && replay.Str(mine, "sha256") == replay.Str(theirs, "sha256") {
		return true
	}
	return owner.addr != "" && strings.Contains(strings.ToLower(replay.Body(theirs)), owner.addr)
}

func placeholder(u string) string {
	if v := siwe.IdentityVar(u); v != "" {
		return v
	}
	return "id"
}

// functionLevel: endpoints the docs reserve for a role, read by b.
func (r *run) functionLevel(b *identity) {
	for _, e := range replay.First(r.flow.Reserved, maxReserved) {
		if siwe.IdentityVar(e.URL) != "" {
			continue
		}
		got := r.fetch(e.URL, b.name)
		if !ok2xx(got) {
			continue
		}
		if anon := r.fetch(e.URL, ""); ok2xx(anon) {
			continue // public to anyone: not a question of roles
		}
		args := r.repro("function", map[string]any{"url": e.URL})
		sev, note := r.confirm(args, 1, "another fresh identity")
		r.p.File(sev, SurfaceAuthz, fmt.Sprintf(
			"Broken function-level authorization (OWASP API5, CWE-285): identity b (a fresh account without the %s role) called GET %s, which the docs reserve for %s, and got status %d with %s (without a session it is refused). Expected 403.%s Doc: %s",
			e.Role, pathOf(e.URL), e.Role, replay.Status(got), fieldNames(replay.Body(got)), note, replay.Quote(e.Quote, 120)), reproTool(args), args)
	}
}

// propertyLevel: privilege fields the docs do not list as writable, sent
// in an update of b's own resource, then read back.
func (r *run) propertyLevel(a, b *identity) {
	for _, e := range replay.First(r.flow.Updates, maxUpdates) {
		if !r.p.Can("qa_submit") {
			r.p.Skip("qa_submit unavailable: property-level check of %s %s skipped", e.Method, pathOf(e.URL))
			return
		}
		for _, field := range r.privFields(e, b) {
			val, ok, restored := r.writePriv(e, b, a, field)
			if !ok {
				continue
			}
			undo := " The field was written back afterwards (as b, read back to be sure)."
			if !restored {
				undo = " Writing the field back failed: the run's summary lists it as left on the platform."
			}
			args := r.repro("property", map[string]any{"url": e.URL, "method": e.Method, "field": field, "value": reproValue(field, val)})
			sev, note := r.confirm(args, 3, "another fresh identity")
			docs := "lists no writable fields"
			if len(e.Writable) > 0 {
				docs = "list only " + strings.Join(e.Writable, ", ") + " as writable"
			}
			r.p.File(sev, SurfaceAuthz, fmt.Sprintf(
				"Broken property-level authorization (mass assignment, OWASP API3, CWE-915): identity b (a fresh account) set %q on its own resource with %s %s and reading it back shows the new value; the docs %s. Expected the field to be refused or ignored.%s%s Doc: %s",
				field, e.Method, pathOf(e.URL), docs, note, undo, replay.Quote(e.Quote, 120)), reproTool(args), args)
		}
	}
}

// reproValue is the value a property repro writes, as JSON: another
// identity's address is "{other}" (qa_authz signs one in), never the
// address of this run's identity.
func reproValue(field string, v any) string {
	if field == "owner" {
		return `"{other}"`
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// privFields are the privilege fields b's own resource shows that the
// docs do not list as writable.
func (r *run) privFields(e Endpoint, b *identity) []string {
	before := jsonObject(replay.Body(r.fetch(Fill(e.URL, b.addr, b.id), b.name)))
	var out []string
	for _, f := range privilege {
		if _, ok := before[f]; ok && !slices.Contains(e.Writable, f) && len(out) < maxPrivFields {
			out = append(out, f)
		}
	}
	return out
}

// writePriv sends field with a privileged value in an update of who's own
// resource and reports whether reading it back shows that value, and the
// value. Whatever the write changed is written back at once by who, the
// owner, and read again (replay.RestoreFields): restored is false when
// that failed and the run lists the fields as left on the platform.
func (r *run) writePriv(e Endpoint, who, other *identity, field string) (val any, shown, restored bool) {
	own := Fill(e.URL, who.addr, who.id)
	before := jsonObject(replay.Body(r.fetch(own, who.name)))
	raw, ok := before[field]
	// The write and its restore; the write, two reads and the restore.
	if !ok || !r.canWrite(2) || !r.p.Room(4) {
		return nil, false, true
	}
	if val = privilegedValue(field, raw, other); val == nil {
		return nil, false, true
	}
	body, _ := json.Marshal(map[string]any{field: val})
	res := r.p.Call("qa_submit", map[string]any{"url": own, "method": e.Method, "enctype": "json", "json": string(body), "as": who.name})
	r.noteWrites(res)
	if !ok2xx(res) {
		return nil, false, true // refused: nothing changed
	}
	after := jsonObject(replay.Body(r.fetch(own, who.name)))
	want, _ := json.Marshal(val)
	restored = r.p.RestoreFields(replay.Restore{URL: own, Shown: pathOf(e.URL), Whose: "identity " + who.name + "'s own resource", Method: e.Method, As: who.name, Before: before, Fields: []string{field}}, after)
	if n, known := r.p.WritesLeft(); known && (r.writesLeft < 0 || n < r.writesLeft) {
		r.writesLeft = n // the restore's write
	}
	return val, after != nil && string(after[field]) == string(want) && string(raw) != string(want), restored
}

// privilegedValue is the value of field that would raise its holder, or
// nil when none is known (or it already holds it).
func privilegedValue(field string, cur json.RawMessage, other *identity) any {
	switch field {
	case "role":
		return "admin"
	case "roles", "permissions", "scopes":
		return []string{"admin"}
	case "owner":
		if other != nil && other.addr != "" {
			return other.addr
		}
		return nil
	case "balance", "credits":
		var n float64
		if json.Unmarshal(cur, &n) != nil {
			return nil
		}
		return n + 1000000
	case "plan", "tier":
		return "enterprise"
	}
	if string(cur) == "true" {
		return nil
	}
	return true
}

// lifecycle: a session must not answer after logout.
func (r *run) lifecycle() {
	if r.flow.Logout.URL == "" || r.flow.Me.URL == "" || !r.p.Can("qa_submit") {
		return
	}
	stillIn := func(name string) (bool, int) { // one fresh identity signs out
		l := r.signIn(name)
		if l == nil || !ok2xx(r.fetch(r.flow.Me.URL, name)) || !r.canWrite(1) || !r.p.Room(2) {
			return false, 0
		}
		res := r.p.Call("qa_submit", map[string]any{"url": r.flow.Logout.URL, "method": "POST", "enctype": "json", "json": "{}", "as": name})
		r.noteWrites(res)
		if !ok2xx(res) {
			return false, replay.Status(res)
		}
		after := r.fetch(r.flow.Me.URL, name)
		return ok2xx(after), replay.Status(after)
	}
	live, st := stillIn("l")
	if !live {
		return
	}
	args := r.repro("logout", map[string]any{"logout_url": r.flow.Logout.URL, "me_url": r.flow.Me.URL})
	sev, note := r.confirm(args, 2, "another fresh identity")
	session := r.ids["l"].session
	r.p.File(sev, SurfaceAuth, fmt.Sprintf(
		"Session not ended by logout (OWASP API2, CWE-613): identity l (a fresh account) signed out with POST %s (2xx), then GET %s with the same session (%s) still answered %d. Expected 401: a stolen token must die with logout.%s",
		pathOf(r.flow.Logout.URL), pathOf(r.flow.Me.URL), session, st, note), reproTool(args), args)
}

// rotation: identity a signs in again carrying its session; a new
// session must come back (qa_login's rotated).
func (r *run) rotation() {
	a, ok := r.ids["a"]
	if !ok || r.failed || !r.canWrite(1) || !r.p.Room(2) {
		return
	}
	ex := r.p.Exchange("qa_login", r.loginArgs("a", ""))
	r.noteWrites(ex.Result)
	if v, has := ex.Result["rotated"].(bool); !has || v {
		return
	}
	r.p.File(fleet.SeverityMedium, SurfaceAuth, fmt.Sprintf(
		"Session not rotated at sign-in (session fixation, CWE-384, OWASP API2): identity a (a fresh account) signed in again at POST %s while sending its live session (%s) and got that same session back. Expected every sign-in to issue a new session, so a session planted before sign-in is worthless. Steps: qa_login {identity: a}, qa_login {identity: a} (rotated: false).",
		pathOf(r.flow.Verify.URL), a.session), "", nil)
}

// tamperFindings are the sign-in verification probes: severity and what
// a correct server checks.
var tamperFindings = []struct {
	tamper string
	sev    fleet.Severity
	what   string
}{
	{"other_signer", fleet.SeverityCritical, "a message naming identity t's address but signed by another key was accepted: anyone can sign in as any address. Expected the signature's recovered address to equal the message's"},
	{"reuse_nonce", fleet.SeverityHigh, "the same signed message (its nonce already used) signed identity t in a second time: a captured sign-in replays. Expected the nonce to be single-use"},
	{"domain", fleet.SeverityHigh, "a message for another domain (qa-foreign.invalid) was accepted: a sign-in signed on a phishing site works here. Expected the message's domain to be checked"},
	{"expired", fleet.SeverityMedium, "a message whose Expiration Time passed an hour ago was accepted. Expected expired messages to be refused"},
	{"uri", fleet.SeverityMedium, "a message with a foreign URI (https://qa-foreign.invalid/) was accepted. Expected the URI to be checked"},
	{"chain_id", fleet.SeverityMedium, "a message for another chain id was accepted. Expected the chain id to be checked"},
}

// verification: qa_login's tampers, each a login a correct server refuses.
func (r *run) verification() {
	for _, tf := range tamperFindings {
		if r.failed || !r.canWrite(2) || !r.p.Room(2) {
			return
		}
		args := r.loginArgs("t", tf.tamper)
		ex := r.p.Exchange("qa_login", args)
		r.noteWrites(ex.Result)
		if ex.Result.IsOK() {
			r.signedUp("t") // reuse_nonce signs t in properly first
		}
		if !ex.Result.IsOK() || !replay.Flag(ex.Result, "accepted") {
			continue
		}
		r.p.FileChecked(tf.sev, SurfaceAuth, fmt.Sprintf("Sign-In with Ethereum verification (EIP-4361, OWASP API2) at POST %s: %s. The repro signs in a fresh throwaway identity.",
			pathOf(r.flow.Verify.URL), tf.what), "qa_login", args, func(res fleet.Result) bool { return replay.Flag(res, "accepted") })
	}
}
