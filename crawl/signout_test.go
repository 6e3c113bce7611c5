package crawl

import (
	"net/url"
	"strings"
	"testing"
)

func TestSignOut(t *testing.T) {
	for u, want := range map[string]bool{
		"http://127.0.0.1:1/account/signout":       true,
		"http://127.0.0.1:1/logout":                true,
		"http://127.0.0.1:1/api/auth/log-out?x=1":  true,
		"http://127.0.0.1:1/auth/sign_out":         true,
		"http://127.0.0.1:1/session/end":           true,
		"http://127.0.0.1:1/users/logoff.php":      true,
		"http://127.0.0.1:1/account":               false,
		"http://127.0.0.1:1/account/activity":      false,
		"http://127.0.0.1:1/blog/logout-tips-2026": true, // refused: a page skipped costs less than a session ended
		"http://127.0.0.1:1/signature":             false,
		"http://127.0.0.1:1/%zz":                   true,
	} {
		if got := SignOut(u); got != want {
			t.Errorf("SignOut(%q) = %v, want %v", u, got, want)
		}
	}
}

func FuzzSignOut(f *testing.F) {
	f.Add("http://127.0.0.1/account/signout")
	f.Add("/logout?next=/")
	f.Add("http://127.0.0.1/a/LogOut/")
	// Any URL whose path has a /logout or /signout segment is a sign-out
	// link, whatever surrounds it.
	f.Fuzz(func(t *testing.T, u string) {
		pu, err := url.Parse(u)
		if err != nil {
			if !SignOut(u) {
				t.Fatalf("SignOut(%q) = false for a URL that does not parse", u)
			}
			return
		}
		p := strings.ToLower(pu.Path)
		for _, seg := range []string{"/logout", "/signout", "/sign-out", "/log-out"} {
			if (strings.HasSuffix(p, seg) || strings.Contains(p, seg+"/")) && !SignOut(u) {
				t.Fatalf("SignOut(%q) = false, but its path has %s", u, seg)
			}
		}
	})
}
