package qatools

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fixtures/siwe"
	"github.com/qafleet/fleetd/fixtures/twin"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/sandbox"
	"github.com/qafleet/fleetd/trajectory"
)

// signinHarness is a Keyring platform and a run's tools over it, without a
// chain: signing in is off-chain.
type signinHarness struct {
	t   *testing.T
	app *siwe.App
	ctl *fleet.Control
	env *Env
	reg *fleet.Registry
	run *Run
}

func newSigninHarness(t *testing.T, mode twin.Mode, dial fleet.Dial, accounts map[string]*chain.Key) *signinHarness {
	t.Helper()
	var admins []fleet.Address
	for _, k := range accounts {
		admins = append(admins, k.Address())
	}
	app := siwe.Serve(mode, admins...)
	t.Cleanup(app.Close)
	dir := t.TempDir()
	ctl := fleet.NewControl(dir)
	if _, err := ctl.SetDial(dial, "test", "test"); err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(app.URL())
	allow, err := NewAllowlist([]string{u.Host})
	if err != nil {
		t.Fatal(err)
	}
	sponsor, _ := chain.GenerateKey()
	env := &Env{Target: app.Target(), Sponsor: sponsor, Fetcher: NewFetcher(allow, 5*time.Second, 64<<10), Accounts: accounts,
		Limits: Limits{RequestRate: -1}}
	sb, err := sandbox.Open(filepath.Join(dir, "qa-sandbox"), "r-signin")
	if err != nil {
		t.Fatal(err)
	}
	run := &Run{ID: "r-signin", Source: "qa-test", Sandbox: sb, Meter: sandbox.NewMeter(fleet.Budget{MaxWrites: 40}), Sessions: NewSessions(ctl)}
	reg, err := NewRegistry(env, run)
	if err != nil {
		t.Fatal(err)
	}
	return &signinHarness{t: t, app: app, ctl: ctl, env: env, reg: reg, run: run}
}

func (h *signinHarness) call(tool string, args map[string]any) fleet.Outcome {
	h.t.Helper()
	raw, _ := json.Marshal(args)
	out, err := h.reg.Dispatch(context.Background(), h.ctl, tool, raw)
	if err != nil {
		h.t.Fatalf("%s: %v", tool, err)
	}
	return out
}

func (h *signinHarness) login(identity string, extra map[string]any) fleet.Outcome {
	args := map[string]any{"identity": identity, "nonce_url": h.app.URL() + "/api/auth/nonce", "verify_url": h.app.URL() + "/api/auth/verify", "chain_id": siwe.ChainID}
	for k, v := range extra {
		args[k] = v
	}
	return h.call("qa_login", args)
}

// TestLoginKeepsSessionsPerIdentity: qa_login signs fresh identities in
// with a real EIP-4361 verification; each identity's session goes with
// the calls that name it and with no other; a second identity is another
// address; a login spends a write.
func TestLoginKeepsSessionsPerIdentity(t *testing.T) {
	h := newSigninHarness(t, twin.Correct, fleet.Exercise, nil)
	a := h.login("a", nil)
	if a.Verdict != fleet.VerdictOK || a.Result["session"] != "cookie kr_session + bearer token" {
		t.Fatalf("login a: %s %v", a.Verdict, a.Result)
	}
	b := h.login("b", nil)
	if b.Verdict != fleet.VerdictOK || b.Result["address"] == a.Result["address"] {
		t.Fatalf("login b: %v (a is %v)", b.Result, a.Result["address"])
	}
	if used := h.run.Meter.Used(fleet.ResWrites); used != 2 {
		t.Errorf("two logins spent %d writes, want 2", used)
	}
	me := func(as string) fleet.Outcome {
		args := map[string]any{"url": h.app.URL() + "/api/me"}
		if as != "" {
			args["as"] = as
		}
		return h.call("qa_fetch", args)
	}
	for _, id := range []string{"a", "b"} {
		out := me(id)
		want := map[string]fleet.Result{"a": a.Result, "b": b.Result}[id]["address"].(string)
		if out.Result["status"] != 200 || !strings.Contains(str(out.Result["body"]), want) {
			t.Errorf("GET /api/me as %s: %v", id, out.Result)
		}
		if _, has := out.Result["headers"].(map[string]any)["set-cookie"]; has {
			t.Error("a session's Set-Cookie reached a result")
		}
	}
	if out := me(""); out.Result["status"] != 401 {
		t.Errorf("GET /api/me with no identity: %v", out.Result["status"])
	}
	if out := me("c"); out.Verdict != fleet.VerdictError || !strings.Contains(out.Result.Err(), "no session for identity") {
		t.Errorf("an identity never signed in: %s %v", out.Verdict, out.Result)
	}
	// qa_submit and qa_call carry the session too.
	patch := h.call("qa_submit", map[string]any{"url": h.app.URL() + "/api/accounts/" + a.Result["address"].(string) + "/settings",
		"method": "PATCH", "enctype": "json", "json": `{"display_name":"ayy"}`, "as": "a"})
	if patch.Result["status"] != 200 || !strings.Contains(str(patch.Result["body"]), "ayy") {
		t.Errorf("qa_submit as a: %v", patch.Result)
	}
	if got := h.app.Seen().WithSession; got != 3 {
		t.Errorf("requests with a session: %d, want 3 (two reads, one write)", got)
	}
	// Tokens and cookies never show in a result.
	raw, _ := json.Marshal([]fleet.Result{a.Result, b.Result, patch.Result})
	for _, body := range h.app.Seen().Bodies {
		if i := strings.Index(body, "Bearer "); i >= 0 {
			tok := strings.Fields(body[i+len("Bearer "):])[0]
			if strings.Contains(string(raw), tok) {
				t.Fatal("a session token reached a tool result")
			}
		}
	}
}

