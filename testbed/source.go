package testbed

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// compilerSource is the compiler package as files: its Go sources and
// tests, the corpus and the test data (golden outputs, fuzz seed corpus).
//
//go:embed compiler/*.go compiler/corpus compiler/testdata
var compilerSource embed.FS

// CompilerModule is the module path the compiler gets as a repository of
// its own. It imports only the standard library, so nothing else is needed.
const CompilerModule = "example.com/tinylang"

// compilerGoVersion is the go directive of that module: the oldest release
// with everything the package uses (testing.B.Loop).
const compilerGoVersion = "1.24"

// WriteCompilerModule writes the testbed compiler as a standalone Go module
// into dir (created if needed): the package at the module root, its tests,
// corpus/ and testdata/, and a go.mod. The fix stage's demo and tests make
// a git repository of it to repair; `go test ./...` runs there as it does
// here (TestPlantedFlaws included, which passes only while the flaws are
// in: skip it when testing a fix).
func WriteCompilerModule(dir string) error {
	sub, err := fs.Sub(compilerSource, "compiler")
	if err != nil {
		return err
	}
	err = fs.WalkDir(sub, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, filepath.FromSlash(p))
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := fs.ReadFile(sub, p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		return fmt.Errorf("write the compiler module: %w", err)
	}
	gomod := "module " + CompilerModule + "\n\ngo " + compilerGoVersion + "\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		return fmt.Errorf("write the compiler module: %w", err)
	}
	return nil
}
