package specialists

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/specialists/probe"
)

func TestIdentityLike(t *testing.T) {
	for name, want := range map[string]bool{
		"X-User": true, "X-Forwarded-User": true, "X-Tenant-Id": true, "X-Acting-As": true, "actingAs": true,
		"on_behalf_of": true, "X-Impersonate": true, "sub": true, "principal": true, "X-Run-As": true,
		"as": true, "userId": true, "ROLE": true, "X-Caller-Account": true, "X-As-User": true,
		"User-Agent": false, "user_count": false, "avatar_url": false, "Content-Type": false, "Authorization": false,
		"subscription": false, "asset": false, "alias": false, "message": false, "target": false, "from": false,
		"as_of": false, "X-Request-Id": false, "Vary": false, "": false,
	} {
		if got := identityLike(name); got != want {
			t.Errorf("identityLike(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestDocIdentityNames(t *testing.T) {
	doc := "# API\n\nCall an agent as a member of your workspace:\n\n" +
		"```\ncurl -X POST https://api.example/v1/call -H 'Content-Type: application/json' -H \"X-Workspace-Principal: alice\" \\\n" +
		"  -d '{\"target\":\"shop\",\"message\":\"hi\",\"on_behalf_of\":\"bob\"}'\n```\n\n" +
		"Raw request:\n\n    POST /v1/call HTTP/1.1\n    X-Org-Role: viewer\n\n" +
		"List with `GET /v1/items?tenant=acme&page=2`; the `impersonate` parameter is for support staff; " +
		"send the `Run-As` header to act for a service account. User-Agent: any.\n"
	var got []string
	for _, n := range docIdentityNames("https://docs.example/api.md", "text/markdown", doc) {
		got = append(got, n.Name+"|"+map[bool]string{true: "h", false: "f"}[n.Header])
		if !strings.Contains(n.Where, "https://docs.example/api.md") {
			t.Errorf("%s: where %q does not name the page", n.Name, n.Where)
		}
	}
	want := []string{"X-Workspace-Principal|h", "X-Org-Role|h", "Run-As|h", "X-Workspace-Principal|h", "X-Org-Role|h", "on_behalf_of|f", "tenant|f", "impersonate|f"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
}

func TestLearnIdentityNames(t *testing.T) {
	pages := []probe.Page{
		{URL: "https://app.example/docs", Kind: "docs", Res: fleet.Result{"ok": true, "status": 200, "content_type": "text/html",
			"body": `<p>Gateways set <code>X-Remote-User</code> and <code>X-Team-Member</code>.</p><pre>curl -H "X-Team-Member: 7" https://app.example/</pre>`}},
		{URL: "https://app.example/api/me", Kind: "json", Res: fleet.Result{"ok": true, "status": 200, "content_type": "application/json",
			"headers": map[string]any{"vary": "Accept, X-Tenant", "x-user-id": "0", "x-member-id": "0"}, "body": `{"profile":{"account_id":1,"user_count":3}}`}},
		// A face is user content: its words teach nothing.
		{URL: "https://app.example/n/x", Kind: "face", Res: fleet.Result{"ok": true, "status": 200, "content_type": "text/html", "body": `curl -H "X-Face-User: 1"`}},
		{URL: "https://app.example/gone", Kind: "docs", Res: fleet.Result{"ok": true, "status": 404, "body": `X-Gone-User: 1`}},
	}
	hs, fs := learnIdentityNames(pages, map[string]fleet.Result{"the call": {"ok": true, "status": 200, "body": `{"reply":"hi","caller":"anonymous"}`}})
	var got []string
	for _, n := range append(hs, fs...) {
		got = append(got, n.Name)
	}
	// X-Remote-User and X-User-Id are on the fixed list: not learned again.
	want := []string{"X-Team-Member", "X-Tenant", "x-member-id", "account_id", "caller"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("learned (-want +got):\n%s", diff)
	}
	if !strings.Contains(hs[1].Where, "vary header of https://app.example/api/me") {
		t.Errorf("X-Tenant learned from %q", hs[1].Where)
	}
	// The bound holds however many names a page has.
	var big strings.Builder
	for i := range 50 {
		big.WriteString("-H 'X-User-" + string(rune('a'+i%26)) + string(rune('a'+i/26)) + ": 1'\n")
		big.WriteString(`"user_` + string(rune('a'+i%26)) + string(rune('a'+i/26)) + `": 1` + "\n")
	}
	hs, fs = learnIdentityNames([]probe.Page{{URL: "https://app.example/d.md", Kind: "docs", Res: fleet.Result{"ok": true, "status": 200, "body": big.String()}}}, nil)
	if len(hs) != identHeadersMax || len(fs) != identFieldsMax {
		t.Errorf("learned %d headers and %d fields, want %d and %d", len(hs), len(fs), identHeadersMax, identFieldsMax)
	}
}

// FuzzDocIdentityNames: any page text gives bounded, identity-like,
// valid names, without panicking.
func FuzzDocIdentityNames(f *testing.F) {
	for _, s := range []string{"curl -H 'X-User: 1'", "<p>`X-Run-As` header</p>", `{"tenant":1}`, "GET /x?as=me", "X-: \n-H '", ""} {
		f.Add(s, "text/markdown")
		f.Add(s, "text/html")
	}
	f.Fuzz(func(t *testing.T, body, ct string) {
		for _, n := range docIdentityNames("https://docs.example/p", ct, body) {
			if !identityLike(n.Name) || !utf8.ValidString(n.Name) || len(n.Name) > identNameLen {
				t.Fatalf("learned %q from %q", n.Name, body)
			}
		}
		respIdentityNames("u", fleet.Result{"body": body, "headers": map[string]any{"vary": body}})
	})
}

func TestIdentClaim(t *testing.T) {
	for name, want := range map[string]string{
		"X-User-Id": "1", "uid": "1", "accountNo": "1", "X-Caller": "admin", "on_behalf_of": "admin",
		"X-Role": "admin", "tenant_id": "1", "X-User, X-Role": "admin",
	} {
		if got := identClaim(name); got != want {
			t.Errorf("identClaim(%q) = %q, want %q", name, got, want)
		}
	}
}
