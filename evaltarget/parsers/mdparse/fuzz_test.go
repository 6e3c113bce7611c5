package mdparse

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzRender fuzzes the renderer from the benign seeds in seeds/.
func FuzzRender(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("seeds", "*"))
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) { Render(b) })
}

// TestSeedsAreBenign: the seed corpus must not crash the renderer.
func TestSeedsAreBenign(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("seeds", "*"))
	if len(files) == 0 {
		t.Fatal("no seeds")
	}
	for _, p := range files {
		b, _ := os.ReadFile(p)
		if len(Render(b)) == 0 {
			t.Errorf("%s rendered to nothing", p)
		}
	}
}

// TestKnownCrasher: the pinned version really has the public crasher
// (russross/blackfriday#695).
func TestKnownCrasher(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("[0000000]:< did not panic: is the pinned version still the old one?")
		}
	}()
	Render([]byte("[0000000]:<"))
}
