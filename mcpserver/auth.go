package mcpserver

import "strings"

// BearerToken returns the token of an "Authorization: Bearer TOKEN" header
// value, and false for anything else: another scheme, no token, a token with
// spaces or control characters in it. The scheme is case-insensitive (RFC 9110).
func BearerToken(header string) (string, bool) {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimLeft(tok, " ")
	if tok == "" || len(tok) > 1024 {
		return "", false
	}
	for i := 0; i < len(tok); i++ {
		if c := tok[i]; c <= ' ' || c >= 0x7f {
			return "", false
		}
	}
	return tok, true
}
