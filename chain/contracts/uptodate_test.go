package contracts

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/qafleet/fleetd/fleet/fleettest"
)

const regenerate = "run `go generate ./chain/...`"

// generatedHeader starts every abigen v2 binding.
const generatedHeader = "// Code generated via abigen V2 - DO NOT EDIT."

// TestBindingsUpToDate regenerates the bindings from the committed build/
// with the generator `go generate` runs (./internal/gen) and compares them
// to the committed files byte for byte.
func TestBindingsUpToDate(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	out := t.TempDir()
	cmd := exec.Command(goTool, "run", "./internal/gen", "-build", "build", "-out", out)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go run ./internal/gen: %v\n%s", err, msg)
	}
	want := readDir(t, out)
	if len(want) == 0 {
		t.Fatal("the generator wrote no bindings")
	}
	for name, w := range want {
		got, err := os.ReadFile(name)
		switch {
		case err != nil:
			t.Errorf("%v; %s", err, regenerate)
		case !bytes.Equal(got, w):
			t.Errorf("%s is not the binding of the committed build/; %s", name, regenerate)
		}
	}
	// A binding whose contract left the generator's list is stale.
	committed, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range committed {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		if _, ok := want[name]; ok {
			continue
		}
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.HasPrefix(b, []byte(generatedHeader)) {
			t.Errorf("%s is a binding the generator no longer writes; delete it and %s", name, regenerate)
		}
	}
}

// TestSolidityUpToDate recompiles the Solidity sources with the pinned solc
// and compares the output with the committed build/. It needs node and
// `npm ci` in this directory; without them it skips.
func TestSolidityUpToDate(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		fleettest.SkipUnlessCI(t, "node not on PATH; cannot recompile the Solidity sources")
	}
	if _, err := os.Stat(filepath.Join("node_modules", "solc", "package.json")); err != nil {
		fleettest.SkipUnlessCI(t, "node_modules/solc missing (run npm ci in chain/contracts); cannot recompile the Solidity sources")
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

// TestEmbeddedBuild checks that Build serves the committed compiler output
// and that the bindings embed the same ABI and bytecode.
func TestEmbeddedBuild(t *testing.T) {
	onDisk := readDir(t, "build")
	n := 0
	err := fs.WalkDir(Build, "build", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(Build, p)
		if err != nil {
			return err
		}
		n++
		if name := filepath.Base(p); !bytes.Equal(b, onDisk[name]) {
			t.Errorf("embedded %s differs from build/%s", p, name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != len(onDisk) {
		t.Errorf("Build holds %d files, build/ %d", n, len(onDisk))
	}
	for name, bin := range map[string]string{
		"FeedbackLog":  FeedbackLogMetaData.Bin,
		"NameRegistry": NameRegistryMetaData.Bin,
	} {
		b, err := fs.ReadFile(Build, "build/"+name+".bin")
		if err != nil {
			t.Fatal(err)
		}
		if "0x"+string(b) != bin {
			t.Errorf("%sMetaData.Bin differs from build/%s.bin", name, name)
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
