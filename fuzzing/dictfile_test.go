package fuzzing

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFormatDict(t *testing.T) {
	text, skipped := FormatDict([]string{"<a>", "say \"hi\"", "back\\slash", "\x00\xff\n", "", strings.Repeat("x", 65), "<a>", "é"})
	want := "kw_0=\"<a>\"\nkw_1=\"say \\x22hi\\x22\"\nkw_2=\"back\\x5cslash\"\nkw_3=\"\\x00\\xff\\x0a\"\nkw_4=\"\\xc3\\xa9\"\n"
	if diff := cmp.Diff(want, string(text)); diff != "" || skipped != 2 {
		t.Errorf("skipped %d (want 2), text (-want +got):\n%s", skipped, diff)
	}
}

// TestParseDict reads AFL/libFuzzer dictionaries as libFuzzer does, but
// skips an invalid line with its reason instead of refusing the file.
func TestParseDict(t *testing.T) {
	in := strings.Join([]string{
		`# a comment`,
		``,
		`"plain"`,
		`kw1="with name"`,
		`kw2@3="with level"`,
		`esc="a\"b\\c\x41\x7e"`,
		`   spaced="  x  "   `,
		`bad=unquoted`,
		`"unclosed`,
		`"bad \q escape"`,
		`"short \x4"`,
		`""`,
		`"` + strings.Repeat("y", 65) + `"`,
		"\"raw \x01 byte\"",
		`two words="x"`,
		`name"x"`,
		`lvl@x="x"`,
		`"in"side"`,
	}, "\n")
	toks, bad := ParseDict([]byte(in))
	if diff := cmp.Diff([]string{"plain", "with name", "with level", `a"b\cA~`, "  x  "}, toks); diff != "" {
		t.Errorf("tokens (-want +got):\n%s", diff)
	}
	want := []DictError{{8, "no quoted value"}, {9, `value not closed by "`}, {10, `unknown escape \q`}, {11, `short \x escape`},
		{12, "empty value"}, {13, "value longer than 64 bytes"}, {14, `a byte outside printable ASCII (write it as \xNN)`},
		{15, "bad entry name"}, {16, `want name="value"`}, {17, "bad @level"}, {18, `unescaped " inside the value`}}
	if diff := cmp.Diff(want, bad); diff != "" {
		t.Errorf("skipped lines (-want +got):\n%s", diff)
	}
	if got := bad[0].Error(); got != "dictionary line 8: no quoted value" {
		t.Errorf("error text %q", got)
	}
}

// FuzzDict: the reader never panics on any file and takes back exactly
// what the writer wrote (each token at most once, empty and long ones
// left out), with no line skipped.
func FuzzDict(f *testing.F) {
	f.Add([]byte("<a>\n</a>\nhref=\n\x00\xff\n\"q\"\n\\"))
	f.Add([]byte("kw_0=\"x\"\n\"bad \\q\"\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ParseDict(b)
		toks := strings.Split(string(b), "\n")
		text, _ := FormatDict(toks)
		got, bad := ParseDict(text)
		if len(bad) > 0 {
			t.Fatalf("the writer wrote lines the reader skips: %v\n%s", bad, text)
		}
		var want []string
		for _, tk := range toks {
			if len(tk) > 0 && len(tk) <= maxDictToken && !slices.Contains(want, tk) {
				want = append(want, tk)
			}
		}
		if !slices.Equal(want, got) {
			t.Fatalf("round trip: wrote %q, read %q", want, got)
		}
	})
}

// TestGoLiterals: the string, character and byte-slice literals of a
// package's files, its tests among them; not import paths or struct tags.
func TestGoLiterals(t *testing.T) {
	dir := t.TempDir()
	src := "package p\n\nimport \"encoding/json\"\n\ntype T struct {\n\tA int `json:\"a\"`\n}\n\nvar png = []byte{0x89, 'P', 'N', 'G'}\n\nfunc f(s string) bool { return s == \"<!DOCTYPE\" || s == \"<!DOCTYPE\" || s[0] == '&' || json.Valid(nil) }\n\nvar bad = \"unterminated\n"
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(src[:strings.LastIndex(src, "var bad")]), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "broken.go"), []byte("package p\nvar = \"skipped\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got := GoLiterals([]string{dir, filepath.Join("testdata", "magicmod", "record")}, 0)
	if got[0] != "<!DOCTYPE" {
		t.Errorf("most frequent first: %q", got)
	}
	for _, w := range []string{"\x89PNG", "&", "FLTD", "tail", "\x08abcdefgh"} {
		if !slices.Contains(got, w) {
			t.Errorf("%q missing from %q", w, got)
		}
	}
	for _, no := range []string{"encoding/json", `json:"a"`, "testing", "skipped"} {
		if slices.Contains(got, no) {
			t.Errorf("%q should not be a literal: %q", no, got)
		}
	}
	if n := len(GoLiterals([]string{filepath.Join("testdata", "magicmod", "record")}, 2)); n != 2 {
		t.Errorf("max 2: %d", n)
	}
}
