package specialists

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/specialists/replay"
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
	pages := []replay.Page{
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
	hs, fs = learnIdentityNames([]replay.Page{{URL: "https://app.example/d.md", Kind: "docs", Res: fleet.Result{"ok": true, "status": 200, "body": big.String()}}}, nil)
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

// TestPlatformIdentities: the owners the registry on chain records, the
// called agent's face addresses, then
// its name, the other agents' names and the addresses seen elsewhere; each once (case aside), never the zero
// address, never a page that failed, at most platformIdentsMax.
func TestPlatformIdentities(t *testing.T) {
	const owner, seen = "0x5F3c7A4b19dE2a8C0b6e4D1f9A7c3B2e8D0f1A6C", "0x1111111111111111111111111111111111111111"
	tg := fleet.Target{Faces: "https://app.example/s/{name}", Names: []string{"ember", "slate"}}
	zero := "0x" + strings.Repeat("0", 40)
	pages := []replay.Page{
		{URL: "https://app.example/api/list", Kind: "json", Res: fleet.Result{"ok": true, "status": 200, "body": `{"a":"` + strings.ToLower(owner) + `","b":"` + seen + `"}`}},
		{URL: "https://app.example/s/ember", Kind: "face", Res: fleet.Result{"ok": true, "status": 200, "body": "<p>Published by <code>" + owner + "</code> " + zero + "</p>"}},
		{URL: "https://app.example/gone", Kind: "docs", Res: fleet.Result{"ok": true, "status": 404, "body": "0x2222222222222222222222222222222222222222"}},
	}
	idsOf := func(owners []registryOwner) []string {
		var got []string
		for _, id := range platformIdentities(tg, "ember", pages, owners) {
			got = append(got, id.Value+" "+id.What)
		}
		return got
	}
	got := idsOf(nil)
	want := []string{
		owner + " an address on the called agent's face https://app.example/s/ember (its owner's?)",
		"ember the called agent's own name",
		"slate another agent's name",
		seen + " an address the platform shows at https://app.example/api/list",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("platform identities (-want +got):\n%s", diff)
	}
	// The owners the registry on chain records come first; the face's
	// copy of the same address is not claimed twice.
	other := "0x3333333333333333333333333333333333333333"
	got = idsOf([]registryOwner{{"ember", strings.ToLower(owner)}, {"slate", other}})
	want = []string{
		strings.ToLower(owner) + " the called agent's owner, read from the name registry on chain (ownerOf)",
		other + " the owner of slate, read from the name registry on chain (ownerOf)",
		"ember the called agent's own name",
		"slate another agent's name",
		seen + " an address the platform shows at https://app.example/api/list",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("platform identities with registry owners (-want +got):\n%s", diff)
	}
	tg.Names = []string{"a", "b", "c", "d", "e", "f", "g"}
	if n := len(platformIdentities(tg, "a", pages, nil)); n != platformIdentsMax {
		t.Errorf("%d identities, want the bound %d", n, platformIdentsMax)
	}
}

// FuzzPlatformIdentities: any page text gives at most platformIdentsMax
// distinct values, addresses only as whole 0x addresses, never zero.
func FuzzPlatformIdentities(f *testing.F) {
	for _, s := range []string{"0x5F3c7A4b19dE2a8C0b6e4D1f9A7c3B2e8D0f1A6C", "0x" + strings.Repeat("0", 40), "x0x" + strings.Repeat("a", 41), ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		tg := fleet.Target{Faces: "https://app.example/s/{name}"}
		pages := []replay.Page{{URL: "https://app.example/s/", Kind: "face", Res: fleet.Result{"ok": true, "status": 200, "body": body}}}
		ids := platformIdentities(tg, "", pages, nil)
		if len(ids) > platformIdentsMax {
			t.Fatalf("%d identities", len(ids))
		}
		seen := map[string]bool{}
		for _, id := range ids {
			k := strings.ToLower(id.Value)
			if seen[k] || len(id.Value) != 42 || !strings.Contains(body, id.Value) || k == "0x"+strings.Repeat("0", 40) {
				t.Fatalf("identity %q from %q (%v)", id.Value, body, ids)
			}
			seen[k] = true
		}
	})
}
