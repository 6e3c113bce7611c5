package main

import (
	"archive/tar"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// TestImageReadsBack packs a file twice, reads the tarball back as an image
// and checks the config containerd runs (entrypoint, user, platform), the
// layer's files and modes, and that the same input gives the same image ID.
func TestImageReadsBack(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "tool")
	if err := os.WriteFile(bin, []byte("#!static\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range 2 {
		out := filepath.Join(dir, "img"+string(rune('a'+i))+".tar")
		if err := run([]string{"-t", "localhost/x/tool:1", "-o", out, "-entrypoint", "/usr/local/bin/tool", bin + "=/usr/local/bin/tool"}); err != nil {
			t.Fatal(err)
		}
		tag, _ := name.NewTag("localhost/x/tool:1")
		img, err := tarball.ImageFromPath(out, &tag)
		if err != nil {
			t.Fatal(err)
		}
		id, err := img.ConfigName()
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id.String())
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(cf.Config.Entrypoint, " "); got != "/usr/local/bin/tool" || cf.Config.User != "65532:65532" || cf.OS != "linux" || cf.Architecture != "amd64" {
			t.Errorf("config: entrypoint %q user %q platform %s/%s", got, cf.Config.User, cf.OS, cf.Architecture)
		}
		layers, _ := img.Layers()
		if len(layers) != 1 {
			t.Fatalf("%d layers, want 1", len(layers))
		}
		rc, _ := layers[0].Uncompressed()
		tr := tar.NewReader(rc)
		modes := map[string]int64{}
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			modes[h.Name] = h.Mode
			if h.Uid != 0 || h.ModTime.Unix() != 0 {
				t.Errorf("%s: uid %d mtime %v, want root and epoch", h.Name, h.Uid, h.ModTime)
			}
		}
		rc.Close()
		want := map[string]int64{"tmp/": 0o1777, "usr/": 0o755, "usr/local/": 0o755, "usr/local/bin/": 0o755, "usr/local/bin/tool": 0o755}
		for n, m := range want {
			if modes[n] != m {
				t.Errorf("layer %s: mode %o, want %o (all: %v)", n, modes[n], m, modes)
			}
		}
		if len(modes) != len(want) {
			t.Errorf("layer holds %v, want %v", modes, want)
		}
	}
	if ids[0] != ids[1] {
		t.Errorf("same input, two image IDs: %s %s", ids[0], ids[1])
	}
}

// TestBadArgumentsNamed: each mistake gets an error naming it.
func TestBadArgumentsNamed(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "tool")
	os.WriteFile(bin, []byte("x"), 0o644)
	out := filepath.Join(dir, "o.tar")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-t", "x:1", "-o", out}, "usage"},
		{[]string{"-t", "UPPER/Case:1", "-o", out, "-entrypoint", "/t", bin + "=/t"}, `-t "UPPER/Case:1"`},
		{[]string{"-t", "x:1", "-o", out, "-entrypoint", "/t", bin + "=relative"}, "want SRC=/absolute/dest"},
		{[]string{"-t", "x:1", "-o", out, "-entrypoint", "/other", bin + "=/t"}, "-entrypoint /other: no file is placed there"},
		{[]string{"-t", "x:1", "-o", out, "-entrypoint", "/t", "-dirs", "tmp", bin + "=/t"}, `-dirs: "tmp" is not an absolute directory`},
		{[]string{"-t", "x:1", "-o", out, "-entrypoint", "/t", filepath.Join(dir, "missing") + "=/t"}, "no such file"},
	} {
		err := run(c.args)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("run(%q) = %v, want an error containing %q", c.args, err, c.want)
		}
	}
}
