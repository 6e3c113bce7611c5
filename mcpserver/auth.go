package mcpserver

import (
	"net/http"
	"strings"
)

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

// RequireBearer serves next only to requests whose bearer token check
// accepts (check must compare in constant time); others get 401 with a
// WWW-Authenticate challenge and a message saying where the token is.
func RequireBearer(check func(token string) bool, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := BearerToken(r.Header.Get("Authorization"))
		if !ok || !check(tok) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="fleetd"`)
			http.Error(w, "unauthorized: send Authorization: Bearer TOKEN (fleetd http-token prints it)", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}
