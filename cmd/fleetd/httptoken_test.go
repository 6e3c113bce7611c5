package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestHTTPToken(t *testing.T) {
	dir := t.TempDir()
	out, stderr, code := run(t, "", "http-token", "--data-dir", dir)
	tok := strings.TrimSpace(out)
	if code != 0 || len(tok) != 64 {
		t.Fatalf("http-token: exit %d, %q %s", code, out, stderr)
	}
	path := filepath.Join(dir, "keys", "http.token")
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v", fi, err)
	}
	if again, _, _ := run(t, "", "http-token", "--data-dir", dir); strings.TrimSpace(again) != tok {
		t.Errorf("a second call printed another token")
	}
	os.Chmod(path, 0o644)
	if _, stderr, code := run(t, "", "http-token", "--data-dir", dir); code == 0 || !strings.Contains(stderr, "chmod 600") {
		t.Errorf("a world-readable token: exit %d, %s", code, stderr)
	}
}
