package qatools

import (
	"strings"
	"testing"

	"github.com/qafleet/fleetd/fixtures/twin"
	"github.com/qafleet/fleetd/fleet"
)

// TestNeverReplaysACredential attacks the never-list row "never replay a
// real user's cookie or token" from every way a credential could leave
// fleetd without qa_login: a header qa_call sends under any name that
// carries a session (custom token headers, API keys, any case), a query
// parameter of any tool's URL (RFC 6750's access_token, a session id, a
// token a page linked), the sign-in's own URLs. Each is refused before
// anything is sent; identity claims and plain parameters still go out.
func TestNeverReplaysACredential(t *testing.T) {
	h := newSigninHarness(t, twin.Flawed, fleet.Exercise, nil)
	base := h.app.URL()
	stolen := "kr_session=someone-elses; tok_9f2c"
	sent := func() int { return h.app.Seen().Requests }
	for _, hdr := range []string{"Cookie", "AUTHORIZATION", "X-Auth-Token", "x-session-token", "X-Api-Key", "Api_Key", "X-Access-Token", "X-JWT", "X-Keyring-Session", "sid", "Proxy-Authorization"} {
		before := sent()
		out := h.call("qa_call", map[string]any{"target": "welcome", "message": "hi", "headers": map[string]any{hdr: stolen}})
		if out.Verdict != fleet.VerdictError || sent() != before {
			t.Errorf("qa_call with header %s: %s %v (%d requests sent)", hdr, out.Verdict, out.Result, sent()-before)
		}
	}
	for _, q := range []string{"access_token=abc12345", "token=abc12345", "sessionid=abc", "PHPSESSID=abc", "jwt=a.b.c", "api-key=abc", "sid=abc", "x=1&Session=abc", "%74oken=abc"} {
		for _, tool := range []string{"qa_fetch", "qa_submit"} {
			before := sent()
			args := map[string]any{"url": base + "/api/notices?" + q}
			if tool == "qa_submit" {
				args["fields"] = map[string]any{"a": "1"}
			}
			out := h.call(tool, args)
			if out.Verdict != fleet.VerdictError || !strings.Contains(out.Result.Err(), "carries a credential") || sent() != before {
				t.Errorf("%s ?%s: %s %v (%d requests sent)", tool, q, out.Verdict, out.Result, sent()-before)
			}
		}
	}
	before, writes := sent(), h.run.Meter.Used(fleet.ResWrites)
	out := h.call("qa_login", map[string]any{"identity": "a", "nonce_url": base + "/api/auth/nonce?token=abc12345", "verify_url": base + "/api/auth/verify"})
	if out.Verdict != fleet.VerdictError || sent() != before || h.run.Meter.Used(fleet.ResWrites) != writes {
		t.Errorf("qa_login with a token in the nonce URL: %s %v (%d requests, %d writes)", out.Verdict, out.Result, sent()-before, h.run.Meter.Used(fleet.ResWrites)-writes)
	}
	// What is no credential still goes out: an identity claim, a plain
	// parameter, a name that only looks alike.
	before = sent()
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"qa_call", map[string]any{"target": "welcome", "message": "hi", "headers": map[string]any{"X-Keyring-Account": "0x1", "X-Auth-User": "admin"}}},
		{"qa_fetch", map[string]any{"url": base + "/api/notices?account=admin&side=left&consider=1"}},
	} {
		if out := h.call(c.tool, c.args); out.Verdict != fleet.VerdictOK {
			t.Errorf("%s %v: %s %v", c.tool, c.args, out.Verdict, out.Result)
		}
	}
	if sent() != before+2 {
		t.Errorf("%d requests sent, want 2", sent()-before)
	}
}

// FuzzCredentialName: names come from pages and the model. The
// classifier never panics and ignores case and separators, so no
// spelling of a credential's name slips through.
func FuzzCredentialName(f *testing.F) {
	for _, s := range []string{"Cookie", "X-Auth-Token", "access_token", "PHPSESSID", "x-api-key", "sid", "side", "X-Keyring-Account", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		got := credentialName(name)
		if up := credentialName(strings.ToUpper(name)); up != got && strings.ToLower(strings.ToUpper(name)) == strings.ToLower(name) {
			t.Fatalf("%q: %v, upper case %v", name, got, up)
		}
		if sep := credentialName(strings.ReplaceAll(name, "-", "_")); sep != got {
			t.Fatalf("%q: %v, with _ for - %v", name, got, sep)
		}
		if got && !credentialName("X-"+name) && name != "sid" && !strings.EqualFold(name, "sid") {
			t.Fatalf("%q is a credential but X-%s is not", name, name)
		}
	})
}
