package authz

import (
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/qafleet/fleetd/fixtures/siwe"
	"github.com/qafleet/fleetd/fixtures/twin"
)

func keyringDocs(t *testing.T) (Doc, string) {
	t.Helper()
	app := siwe.Serve(twin.Correct)
	t.Cleanup(app.Close)
	resp, err := app.Client().Get(app.URL() + "/docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return Doc{URL: app.URL() + "/docs/api.md", ContentType: resp.Header.Get("Content-Type"), Text: string(b)}, app.URL()
}

// TestLearnFlowFromDocs reads Keyring's docs: the two sign-in steps, the
// chain id, logout and who-am-I, the templated resources and their update
// with its writable fields, the admin-only listing.
func TestLearnFlowFromDocs(t *testing.T) {
	doc, base := keyringDocs(t)
	f := LearnFlow([]Doc{doc})
	got := map[string]any{
		"nonce": f.Nonce.Method + " " + f.Nonce.URL, "verify": f.Verify.Method + " " + f.Verify.URL,
		"logout": f.Logout.Method + " " + f.Logout.URL, "me": f.Me.Method + " " + f.Me.URL, "chain": f.ChainID,
	}
	want := map[string]any{
		"nonce": "GET " + base + "/api/auth/nonce", "verify": "POST " + base + "/api/auth/verify",
		"logout": "POST " + base + "/api/auth/logout", "me": "GET " + base + "/api/me", "chain": uint64(1337),
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("flow (-want +got):\n%s", d)
	}
	if len(f.Objects) != 1 || !strings.Contains(f.Objects[0].URL, "/api/accounts/") {
		t.Errorf("objects: %+v", f.Objects)
	}
	if len(f.Updates) != 1 || f.Updates[0].Method != "PATCH" || !cmp.Equal(f.Updates[0].Writable, []string{"display_name", "email"}) {
		t.Errorf("updates: %+v", f.Updates)
	}
	if len(f.Reserved) != 1 || f.Reserved[0].Role != "admin" || !strings.HasSuffix(f.Reserved[0].URL, "/api/admin/accounts") {
		t.Errorf("reserved: %+v", f.Reserved)
	}
	if u := Fill(f.Objects[0].URL, "0xabc", ""); u != base+"/api/accounts/0xabc/settings" {
		t.Errorf("Fill: %s", u)
	}
}

// TestLearnFlowStyles: other ways docs say the same.
func TestLearnFlowStyles(t *testing.T) {
	text := "# API\n\n| method | path | what |\n| --- | --- | --- |\n| GET | /v1/siwe/nonce | a nonce |\n| POST | /v1/siwe/login | sign in, returns a JWT |\n| POST | /v1/siwe/signout | end it |\n" +
		"| GET | /v1/users/:id | a user's profile |\n| PUT | /v1/users/:id | update your profile; editable: bio, avatar |\n| GET | /v1/internal/metrics | moderators only |\n\nUse chainId 8453.\n"
	f := LearnFlow([]Doc{{URL: "https://x.example/docs", ContentType: "text/markdown", Text: text}})
	if !f.SignIn() || !strings.HasSuffix(f.Verify.URL, "/v1/siwe/login") || !strings.HasSuffix(f.Logout.URL, "/v1/siwe/signout") || f.ChainID != 8453 {
		t.Errorf("flow: %+v", f)
	}
	if len(f.Updates) != 1 || !cmp.Equal(f.Updates[0].Writable, []string{"bio", "avatar"}) {
		t.Errorf("updates: %+v", f.Updates)
	}
	if len(f.Reserved) != 1 || f.Reserved[0].Role != "moderator" {
		t.Errorf("reserved: %+v", f.Reserved)
	}
	if u := Fill("https://x.example/v1/users/:id", "0xabc", "42"); u != "https://x.example/v1/users/42" {
		t.Errorf("Fill with an id: %s", u)
	}
	if f := LearnFlow([]Doc{{URL: "https://x.example/", ContentType: "text/html", Text: "<p>No login here.</p>"}}); f.SignIn() {
		t.Errorf("a page without a login gave a flow: %+v", f)
	}
}

// FuzzLearnFlow: LearnFlow never panics, and what it learns is from the
// doc's own origin or resolved from it.
func FuzzLearnFlow(f *testing.F) {
	f.Add("GET /api/auth/nonce\nPOST /api/auth/verify\nPATCH /api/u/{address} writable fields: `a`, `b`\nGET /admin/x admins only\nchain id 5", "text/markdown")
	f.Add("<ul><li><code>GET /me</code></li></ul>", "text/html")
	f.Fuzz(func(t *testing.T, text, ct string) {
		fl := LearnFlow([]Doc{{URL: "https://docs.example/api", ContentType: ct, Text: text}})
		for _, e := range append(append(fl.Objects, fl.Updates...), fl.Reserved...) {
			if e.URL == "" || e.Method == "" {
				t.Fatalf("an endpoint without a method or URL: %+v", e)
			}
		}
		_ = Fill(fl.Nonce.URL, "0x1", "2")
	})
}

// TestSignOut: the crawl behind the login never fetches the flow's logout
// endpoint nor a path that says log out or sign out; other pages it may.
func TestSignOut(t *testing.T) {
	r := &run{flow: Flow{Logout: Endpoint{Method: "POST", URL: "https://app.example/api/session/end"}}}
	for u, want := range map[string]bool{
		"https://app.example/api/session/end":   true,
		"https://app.example/api/session/end?x": true,
		"https://app.example/account/signout":   true,
		"https://app.example/logout":            true,
		"https://app.example/auth/sign-out":     true,
		"https://app.example/account":           false,
		"https://app.example/account/activity":  false,
		"https://app.example/api/session":       false,
	} {
		if got := r.signOut(u); got != want {
			t.Errorf("signOut(%s) = %v, want %v", u, got, want)
		}
	}
}