// TestLoginTampers: each sign-in verification probe is refused by the
// correct twin and accepted by the flawed one, and keeps no session.
func TestLoginTampers(t *testing.T) {
	for _, mode := range []twin.Mode{twin.Flawed, twin.Correct} {
		t.Run(mode.String(), func(t *testing.T) {
			h := newSigninHarness(t, mode, fleet.Exercise, nil)
			for _, tamper := range tampers {
				out := h.login("t", map[string]any{"tamper": tamper})
				if out.Verdict != fleet.VerdictOK || out.Result["accepted"] != (mode == twin.Flawed) || out.Result["tamper"] != tamper {
					t.Errorf("%s: %s %v", tamper, out.Verdict, out.Result)
				}
			}
			if out := h.call("qa_fetch", map[string]any{"url": h.app.URL() + "/api/me", "as": "t"}); out.Verdict != fleet.VerdictError {
				t.Errorf("a tampered login left a session: %v", out.Result)
			}
		})
	}
}

// TestNothingBehindTheLoginAtObserve: at observe no identity signs in and
// no request carries a session, whatever the calls ask; lowering the dial
// after a sign-in stops the session's use at the next call. The never-list:
// qa_call refuses Cookie and Authorization headers (no replay of a cookie
// fleetd did not get by signing in).
func TestNothingBehindTheLoginAtObserve(t *testing.T) {
	h := newSigninHarness(t, twin.Flawed, fleet.Observe, nil)
	if out := h.login("a", nil); out.Verdict != fleet.VerdictRefused {
		t.Fatalf("qa_login at observe: %s", out.Verdict)
	}
	if out := h.call("qa_fetch", map[string]any{"url": h.app.URL() + "/api/me", "as": "a"}); out.Verdict != fleet.VerdictError ||
		!strings.Contains(out.Result.Err(), "needs dial exercise") {
		t.Fatalf("qa_fetch as a at observe: %s %v", out.Verdict, out.Result)
	}
	h.ctl.SetDial(fleet.Exercise, "test", "test")
	if out := h.login("a", nil); out.Verdict != fleet.VerdictOK {
		t.Fatalf("login at exercise: %v", out.Result)
	}
	before := h.app.Seen()
	h.ctl.SetDial(fleet.Observe, "test", "test")
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"qa_fetch", map[string]any{"url": h.app.URL() + "/api/me", "as": "a"}},
		{"qa_fetch", map[string]any{"url": h.app.URL() + "/docs/api.md"}},
	} {
		h.call(c.tool, c.args)
	}
	after := h.app.Seen()
	if after.WithSession != before.WithSession || after.SignIns != before.SignIns {
		t.Errorf("at observe: %d requests with a session, %d sign-ins, want 0 and 0",
			after.WithSession-before.WithSession, after.SignIns-before.SignIns)
	}
	if after.Requests != before.Requests+1 {
		t.Errorf("at observe %d requests reached the platform, want 1 (the public docs)", after.Requests-before.Requests)
	}
	h.ctl.SetDial(fleet.Exercise, "test", "test")
	for _, hdr := range []string{"Cookie", "authorization"} {
		out := h.call("qa_call", map[string]any{"target": "x", "message": "hi", "headers": map[string]any{hdr: "kr_session=stolen"}})
		if out.Verdict != fleet.VerdictError || !strings.Contains(out.Result.Err(), "only sessions of identities it signed in") {
			t.Errorf("qa_call with a %s header: %s %v", hdr, out.Verdict, out.Result)
		}
	}
	if h.app.Seen().Requests != after.Requests {
		t.Error("a refused credential header still reached the platform")
	}
}

