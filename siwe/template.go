package siwe

import (
	"net/url"
	"regexp"
	"strings"
)

// identityVar is a placeholder for the signed-in account in a documented
// URL: {address}, :account, {user_id}, ...
var identityVar = regexp.MustCompile(`(?i)\{(address|addr|wallet|account|user|user_?id|id|account_?id|owner)\}|:(address|addr|wallet|account|user|user_?id|id|account_?id|owner)\b`)

// IdentityVar returns the first placeholder for the signed-in account in
// a URL template ("address" for {address}), or "" when it has none. A
// template with one names a resource that belongs to an account: the
// two-identity checks fill it with one identity's and request it with
// another's session.
func IdentityVar(raw string) string {
	if m := identityVar.FindString(raw); m != "" {
		return strings.Trim(m, "{}:")
	}
	return ""
}

// Fill puts an identity's values into a URL template: an address
// placeholder gets addr, an id one id (addr when the identity has no id).
// Both are path-escaped.
func Fill(raw, addr, id string) string {
	return identityVar.ReplaceAllStringFunc(raw, func(m string) string {
		name := strings.ToLower(strings.Trim(m, "{}:"))
		if id != "" && (name == "id" || strings.HasSuffix(name, "id")) {
			return url.PathEscape(id)
		}
		return url.PathEscape(addr)
	})
}
