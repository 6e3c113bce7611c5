package clip

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestText(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"", 3, ""},
		{"abc", 3, "abc"},
		{"abcd", 3, "abc…"},
		{"abcd", 0, "…"},
		{"abcd", -2, "…"},
		{"héllo", 2, "h…"}, // é is two bytes: not split
		{"héllo", 3, "hé…"},
		{"日本語", 4, "日…"},
	} {
		if got := Text(tc.s, tc.n); got != tc.want {
			t.Errorf("Text(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}

func TestWithin(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"abcdef", 6, "abcdef"},
		{"abcdefg", 6, "abc…"},
		{"abcdefg", 2, ""},
		{"héllo wörld", 8, "héll…"}, // 5 bytes and the 3-byte ellipsis
	} {
		if got := Within(tc.s, tc.n); got != tc.want || len(got) > max(tc.n, 0) {
			t.Errorf("Within(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}

// FuzzText: the result is a prefix of s (plus the ellipsis), within the
// bound, and valid UTF-8 whenever s is.
func FuzzText(f *testing.F) {
	f.Add("héllo wörld", 3)
	f.Add("\xff\xfeabc", 1)
	f.Fuzz(func(t *testing.T, s string, n int) {
		n %= 1 << 12
		got := Text(s, n)
		if got == s {
			return
		}
		body, ok := strings.CutSuffix(got, Ellipsis)
		if !ok || !strings.HasPrefix(s, body) || len(body) > max(n, 0) {
			t.Fatalf("Text(%q, %d) = %q", s, n, got)
		}
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("Text(%q, %d) = %q: invalid UTF-8", s, n, got)
		}
		if w := Within(s, n); len(w) > max(n, 0) {
			t.Fatalf("Within(%q, %d) = %q: over the bound", s, n, w)
		}
	})
}
