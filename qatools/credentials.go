package qatools

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// The never-list (issue 33): fleetd uses only sessions of identities it
// signed in (qa_login) or was given (target.auth.accounts), and never
// replays a real user's cookie or token. A session goes with a request
// only through `as`; no credential comes from the model or a page: not in
// a header qa_call sends, not in a URL's query (RFC 6750 §2.3 lets a
// bearer token travel as access_token; a page may link a reset or a
// session token), for any tool that sends a request.

// credentialMarks are what a header or query parameter name holds when it
// carries a session or a credential, compared on the name lowercased
// without separators: Cookie, Authorization, X-Auth-Token, access_token,
// PHPSESSID, X-Api-Key, jwt, Bearer.
var credentialMarks = []string{"cookie", "authorization", "token", "session", "sessid", "jwt", "bearer", "apikey", "accesskey"}

// credentialName reports whether a header or query parameter name says it
// carries a session or a credential. Case and separators do not matter;
// "sid" counts as a whole name only (not "side").
func credentialName(name string) bool {
	flat := strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r == '.' || r == ' ' {
			return -1
		}
		return r
	}, strings.ToLower(name))
	return flat == "sid" || slices.ContainsFunc(credentialMarks, func(m string) bool { return strings.Contains(flat, m) })
}

// credentialParam returns the first query parameter of u whose name
// carries a credential, "" when none does.
func credentialParam(u *url.URL) string {
	for _, kv := range strings.Split(u.RawQuery, "&") {
		name, _, _ := strings.Cut(kv, "=")
		if n, err := url.QueryUnescape(name); err == nil {
			name = n
		}
		if credentialName(name) {
			return name
		}
	}
	return ""
}

// credentialErr refuses a URL whose query carries a credential.
func credentialErr(u *url.URL) error {
	if name := credentialParam(u); name != "" {
		return fmt.Errorf("the query parameter %q carries a credential: fleetd uses only sessions of identities it signed in (qa_login, then as), never a token from elsewhere", name)
	}
	return nil
}
