package qatools

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fixtures/siwe"
	"github.com/qafleet/fleetd/fixtures/twin"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/sandbox"
)

// authzRepros are the one-call repros of Keyring's two-identity flaws.
func authzRepros(base string) map[string]map[string]any {
	signIn := map[string]any{"nonce_url": base + "/api/auth/nonce", "verify_url": base + "/api/auth/verify", "chain_id": siwe.ChainID}
	with := func(m map[string]any) map[string]any {
		for k, v := range signIn {
			m[k] = v
		}
		return m
	}
	return map[string]map[string]any{
		"object":                 with(map[string]any{"check": "object", "url": base + "/api/accounts/{address}/settings", "me_url": base + "/api/me"}),
		"object, a writes first": with(map[string]any{"check": "object", "url": base + "/api/accounts/{address}/settings", "write_method": "PATCH", "write_json": `{"display_name":"qa-authz-mark"}`}),
		"function":               with(map[string]any{"check": "function", "url": base + "/api/admin/accounts"}),
		"role":                   with(map[string]any{"check": "property", "url": base + "/api/accounts/{address}/settings", "method": "PATCH", "field": "role", "value": `"admin"`}),
		"verified":               with(map[string]any{"check": "property", "url": base + "/api/accounts/{address}/settings", "field": "verified", "value": "true"}),
		"logout":                 with(map[string]any{"check": "logout", "logout_url": base + "/api/auth/logout", "me_url": base + "/api/me"}),
	}
}

// TestAuthzRepro: each two-identity flaw of Keyring replays in one call
// with fresh identities: reproduced on the flawed platform, not on its
// correct twin. Every call signs in identities nobody used before (a
// second replay too), and its result names fields and statuses only: no
// address, no session, no value of another identity's resource.
func TestAuthzRepro(t *testing.T) {
	for _, mode := range []twin.Mode{twin.Flawed, twin.Correct} {
		t.Run(mode.String(), func(t *testing.T) {
			h := newSigninHarness(t, mode, fleet.Exercise, nil)
			h.run.Meter = sandbox.NewMeter(fleet.Budget{MaxWrites: 60})
			want := AuthzReproduced
			if mode == twin.Correct {
				want = AuthzNotReproduced
			}
			for name, args := range authzRepros(h.app.URL()) {
				for round := range 2 {
					before := len(h.app.Seen().Bodies)
					out := h.call("qa_authz", args)
					if out.Verdict != fleet.VerdictOK || out.Result["outcome"] != want {
						t.Errorf("%s (round %d): %s %v, want %s", name, round, out.Verdict, out.Result, want)
						continue
					}
					if _, wrote := args["write_method"]; wrote && out.Result["status_write"] != 200 {
						t.Errorf("%s: a's write answered %v, want 200", name, out.Result["status_write"])
					}
					raw, _ := json.Marshal(out.Result)
					for _, bad := range []string{"0x", siwe.SessionCookie + "=", "Bearer", "qa-authz-mark"} {
						if strings.Contains(string(raw), bad) {
							t.Errorf("%s: the result carries %q: %s", name, bad, raw)
						}
					}
					// The identities signed in are fresh: no address of an
					// earlier sign-in signs a message again.
					signins := 0
					for _, body := range h.app.Seen().Bodies[before:] {
						addr := siweAddress(body)
						if addr == "" {
							continue
						}
						signins++
						for _, old := range h.app.Seen().Bodies[:before] {
							if strings.Contains(strings.ToLower(old), addr) {
								t.Errorf("%s: a replay signed in an identity used before (%s)", name, addr)
							}
						}
					}
					if signins == 0 {
						t.Errorf("%s (round %d): no sign-in message read from the platform's bodies: the freshness check saw nothing", name, round)
					}
				}
			}
			if mode == twin.Flawed {
				out := h.call("qa_authz", authzRepros(h.app.URL())["object"])
				if f, _ := out.Result["fields"].([]string); !strings.Contains(strings.Join(f, ","), "role") {
					t.Errorf("the object repro names fields %v, want the settings' (role among them)", out.Result["fields"])
				}
			}
		})
	}
}

