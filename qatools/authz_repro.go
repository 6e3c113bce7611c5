package qatools

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/qafleet/fleetd/clip"
	"github.com/qafleet/fleetd/docclaims"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/siwe"
)

// qa_authz (issue 33, item 4) is the one-call repro of a finding only two
// identities can show. The security playbook finds such a finding in
// several calls (qa_login twice, qa_fetch as each); its repro must replay
// with identities nobody has seen, so a feedback entry, `fleetd runs
// replay` and the fix stage's reproduce step can each show it again
// without key material, sessions or another user's data: qa_authz signs
// in fresh throwaway identities of its own (as qa_login does, a write
// each), performs the check's steps with their sessions, and answers
// whether it reproduced, with the statuses and the field names that show
// it, never a value.

// Outcomes of qa_authz.
const (
	AuthzReproduced    = "reproduced"     // the flaw showed again
	AuthzNotReproduced = "not_reproduced" // the platform refused as it should
	AuthzInconclusive  = "inconclusive"   // a step before the check failed (an identity could not read its own resource)
)

type authzArgs struct {
	Check     string `json:"check" enum:"object,function,property,logout" desc:"object: identity a's resource (url filled with a's address or id) read by a fresh identity b; function: an endpoint the docs reserve for a role read by a fresh plain identity (and refused without a session); property: a fresh identity writes field on its own resource (url) with method and reads it back; logout: a fresh identity signs out (logout_url) and reads me_url with the same session"`
	NonceURL  string `json:"nonce_url,omitempty" desc:"the sign-in's nonce URL; default target.auth.nonce" maxlen:"2048"`
	VerifyURL string `json:"verify_url,omitempty" desc:"the sign-in's verify URL; default target.auth.verify" maxlen:"2048"`
	ChainID   uint64 `json:"chain_id,omitempty" desc:"the sign-in message's Chain ID; default target.auth.chain_id or 1"`
	URL       string `json:"url,omitempty" desc:"the resource: a URL template with {address} or {id} (object, property; each identity's own values go in) or the reserved endpoint (function)" maxlen:"2048"`
	// WriteMethod and WriteJSON make the object check write first: A's
	// create or update of its own resource, so B's read shows A's write.
	WriteMethod string `json:"write_method,omitempty" enum:"POST,PUT,PATCH" desc:"object: identity a first writes its own resource (url) with this method and write_json, as the docs' update does; b's read must then show it"`
	WriteJSON   string `json:"write_json,omitempty" desc:"object: the JSON object a writes: harmless marker values, never anyone's data" maxlen:"512"`
	MeURL       string `json:"me_url,omitempty" desc:"the who-am-I endpoint: an identity's id is read from it for {id}; logout: what must refuse after logout" maxlen:"2048"`
	LogoutURL   string `json:"logout_url,omitempty" desc:"logout: the endpoint a POST signs out at" maxlen:"2048"`
	Method      string `json:"method,omitempty" enum:"PATCH,PUT" desc:"property: the update's method (default PATCH)"`
	Field       string `json:"field,omitempty" desc:"property: the field written" maxlen:"64"`
	Value       string `json:"value,omitempty" desc:"property: the value written, as JSON; the string \"{other}\" stands for another fresh identity's address" maxlen:"256"`
}

// authzIdentity is one fresh identity qa_authz signed in.
type authzIdentity struct{ name, addr, id string }

// authzUndoGrace bounds the undo of a call the run's end cut short.
const authzUndoGrace = 30 * time.Second

// authz: qa_authz. Whatever the check ends with, its writes are undone
// or listed as left on the platform (authzUndo), in the result. The undo
// runs even when the run was cancelled mid-call (as the run's cleanup
// does: a context of its own, bounded by authzUndoGrace), and a call that
// ends the run (cancelled, the budget spent) still returns its result:
// ok false, the error, and what it wrote, undid and left, which the run
// record keeps and the run's outcome lists (fleet.ResultLeftOnPlatform).
func (t *tools) authz(ctx context.Context, a authzArgs) (fleet.Result, error) {
	u := &authzUndo{t: t, verify: a.VerifyURL}
	res, err := t.authzCheck(ctx, a, u)
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), authzUndoGrace)
	ferr := u.finish(uctx)
	cancel()
	if err == nil {
		err = ferr
	}
	if res == nil {
		res = fleet.Result{"check": a.Check}
	}
	if err != nil {
		res["ok"], res["error"] = false, "qa_authz: "+err.Error()
	}
	u.into(res)
	return res, err
}

