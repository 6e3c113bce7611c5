package fixer

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestInert(t *testing.T) {
	tests := []struct{ in, inline string }{
		{"compile panic on enum E {}", "compile panic on enum E {}"},
		{"ping @admin and fixes #12", "ping ＠admin and fixes ＃12"},
		{"<script>alert(1)</script>", "‹script›alert(1)‹/script›"},
		{"see https://evil.example/x", "see https:⁄⁄evil.example/x"},
		{"two\nlines\r\n\tand\u202eRLO", "two lines andRLO"},
	}
	for _, tc := range tests {
		if got := Inline(tc.in, 200); got != tc.inline {
			t.Errorf("Inline(%q) = %q, want %q", tc.in, got, tc.inline)
		}
	}
	if got := Code("a ``b`` c", 100); got != "```a ``b`` c```" {
		t.Errorf("Code = %q", got)
	}
	if got := Code("`x`", 100); got != "`` `x` ``" {
		t.Errorf("Code = %q", got)
	}
	if got := Block("x\n```\n@everyone <img src=x>", 100); got != "````text\nx\n```\n@everyone <img src=x>\n````\n" {
		t.Errorf("Block = %q", got)
	}
}

// FuzzInert checks the three forms stay inert on any input: Inline has
// none of the live characters, and Code and Block cannot be closed early.
func FuzzInert(f *testing.F) {
	for _, s := range []string{"", "`", "``x``", "@a #1 http://x", "<b>", "```\n@x", "a\u202eb", "\xff\xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		in := Inline(s, 300)
		if strings.ContainsAny(in, "@#<>\n\r\x00") || strings.Contains(in, "://") || len(in) > 300+len("…") || !utf8.ValidString(in) {
			t.Fatalf("Inline(%q) = %q is not inert", s, in)
		}
		c := Code(s, 300)
		fence := c[:strings.IndexFunc(c, func(r rune) bool { return r != '`' })]
		inner := strings.TrimSuffix(strings.TrimPrefix(c, fence), fence)
		if !strings.HasSuffix(c, fence) || strings.Contains(inner, fence) || strings.ContainsAny(inner, "\n\r") {
			t.Fatalf("Code(%q) = %q can be closed early", s, c)
		}
		b := Block(s, 300)
		first, rest, _ := strings.Cut(b, "\n")
		bf := strings.TrimSuffix(first, "text")
		if len(bf) < 3 || strings.Trim(bf, "`") != "" || !strings.HasSuffix(rest, "\n"+bf+"\n") {
			t.Fatalf("Block(%q) = %q is not one fenced block", s, b)
		}
		body := strings.TrimSuffix(rest, bf+"\n")
		for _, line := range strings.Split(body, "\n") {
			if strings.HasPrefix(strings.TrimLeft(line, " "), bf) {
				t.Fatalf("Block(%q): line %q closes the fence", s, line)
			}
		}
	})
}