// siweAddress is the address line of a SIWE message in a request body
// as the platform records it (after the request's URL and header
// values), or "" when the body carries none.
func siweAddress(body string) string {
	i := strings.Index(body, `{"message"`)
	if i < 0 {
		return ""
	}
	var m map[string]string
	if json.NewDecoder(strings.NewReader(body[i:])).Decode(&m) != nil {
		return ""
	}
	lines := strings.Split(m["message"], "\n")
	if len(lines) < 2 {
		return ""
	}
	return strings.ToLower(lines[1])
}

// TestAuthzReproFences: qa_authz is refused at observe and sends
// nothing; it never signs in as a test account target.auth.accounts
// gives (even one named as its fresh identities are); it refuses a
// check without what it needs and an object URL without an identity
// placeholder; each sign-in spends a write, and an empty budget stops it.
func TestAuthzReproFences(t *testing.T) {
	given, _ := chain.GenerateKey()
	h := newSigninHarness(t, twin.Flawed, fleet.Observe, map[string]*chain.Key{"authz1a": given, "a": given})
	args := authzRepros(h.app.URL())["object"]
	if out := h.call("qa_authz", args); out.Verdict != fleet.VerdictRefused {
		t.Fatalf("qa_authz at observe: %s %v", out.Verdict, out.Result)
	}
	if n := h.app.Seen().Requests; n != 0 {
		t.Fatalf("at observe %d requests reached the platform", n)
	}
	h.ctl.SetDial(fleet.Exercise, "test", "test")
	out := h.call("qa_authz", args)
	if out.Result["outcome"] != AuthzReproduced {
		t.Fatalf("object repro: %v", out.Result)
	}
	for _, body := range h.app.Seen().Bodies {
		if strings.Contains(strings.ToLower(body), strings.ToLower(given.Address().String()[2:])) {
			t.Fatal("qa_authz signed in with a given test account")
		}
	}
	if used := h.run.Meter.Used(fleet.ResWrites); used != 2 {
		t.Errorf("two fresh sign-ins spent %d writes, want 2", used)
	}
	for _, bad := range []map[string]any{
		{"check": "object"},
		{"check": "object", "url": h.app.URL() + "/api/admin/accounts"},
		{"check": "property", "url": h.app.URL() + "/api/accounts/{address}/settings", "field": "role"},
		{"check": "property", "url": h.app.URL() + "/api/accounts/{address}/settings", "field": "role", "value": "admin"},
		{"check": "logout", "me_url": h.app.URL() + "/api/me"},
		{"check": "object", "url": h.app.URL() + "/api/accounts/{address}/settings", "write_json": `{"display_name":"qa-authz-mark"}`},
		{"check": "object", "url": h.app.URL() + "/api/accounts/{address}/settings", "write_method": "PATCH", "write_json": `["x"]`},
		{"check": "function", "url": h.app.URL() + "/api/admin/accounts", "write_method": "PATCH", "write_json": `{"a":"qa-authz-mark"}`},
	} {
		if out := h.call("qa_authz", bad); out.Verdict == fleet.VerdictOK {
			t.Errorf("qa_authz %v: ok %v", bad, out.Result)
		}
	}
	// Like qa_login's, a sign-in past the budget ends the call with the
	// budget's error, before it is sent.
	h.run.Meter = sandbox.NewMeter(fleet.Budget{MaxWrites: 1})
	sent := h.app.Seen().SignIns
	raw, _ := json.Marshal(args)
	var be *fleet.BudgetError
	if _, err := h.reg.Dispatch(context.Background(), h.ctl, "qa_authz", raw); !errors.As(err, &be) {
		t.Errorf("qa_authz past the write budget: %v, want the budget's error", err)
	}
	if got := h.app.Seen().SignIns - sent; got != 1 {
		t.Errorf("%d sign-ins sent with one write left, want 1", got)
	}
}