// authzCheck performs a's check; its writes go through u.
func (t *tools) authzCheck(ctx context.Context, a authzArgs, undo *authzUndo) (fleet.Result, error) {
	need := map[string][]string{"object": {"url"}, "function": {"url"}, "property": {"url", "field", "value"}, "logout": {"logout_url", "me_url"}}
	given := map[string]string{"url": a.URL, "field": a.Field, "value": a.Value, "logout_url": a.LogoutURL, "me_url": a.MeURL}
	for _, k := range need[a.Check] {
		if given[k] == "" {
			return fleet.Fail("qa_authz: check %s needs %s", a.Check, k), nil
		}
	}
	if (a.Check == "object" || a.Check == "property") && siwe.IdentityVar(a.URL) == "" {
		return fleet.Fail("qa_authz: check %s needs a url templated with the identity ({address} or {id}), not %q", a.Check, clip.Text(a.URL, 80)), nil
	}
	var marks []string
	if a.WriteMethod != "" || a.WriteJSON != "" {
		var w map[string]any
		if a.Check != "object" || a.WriteMethod == "" || json.Unmarshal([]byte(a.WriteJSON), &w) != nil {
			return fleet.Fail("qa_authz: write_method and write_json go together, with check object, and write_json is a JSON object"), nil
		}
		for _, v := range w {
			if s, ok := v.(string); ok && len(s) >= 6 {
				marks = append(marks, s)
			}
		}
	}
	var val any
	if a.Check == "property" {
		if err := json.Unmarshal([]byte(a.Value), &val); err != nil {
			return fleet.Fail("qa_authz: value %q is not JSON: %v", clip.Text(a.Value, 40), err), nil
		}
	}
	res := map[string]any{"check": a.Check}
	done := func(outcome, detail string) (fleet.Result, error) {
		res["outcome"], res["detail"] = outcome, detail
		if left, limited := t.run.Meter.Remaining(fleet.ResWrites); limited {
			res["writes_left"] = left
		}
		return fleet.OK(res), nil
	}
	// Fresh identities: names no earlier call of the run used, never a
	// role of target.auth.accounts (their keys are the operator's).
	signIn := func(role string) (*authzIdentity, fleet.Result, error) {
		name := t.freshIdentity(role)
		went := undo.spent()
		r, err := t.login(ctx, loginArgs{Identity: name, NonceURL: a.NonceURL, VerifyURL: a.VerifyURL, ChainID: a.ChainID})
		if err != nil || !r.IsOK() {
			if went() {
				// The sign-in got as far as its write: the platform may
				// hold an account for it (its address, when known, is
				// masked like a signed-in one's, in the error too).
				id := &authzIdentity{name: name}
				if addr, ok := r["address"].(string); ok {
					id.addr = strings.ToLower(addr)
				}
				cut := r.Err()
				if err != nil {
					cut = err.Error()
				}
				undo.signedIn(id, cut)
			}
			if r != nil {
				r = fleet.Fail("qa_authz: signing in a fresh identity: %s", strings.TrimPrefix(r.Err(), "qa_login: "))
			}
			return nil, r, err
		}
		id := &authzIdentity{name: name, addr: strings.ToLower(fmt.Sprint(r["address"]))}
		undo.signedIn(id, "")
		if a.MeURL != "" {
			if me, err := t.authzGet(ctx, a.MeURL, name); err != nil {
				return nil, nil, err
			} else if top := jsonTop(me); top != nil {
				for _, k := range []string{"id", "user_id", "account_id", "uid"} {
					if v, ok := top[k]; ok {
						id.id = strings.Trim(string(v), `"`)
						break
					}
				}
			}
		}
		return id, nil, nil
	}
	switch a.Check {
	case "object":
		owner, fail, err := signIn("a")
		if owner == nil {
			return fail, err
		}
		other, fail, err := signIn("b")
		if other == nil {
			return fail, err
		}
		u := siwe.Fill(a.URL, owner.addr, owner.id)
		if a.WriteMethod != "" {
			var prior map[string]json.RawMessage
			if a.WriteMethod != "POST" {
				// What a's resource held, to write back when the call ends.
				p, err := t.authzGet(ctx, u, owner.name)
				if err != nil {
					return nil, err
				}
				if prior = jsonTop(p); !is2xx(p) || prior == nil {
					return done(AuthzInconclusive, fmt.Sprintf("fresh identity a could not read its own resource at GET %s (status %v) before writing it", pathOnly(a.URL), p["status"]))
				}
			}
			w, sent, err := undo.write(ctx, u, a.WriteMethod, a.WriteJSON, owner.name, prior)
			if err != nil {
				return nil, err
			}
			if !sent {
				return done(AuthzInconclusive, "the run's write budget cannot hold a's write and its undo")
			}
			if res["status_write"] = w["status"]; !is2xx(w) {
				return done(AuthzInconclusive, fmt.Sprintf("fresh identity a could not write its own resource with %s %s (status %v)", a.WriteMethod, pathOnly(a.URL), w["status"]))
			}
		}
		mine, err := t.authzGet(ctx, u, owner.name)
		if err != nil {
			return nil, err
		}
		res["status_owner"] = mine["status"]
		if !is2xx(mine) {
			return done(AuthzInconclusive, fmt.Sprintf("fresh identity a could not read its own resource at GET %s (status %v)", pathOnly(a.URL), mine["status"]))
		}
		theirs, err := t.authzGet(ctx, u, other.name)
		if err != nil {
			return nil, err
		}
		res["status_other"] = theirs["status"]
		if !is2xx(theirs) || !(mine["sha256"] != nil && mine["sha256"] == theirs["sha256"] || owner.addr != "" && strings.Contains(strings.ToLower(fmt.Sprint(theirs["body"])), owner.addr) || showsAll(theirs, marks)) {
			return done(AuthzNotReproduced, fmt.Sprintf("fresh identity b was answered %v for identity a's resource at GET %s", theirs["status"], pathOnly(a.URL)))
		}
		res["fields"] = fieldList(theirs)
		return done(AuthzReproduced, fmt.Sprintf("fresh identity b read fresh identity a's resource at GET %s: status %v, %s", pathOnly(a.URL), theirs["status"], fieldWords(theirs)))
	case "function":
		plain, fail, err := signIn("b")
		if plain == nil {
			return fail, err
		}
		got, err := t.authzGet(ctx, a.URL, plain.name)
		if err != nil {
			return nil, err
		}
		anon, err := t.authzGet(ctx, a.URL, "")
		if err != nil {
			return nil, err
		}
		res["status_other"], res["status_anonymous"] = got["status"], anon["status"]
		if !is2xx(got) || statusOf(anon) < 400 {
			return done(AuthzNotReproduced, fmt.Sprintf("GET %s answered a fresh plain identity %v and no session %v", pathOnly(a.URL), got["status"], anon["status"]))
		}
		res["fields"] = fieldList(got)
		return done(AuthzReproduced, fmt.Sprintf("a fresh plain identity called GET %s: status %v, %s; without a session %v", pathOnly(a.URL), got["status"], fieldWords(got), anon["status"]))
	case "property":
		who, fail, err := signIn("b")
		if who == nil {
			return fail, err
		}
		if a.Value == `"{other}"` {
			other, fail, err := signIn("a")
			if other == nil {
				return fail, err
			}
			val = other.addr
		}
		u := siwe.Fill(a.URL, who.addr, who.id)
		before, err := t.authzGet(ctx, u, who.name)
		if err != nil {
			return nil, err
		}
		cur, ok := jsonTop(before)[a.Field]
		if !is2xx(before) || !ok {
			return done(AuthzInconclusive, fmt.Sprintf("a fresh identity's own resource at GET %s (status %v) shows no field %q", pathOnly(a.URL), before["status"], a.Field))
		}
		want, _ := json.Marshal(val)
		if string(cur) == string(want) {
			return done(AuthzInconclusive, fmt.Sprintf("a fresh identity's %q already holds the value sent", a.Field))
		}
		body, _ := json.Marshal(map[string]any{a.Field: val})
		method := a.Method
		if method == "" {
			method = "PATCH"
		}
		w, sent, err := undo.write(ctx, u, method, string(body), who.name, jsonTop(before))
		if err != nil {
			return nil, err
		}
		if !sent {
			return done(AuthzInconclusive, "the run's write budget cannot hold the write and its undo")
		}
		res["status_write"] = w["status"]
		after, err := t.authzGet(ctx, u, who.name)
		if err != nil {
			return nil, err
		}
		if !is2xx(w) || string(jsonTop(after)[a.Field]) != string(want) {
			return done(AuthzNotReproduced, fmt.Sprintf("%s %s with %q answered %v and reading it back does not show the value sent", method, pathOnly(a.URL), a.Field, w["status"]))
		}
		return done(AuthzReproduced, fmt.Sprintf("a fresh identity set %q on its own resource with %s %s (status %v) and reading it back shows the value sent", a.Field, method, pathOnly(a.URL), w["status"]))
	case "logout":
		who, fail, err := signIn("l")
		if who == nil {
			return fail, err
		}
		in, err := t.authzGet(ctx, a.MeURL, who.name)
		if err != nil {
			return nil, err
		}
		if !is2xx(in) {
			return done(AuthzInconclusive, fmt.Sprintf("a fresh identity's session was refused at GET %s before logout (status %v)", pathOnly(a.MeURL), in["status"]))
		}
		out, err := undo.post(ctx, a.LogoutURL, who.name)
		if err != nil {
			return nil, err
		}
		res["status_logout"] = out["status"]
		after, err := t.authzGet(ctx, a.MeURL, who.name)
		if err != nil {
			return nil, err
		}
		res["status_after"] = after["status"]
		if !is2xx(out) || !is2xx(after) {
			return done(AuthzNotReproduced, fmt.Sprintf("after POST %s (status %v), GET %s with the same session answered %v", pathOnly(a.LogoutURL), out["status"], pathOnly(a.MeURL), after["status"]))
		}
		return done(AuthzReproduced, fmt.Sprintf("a fresh identity signed out with POST %s (status %v), and GET %s with the same session still answered %v", pathOnly(a.LogoutURL), out["status"], pathOnly(a.MeURL), after["status"]))
	}
	return fleet.Fail("qa_authz: unknown check %q", a.Check), nil
}

