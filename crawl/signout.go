package crawl

import (
	"net/url"
	"regexp"
)

// reSignOut matches a path segment that ends a session: log out, sign
// out, log off, end the session, in the spellings sites use.
var reSignOut = regexp.MustCompile(`(?i)(^|[/_.-])(log-?_?out|sign-?_?out|log-?_?off|sign-?_?off|end-?_?session|session/(end|destroy|delete))([/_.-]|$)`)

// SignOut reports whether rawURL looks like a link that ends the session
// it is sent with (/logout, /account/signout, /auth/sign-out, ...). A
// crawl behind a login never fetches one: a GET sign-out link would end
// the session the rest of the run uses. A URL that does not parse counts
// as one (refused, never guessed).
func SignOut(rawURL string) bool {
	u, err := url.Parse(rawURL)
	if err != nil {
		return true
	}
	return reSignOut.MatchString(u.Path) || reSignOut.MatchString(u.Fragment) && u.Path == ""
}
