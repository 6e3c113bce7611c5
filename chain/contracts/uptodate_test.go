package contracts

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/qafleet/fleetd/chain/contracts/internal/bindgen"
)

const regenerate = "run `go generate ./chain/...`"

// TestBindingsUpToDate regenerates the bindings from the committed build/
// with the code `go generate` runs and compares them to the committed files.
func TestBindingsUpToDate(t *testing.T) {
	for _, c := range bindgen.Contracts {
		t.Run(c.Type, func(t *testing.T) {
			want, err := bindgen.Generate("build", c)
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(c.File)
			if err != nil {
				t.Fatalf("%v; %s", err, regenerate)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s is not the binding of build/%s.abi and build/%s.bin; %s",
					c.File, c.Type, c.Type, regenerate)
			}
		})
	}
}

// TestSolidityUpToDate recompiles the Solidity sources with the pinned solc
// and compares the output with the committed build/. It needs node and
// `npm ci` in this directory; without them it skips.
func TestSolidityUpToDate(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not on PATH; cannot recompile the Solidity sources")
	}
	if _, err := os.Stat(filepath.Join("node_modules", "solc", "package.json")); err != nil {
		t.Skip("node_modules/solc missing (run npm ci in chain/contracts); cannot recompile the Solidity sources")
	}
	sources, err := filepath.Glob("*.sol")
	if err != nil || len(sources) == 0 {
		t.Fatalf("no Solidity sources: %v", err)
	}
	out := t.TempDir()
	cmd := exec.Command(node, append([]string{"compile.js", "--out", out}, sources...)...)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("compile.js: %v\n%s", err, msg)
	}
	got, want := readDir(t, "build"), readDir(t, out)
	for name, w := range want {
		g, ok := got[name]
		switch {
		case !ok:
			t.Errorf("build/%s is missing; %s", name, regenerate)
		case !bytes.Equal(g, w):
			t.Errorf("build/%s differs from the compiler's output; %s", name, regenerate)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("build/%s is not produced by any source; delete it and %s", name, regenerate)
		}
	}
}

// TestEmbeddedBuild checks that Build serves the committed compiler output.
func TestEmbeddedBuild(t *testing.T) {
	onDisk := readDir(t, "build")
	var names []string
	err := fs.WalkDir(Build, "build", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(Build, p)
		if err != nil {
			return err
		}
		name := filepath.Base(p)
		names = append(names, name)
		if !bytes.Equal(b, onDisk[name]) {
			t.Errorf("embedded %s differs from build/%s", p, name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range bindgen.Contracts {
		for _, n := range []string{c.Type + ".abi", c.Type + ".bin"} {
			if !slices.Contains(names, n) {
				t.Errorf("Build lacks build/%s", n)
			}
		}
	}
}

func readDir(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := make(map[string][]byte, len(entries))
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = b
	}
	return files
}