// freshIdentity names an identity no call of this run signed in yet and
// no test account holds: qa_authz's "a" becomes authz1a, then authz2a.
func (t *tools) freshIdentity(role string) string {
	t.ids.mu.Lock()
	defer t.ids.mu.Unlock()
	for n := 1; ; n++ {
		name := fmt.Sprintf("authz%d%s", n, role)
		_, keyed := t.ids.keys[name]
		_, given := t.env.Accounts[name]
		if !keyed && !given {
			return name
		}
	}
}

// authzGet GETs u with the session of identity as ("" for none). A
// refusal or a network failure is a result without a status (answered
// nothing); the error is the run's end.
func (t *tools) authzGet(ctx context.Context, u, as string) (fleet.Result, error) {
	return t.fetch(ctx, fetchArgs{URL: u, As: as})
}

// showsAll reports whether an answer's body holds every mark (none: false).
func showsAll(r fleet.Result, marks []string) bool {
	body := fmt.Sprint(r["body"])
	for _, m := range marks {
		if !strings.Contains(body, m) {
			return false
		}
	}
	return len(marks) > 0
}

func statusOf(r fleet.Result) int {
	switch v := r["status"].(type) {
	case int:
		return v
	case float64:
		return int(v)
	}
	return 0
}

func is2xx(r fleet.Result) bool { st := statusOf(r); return st >= 200 && st < 300 }

func jsonTop(r fleet.Result) map[string]json.RawMessage {
	var m map[string]json.RawMessage
	if s, ok := r["body"].(string); ok && json.Unmarshal([]byte(s), &m) == nil {
		return m
	}
	return nil
}

// fieldList names the fields of an answer, never their values.
func fieldList(r fleet.Result) []string {
	s, _ := r["body"].(string)
	keys := docclaims.TopKeys(s)
	if len(keys) > 8 {
		keys = keys[:8]
	}
	return keys
}

func fieldWords(r fleet.Result) string {
	if keys := fieldList(r); len(keys) > 0 {
		return "fields " + strings.Join(keys, ", ")
	}
	return "no JSON fields"
}

// pathOnly is a URL's path (the template's placeholders kept).
func pathOnly(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.Path != "" {
		return u.Path
	}
	return raw
}
