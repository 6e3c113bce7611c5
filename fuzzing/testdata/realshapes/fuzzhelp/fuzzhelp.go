// Package fuzzhelp is a helper package typed against the real testing
// package, as many modules have: its functions take a *testing.F or a
// testing.TB.
package fuzzhelp

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// AddFiles adds every file in dir, relative to the calling source file's
// directory (found with runtime.Caller), as a seed.
func AddFiles(f *testing.F, dir string) {
	f.Helper()
	_, file, _, ok := runtime.Caller(1)
	if !ok {
		f.Fatal("runtime.Caller failed")
	}
	dir = filepath.Join(filepath.Dir(file), dir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

// Check fails t when ok is false.
func Check(t testing.TB, ok bool, msg string) {
	t.Helper()
	if !ok {
		t.Fatal(msg)
	}
}