// TestGivenAccountNeverLeaks: a role's test account signs in with its key
// file's key; the key's hex shows in no request the platform saw, no tool
// result, and a run record that got it by mistake redacts it.
func TestGivenAccountNeverLeaks(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "admin.key")
	k, _ := chain.GenerateKey()
	if err := chain.WriteKeyFile(keyFile, k); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(keyFile)
	hexKey := strings.TrimPrefix(strings.TrimSpace(string(raw)), "0x")
	if _, err := hex.DecodeString(hexKey); err != nil || len(hexKey) != 64 {
		t.Fatalf("key file holds %d chars, not 64 hex digits", len(hexKey))
	}
	admin, err := chain.LoadKey(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	h := newSigninHarness(t, twin.Correct, fleet.Exercise, map[string]*chain.Key{"admin": admin})
	out := h.login("admin", nil)
	if out.Verdict != fleet.VerdictOK || out.Result["given"] != true || out.Result["address"] != k.Address().String() {
		t.Fatalf("login as the given admin: %v", out.Result)
	}
	list := h.call("qa_fetch", map[string]any{"url": h.app.URL() + "/api/admin/accounts", "as": "admin"})
	if list.Result["status"] != 200 {
		t.Fatalf("the admin's session on the admin listing: %v", list.Result["status"])
	}
	results, _ := json.Marshal([]fleet.Result{out.Result, list.Result})
	for _, s := range append(h.app.Seen().Bodies, string(results)) {
		if strings.Contains(strings.ToLower(s), strings.ToLower(hexKey)) {
			t.Fatal("the test account's key left fleetd")
		}
	}
	// Even unregistered, the pattern rules of the run records take it out.
	for _, form := range []string{hexKey, "0x" + hexKey, strings.ToUpper(hexKey)} {
		if got := trajectory.Redact(`{"note":"the admin key is ` + form + `"}`); strings.Contains(strings.ToLower(got), strings.ToLower(hexKey)) {
			t.Fatalf("a run record would keep the test account's key: %s", got)
		}
	}
}

