package fuzzing

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestScanCLiterals(t *testing.T) {
	src := `#include "parse.h"
#include <stdio.h>
#define MAGIC "GIF8"
/* "not this" */ // nor "this"
static const uint8_t magic[4] = {0xe1, 0xc2, 0x3f, 0x7a};
static const char sig[] = {'P', 'K', 3, 4};
int f(const char *s, unsigned v) {
	if (v == 0x7a3fc2e1u) return 1;
	if (v == 0x0000beef) return 2;
	if (s[0] == '<' && strcmp(s, "tab\there\x01\101") == 0) return 3;
	int n[] = {1, 2, 300};
	return 0x7f + 12 + 1.5e3;
}
`
	got := ScanCLiterals([]byte(src))
	want := []string{"GIF8", "\xe1\xc2\x3f\x7a", "PK\x03\x04", "\xe1\xc2\x3f\x7a", "\xef\xbe\x00\x00", "<", "tab\there\x01A"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ScanCLiterals (-want +got):\n%s", diff)
	}
}

// TestCLiterals: the repository walk reads C sources only and puts the
// most frequent literal first; testdata/cmagic's magic is among them.
func TestCLiterals(t *testing.T) {
	got := CLiterals("testdata/cmagic", 0)
	if !slices.Contains(got, "\xe1\xc2\x3f\x7a") {
		t.Errorf("cmagic's literals %q lack the magic", got)
	}
	dir := t.TempDir()
	for name, text := range map[string]string{"a.c": `x("ab"); y("ab"); z("cd");`, "b.go": `"go"`, ".hide/c.c": `"hidden"`, "sub/d.h": `"cd" "ab"`} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff([]string{"ab", "cd"}, CLiterals(dir, 0)); diff != "" {
		t.Errorf("CLiterals (-want +got):\n%s", diff)
	}
	if got := CLiterals(dir, 1); len(got) != 1 {
		t.Errorf("max 1 gave %q", got)
	}
}

// FuzzScanCLiterals: any text scans without a panic, each token within the
// dictionary's bounds.
func FuzzScanCLiterals(f *testing.F) {
	for _, s := range []string{`"a\x4`, `'\`, `{0x1,'a'}`, "/* x", "#include", `"\777"`, `0x'1'`, `{1,2}` + "\n#define X 0xffffffffffffffffff"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		for _, tok := range ScanCLiterals(src) {
			if len(tok) == 0 || len(tok) > maxDictToken {
				t.Fatalf("token %q out of bounds", tok)
			}
		}
	})
}
