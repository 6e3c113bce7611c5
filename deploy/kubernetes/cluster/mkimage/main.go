// Command mkimage packs static binaries into a single-layer image from
// scratch and writes it as a `docker save` tarball that `ctr images import`
// takes: no base image and no registry. The layer is reproducible (files
// owned by root, mtime zero, sorted), so the same binaries give the same
// image digest.
//
//	mkimage -t localhost/fleetd/fleetd:dev -o fleetd.tar -entrypoint /usr/local/bin/fleetd \
//	  -user 65532:65532 /path/to/fleetd=/usr/local/bin/fleetd
package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(2)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("mkimage", flag.ContinueOnError)
	tag := fs.String("t", "", "image name with tag, e.g. localhost/fleetd/fleetd:dev")
	out := fs.String("o", "", "output tarball")
	entry := fs.String("entrypoint", "", "entrypoint: an absolute path inside the image")
	user := fs.String("user", "65532:65532", "uid:gid the image runs as")
	dirs := fs.String("dirs", "/tmp", "comma-separated empty directories to create (mode 1777 for /tmp, 0755 otherwise)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *tag == "" || *out == "" || *entry == "" || fs.NArg() == 0 {
		return errors.New("usage: mkimage -t NAME:TAG -o OUT.tar -entrypoint PATH SRC=DEST...")
	}
	ref, err := name.NewTag(*tag)
	if err != nil {
		return fmt.Errorf("-t %q: %w", *tag, err)
	}
	files := map[string]string{}
	for _, a := range fs.Args() {
		src, dest, ok := strings.Cut(a, "=")
		if !ok || src == "" || !path.IsAbs(dest) {
			return fmt.Errorf("file %q: want SRC=/absolute/dest", a)
		}
		files[path.Clean(dest)] = src
	}
	if _, ok := files[path.Clean(*entry)]; !ok {
		return fmt.Errorf("-entrypoint %s: no file is placed there", *entry)
	}
	var extra []string
	if *dirs != "" {
		extra = strings.Split(*dirs, ",")
	}
	layerTar, err := buildLayer(files, extra)
	if err != nil {
		return err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	})
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", "amd64"
	cf.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	cf.Config.Entrypoint = []string{*entry}
	cf.Config.User = *user
	cf.Config.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin"}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return err
	}
	if err := tarball.WriteToFile(*out, ref, img); err != nil {
		return err
	}
	id, err := img.ConfigName() // the image ID ctr and crictl show
	if err != nil {
		return err
	}
	fmt.Printf("%s %s\n", ref, id)
	return nil
}

// buildLayer writes the files (dest → src), their parent directories and the
// extra directories as one reproducible tar.
func buildLayer(files map[string]string, extraDirs []string) ([]byte, error) {
	dirs := map[string]int64{}
	for dest := range files {
		for d := path.Dir(dest); d != "/"; d = path.Dir(d) {
			dirs[d] = 0o755
		}
	}
	for _, d := range extraDirs {
		d = path.Clean(strings.TrimSpace(d))
		if !path.IsAbs(d) || d == "/" {
			return nil, fmt.Errorf("-dirs: %q is not an absolute directory", d)
		}
		mode := int64(0o755)
		if d == "/tmp" {
			mode = 0o1777
		}
		dirs[d] = mode
	}
	var names []string
	for d := range dirs {
		names = append(names, d)
	}
	for f := range files {
		names = append(names, f)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0)
	for _, n := range names {
		h := &tar.Header{Name: strings.TrimPrefix(n, "/"), ModTime: epoch, Format: tar.FormatPAX}
		if mode, ok := dirs[n]; ok {
			h.Typeflag, h.Name, h.Mode = tar.TypeDir, h.Name+"/", mode
			if err := tw.WriteHeader(h); err != nil {
				return nil, err
			}
			continue
		}
		b, err := os.ReadFile(files[n])
		if err != nil {
			return nil, err
		}
		h.Typeflag, h.Mode, h.Size = tar.TypeReg, 0o755, int64(len(b))
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(b); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