// TestSessionsOnlyOfOwnIdentities tries each never-list rule of issue 33:
// fleetd uses only sessions of identities it signed in (this run) or was
// given, and never replays a cookie or token it did not get by signing
// in: no credential header through qa_call, no session of an identity
// never signed in, none of another run's, and a role without a given
// account is a fresh identity, not anyone's account.
func TestSessionsOnlyOfOwnIdentities(t *testing.T) {
	h := newSigninHarness(t, twin.Flawed, fleet.Exercise, nil)
	if out := h.login("a", nil); out.Verdict != fleet.VerdictOK {
		t.Fatalf("login: %v", out.Result)
	}
	start := h.app.Seen().Requests
	// A real user's cookie or token, offered as a header: refused unsent.
	for name, v := range map[string]string{"Cookie": siwe.SessionCookie + "=someone-elses", "AUTHORIZATION": "Bearer someone-elses"} {
		if out := h.call("qa_call", map[string]any{"target": "x", "message": "m", "headers": map[string]any{name: v}}); out.Verdict != fleet.VerdictError {
			t.Errorf("qa_call with %s: %s", name, out.Verdict)
		}
	}
	// qa_fetch and qa_submit have no header argument at all.
	for _, tool := range []string{"qa_fetch", "qa_submit"} {
		if out := h.call(tool, map[string]any{"url": h.app.URL() + "/api/me", "headers": map[string]any{"Cookie": "x=y"}}); out.Verdict != fleet.VerdictInvalid {
			t.Errorf("%s with headers: %s, want invalid", tool, out.Verdict)
		}
	}
	// An identity never signed in has no session.
	if out := h.call("qa_fetch", map[string]any{"url": h.app.URL() + "/api/me", "as": "z"}); out.Verdict != fleet.VerdictError {
		t.Errorf("as an identity never signed in: %s", out.Verdict)
	}
	if got := h.app.Seen().Requests; got != start {
		t.Errorf("%d refused requests reached the platform", got-start)
	}
	// Another run's tools do not see this run's sessions.
	sb, _ := sandbox.Open(filepath.Join(t.TempDir(), "qa-sandbox"), "r-other")
	other, err := NewRegistry(h.env, &Run{ID: "r-other", Source: "qa-test", Sandbox: sb, Meter: sandbox.NewMeter(fleet.Budget{})})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(map[string]any{"url": h.app.URL() + "/api/me", "as": "a"})
	if out, _ := other.Dispatch(context.Background(), h.ctl, "qa_fetch", raw); out.Verdict != fleet.VerdictError {
		t.Errorf("another run used this run's session: %v", out.Result)
	}
	// A role nobody gave an account for is a fresh identity of the run.
	adm := h.login("admin", nil)
	if adm.Result["given"] != false {
		t.Errorf("an admin login without a given account: %v", adm.Result)
	}
	addr, _ := fleet.ParseAddress(adm.Result["address"].(string))
	if role, _, ok := h.app.Account(addr); !ok || role != "user" {
		t.Errorf("the fresh 'admin' identity is account %v with role %q, want a new plain user", ok, role)
	}
}

// FuzzParseNonce: a nonce answer is outside input. ParseNonce never
// panics, and what it accepts is a nonce EIP-4361 allows.
func FuzzParseNonce(f *testing.F) {
	for _, s := range []string{`{"nonce":"abcdef123456"}`, `{"data":{"nonce":"XyZ12345678"}}`, "  n0nce1234\n", `{"nonce":12}`, `{"nonce":"short"}`, "with space 12345678"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := ParseNonce(b)
		if err != nil {
			if n != "" {
				t.Fatalf("an error with a nonce %q", n)
			}
			return
		}
		if len(n) < 8 || len(n) > 128 {
			t.Fatalf("nonce %q of %d bytes accepted", n, len(n))
		}
		for _, r := range n {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
				t.Fatalf("nonce %q holds %q", n, r)
			}
		}
	})
}

func TestParseNonce(t *testing.T) {
	for in, want := range map[string]string{
		`{"nonce":"abcdef123456"}`:         "abcdef123456",
		`{"data":{"nonce":"XyZ12345678"}}`: "XyZ12345678",
		"n0nce1234\n":                      "n0nce1234",
	} {
		if got, err := ParseNonce([]byte(in)); err != nil || got != want {
			t.Errorf("ParseNonce(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		`{"nonce":"short"}`:    "not a nonce",
		`{"token":"abcdefgh"}`: `without a "nonce"`,
		"has a space 1234":     "not a nonce",
	} {
		if _, err := ParseNonce([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseNonce(%q): %v, want an error naming %q", in, err, want)
		}
	}
}

// TestLoginRotation: an identity signing in again carries its session's
// cookie; rotated says whether a new session came back (the flawed twin
// keeps the one it was sent).
func TestLoginRotation(t *testing.T) {
	for _, mode := range []twin.Mode{twin.Flawed, twin.Correct} {
		h := newSigninHarness(t, mode, fleet.Exercise, nil)
		first := h.login("r", nil)
		if _, has := first.Result["rotated"]; has || first.Verdict != fleet.VerdictOK {
			t.Fatalf("%s: first login: %v", mode, first.Result)
		}
		again := h.login("r", nil)
		if again.Result["rotated"] != (mode == twin.Correct) {
			t.Errorf("%s: second login rotated = %v", mode, again.Result["rotated"])
		}
		if out := h.call("qa_fetch", map[string]any{"url": h.app.URL() + "/api/me", "as": "r"}); out.Result["status"] != 200 {
			t.Errorf("%s: the new session does not answer: %v", mode, out.Result["status"])
		}
	}
}
