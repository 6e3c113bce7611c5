package mcpserver_test

import (
	"strings"
	"testing"

	"github.com/qafleet/fleetd/mcpserver"
)

func TestBearerToken(t *testing.T) {
	tests := []struct {
		header, want string
		ok           bool
	}{
		{"Bearer abc123", "abc123", true},
		{"bearer   abc123", "abc123", true},
		{"  Bearer abc123  ", "abc123", true},
		{"Basic YWxhZGRpbjpvcGVu", "", false},
		{"Bearer", "", false},
		{"Bearer ", "", false},
		{"Bearer a b", "", false},
		{"Bearer a\x00b", "", false},
		{"Bearer " + strings.Repeat("x", 1025), "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		got, ok := mcpserver.BearerToken(tt.header)
		if got != tt.want || ok != tt.ok {
			t.Errorf("BearerToken(%q) = %q, %v; want %q, %v", tt.header, got, ok, tt.want, tt.ok)
		}
	}
}

// FuzzBearerToken: the Authorization header is outside input. Parsing never
// panics, and an accepted token is non-empty, bounded and free of spaces
// and control characters.
func FuzzBearerToken(f *testing.F) {
	for _, s := range []string{"Bearer abc", "bearer\tabc", "Bearer  a b", "Basic x", "Bearer \x7f", "BEARER Ünïcode"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		tok, ok := mcpserver.BearerToken(header)
		if !ok {
			if tok != "" {
				t.Fatalf("%q: refused but returned %q", header, tok)
			}
			return
		}
		if tok == "" || len(tok) > 1024 || strings.ContainsFunc(tok, func(r rune) bool { return r <= ' ' || r >= 0x7f }) {
			t.Fatalf("%q: accepted token %q", header, tok)
		}
	})
}
