package qatools

import (
	"net/url"
	"testing"

	"github.com/qafleet/fleetd/fleet"
)

func TestCreatedURL(t *testing.T) {
	const post = "http://plat.test/api/notes"
	for _, tc := range []struct {
		name string
		res  fleet.Result
		want string
	}{
		{"location", fleet.Result{"status": 201, "headers": map[string]any{"location": "/api/notes/7"}}, post + "/7"},
		{"absolute location", fleet.Result{"status": 201, "headers": map[string]any{"location": "http://plat.test/n/7#x"}}, "http://plat.test/n/7"},
		{"location off the origin", fleet.Result{"status": 201, "headers": map[string]any{"location": "http://evil.test/n/7"}}, ""},
		{"json url", fleet.Result{"status": 200, "body": `{"saved":true,"url":"/api/notes/x1"}`}, post + "/x1"},
		{"json id", fleet.Result{"status": 201, "body": `{"id":42}`}, post + "/42"},
		{"json string id", fleet.Result{"status": 201, "body": `{"id":"a-b"}`}, post + "/a-b"},
		{"id that climbs", fleet.Result{"status": 201, "body": `{"id":"../admin"}`}, ""},
		{"fractional id", fleet.Result{"status": 201, "body": `{"id":4.5}`}, ""},
		{"the collection itself", fleet.Result{"status": 201, "headers": map[string]any{"location": "/api/notes"}}, ""},
		{"an error answer", fleet.Result{"status": 400, "body": `{"id":1}`}, ""},
		{"nothing named", fleet.Result{"status": 201, "body": `{"saved":true}`}, ""},
		{"a page", fleet.Result{"status": 200, "body": `<p>Thanks</p>`}, ""},
		{"javascript", fleet.Result{"status": 201, "headers": map[string]any{"location": "javascript:alert(1)"}}, ""},
	} {
		if got := CreatedURL(post, tc.res); got != tc.want {
			t.Errorf("%s: CreatedURL = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// FuzzCreatedURL: a platform's answer is outside input; CreatedURL never
// panics and names only a URL on the POST's origin.
func FuzzCreatedURL(f *testing.F) {
	f.Add("http://plat.test/api/notes", 201, "/api/notes/7", `{"id":1}`)
	f.Add("http://plat.test/a", 200, "", `{"url":"//evil.test/x","href":"/a/b"}`)
	f.Add("https://p.test/", 201, "http://p.test:8080/x", `{"id":"..%2f"}`)
	f.Fuzz(func(t *testing.T, post string, status int, loc, body string) {
		got := CreatedURL(post, fleet.Result{"status": status, "headers": map[string]any{"location": loc}, "body": body})
		if got == "" {
			return
		}
		if o, p := originOf(got), originOf(post); o == "" || o != p {
			t.Errorf("CreatedURL(%q) = %q: another origin", post, got)
		}
	})
}

// originOf is raw's scheme://host, "" when it has none.
func originOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}
