package htmlparse

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse fuzzes the parser from the benign seeds in seeds/.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("seeds", "*"))
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) { Parse(b) })
}

// TestSeedsAreBenign: the seed corpus must not crash the parser, or the
// evaluation would measure nothing.
func TestSeedsAreBenign(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("seeds", "*"))
	if len(files) == 0 {
		t.Fatal("no seeds")
	}
	for _, p := range files {
		b, _ := os.ReadFile(p)
		if err := Parse(b); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}

// TestKnownCrasher: the pinned version really has the public crasher
// (golang/go#27016).
func TestKnownCrasher(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("<template><object> did not panic: is the pinned version still the old one?")
		}
	}()
	Parse([]byte("<template><object>"))
}
