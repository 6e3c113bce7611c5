package clip

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestClip(t *testing.T) {
	for _, tc := range []struct {
		fn   func(string, int) string
		name string
		s    string
		n    int
		want string
	}{
		{Text, "Text", "", 3, ""},
		{Text, "Text", "abc", 3, "abc"},
		{Text, "Text", "abcd", 3, "abc…"},
		{Text, "Text", "abcd", 0, "…"},
		{Text, "Text", "abcd", -2, "…"},
		{Text, "Text", "héllo", 2, "h…"}, // é is two bytes: not split
		{Text, "Text", "héllo", 3, "hé…"},
		{Text, "Text", "日本語", 4, "日…"},
		{Within, "Within", "abcdef", 6, "abcdef"},
		{Within, "Within", "abcdefg", 6, "abc…"},
		{Within, "Within", "abcdefg", 2, ""},
		{Within, "Within", "héllo wörld", 8, "héll…"}, // 5 bytes and the 3-byte ellipsis
	} {
		if got := tc.fn(tc.s, tc.n); got != tc.want {
			t.Errorf("%s(%q, %d) = %q, want %q", tc.name, tc.s, tc.n, got, tc.want)
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
