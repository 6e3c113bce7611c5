package doctor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qafleet/fleetd/fleet"
)

// TestCorpus: the corpus and compiler lines for each way target: may
// name them: unset (passing, saying what is skipped), a directory that is
// missing or holds nothing (fatal; the compiler not checked), and a corpus
// whose first program the compiler compiles.
func TestCorpus(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	empty, full := filepath.Join(dir, "empty"), filepath.Join(dir, "full")
	os.Mkdir(empty, 0o700)
	os.Mkdir(full, 0o700)
	if err := os.WriteFile(filepath.Join(full, "one.src"), []byte("a program\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cc := []string{"/bin/sh", "-c", `grep -q 'program' {src} && cp {src} {out}`}
	type line struct {
		ok, fatal bool
		detail    string
	}
	for _, tc := range []struct {
		name             string
		target           fleet.Target
		corpus, compiler line
	}{
		{"unset", fleet.Target{}, line{true, false, "target.corpus is not set"}, line{true, false, "target.compiler is not set"}},
		{"missing", fleet.Target{Corpus: filepath.Join(dir, "nope"), Compiler: cc}, line{false, true, "nope"}, line{false, false, "not checked: no corpus file"}},
		{"empty", fleet.Target{Corpus: empty, Compiler: cc}, line{false, true, "holds no usable file"}, line{false, false, "not checked: no corpus file"}},
		{"compiles", fleet.Target{Corpus: full, Compiler: cc}, line{true, true, full + ": 1 programs"}, line{true, false, "compiled the first corpus program"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := Corpus(ctx, tc.target, dir, 0)
			if len(cs) != 2 || cs[0].Name != "corpus" || cs[1].Name != "compiler" {
				t.Fatalf("lines %+v, want corpus and compiler", cs)
			}
			for i, want := range []line{tc.corpus, tc.compiler} {
				if c := cs[i]; c.OK != want.ok || c.Fatal != want.fatal || !strings.Contains(c.Detail, want.detail) {
					t.Errorf("%s: %+v, want ok=%v fatal=%v detail ~ %q", c.Name, c, want.ok, want.fatal, want.detail)
				}
			}
		})
	}
}
