package htmlfixed

import (
	"os"
	"path/filepath"
	"testing"
)

// The same seeds as evaltarget/parsers/htmlparse (copied: a repository
// copy of this module alone must hold them).
var seedDir = "seeds"

// FuzzParse fuzzes the fixed parser from the evaluation's HTML seeds.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(seedDir, "*"))
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) { Parse(b) })
}

// TestKnownCrasherFixed: the control really is fixed.
func TestKnownCrasherFixed(t *testing.T) {
	for _, in := range []string{"<template><object>", "<math><template><mn><b></template>", "<template><applet>"} {
		if err := Parse([]byte(in)); err != nil {
			t.Errorf("%s: %v", in, err)
		}
	}
}
