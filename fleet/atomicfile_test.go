package fleet

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "sub", "state.json")
	if err := WriteFileAtomic(p, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(p, []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	fi, _ := os.Stat(p)
	if string(b) != "new" || fi.Mode().Perm() != 0o644 {
		t.Errorf("content %q mode %04o", b, fi.Mode().Perm())
	}
	ents, _ := os.ReadDir(filepath.Dir(p))
	if len(ents) != 1 {
		t.Errorf("temporary files left behind: %v", ents)
	}
	// A failed write leaves the old content and no temporary file.
	if err := WriteFileAtomic(filepath.Join(p, "not-a-dir"), []byte("x"), 0o600); err == nil {
		t.Error("write under a file succeeded")
	}
	if b, _ := os.ReadFile(p); string(b) != "new" {
		t.Errorf("content after a failed write: %q", b)
	}
}
