package siwe

import (
	"strings"
	"testing"
)

// TestFill: each kind of placeholder gets the identity's value; an id
// placeholder takes the address when the identity has no id.
func TestFill(t *testing.T) {
	for _, c := range []struct{ raw, addr, id, want, v string }{
		{"https://x.example/api/accounts/{address}/settings", "0xab", "", "https://x.example/api/accounts/0xab/settings", "address"},
		{"https://x.example/v1/users/:id", "0xab", "42", "https://x.example/v1/users/42", "id"},
		{"https://x.example/v1/users/{user_id}", "0xab", "", "https://x.example/v1/users/0xab", "user_id"},
		{"https://x.example/notes/{ADDRESS}", "a b", "", "https://x.example/notes/a%20b", "ADDRESS"},
		{"https://x.example/api/me", "0xab", "1", "https://x.example/api/me", ""},
	} {
		if got := Fill(c.raw, c.addr, c.id); got != c.want {
			t.Errorf("Fill(%q) = %q, want %q", c.raw, got, c.want)
		}
		if got := IdentityVar(c.raw); got != c.v {
			t.Errorf("IdentityVar(%q) = %q, want %q", c.raw, got, c.v)
		}
	}
}

// FuzzFill: a URL template comes from a platform's docs. Fill never
// panics, never makes a placeholder that was not in the template, and
// leaves a URL without one unchanged.
func FuzzFill(f *testing.F) {
	for _, s := range []string{"https://x/{address}/s", "/u/:id", "{id}{addr}", "::id", "{", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got := Fill(raw, "0xabc", "7")
		if v := IdentityVar(got); v != "" && !strings.Contains(raw, v) {
			t.Fatalf("Fill(%q) = %q still holds %q", raw, got, v)
		}
		if IdentityVar(raw) == "" && got != raw {
			t.Fatalf("Fill(%q) = %q changed a URL without placeholders", raw, got)
		}
	})
}
