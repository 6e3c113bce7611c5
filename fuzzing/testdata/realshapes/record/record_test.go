package record_test

import (
	"embed"
	"os"
	"testing"

	"example.com/realshapes/fuzzhelp"
	"example.com/realshapes/record"
	"example.com/realshapes/record/internal/deep"
)

//go:embed testdata/seeds/*
var seeds embed.FS

var ready bool

func TestMain(m *testing.M) {
	ready = true
	code := m.Run()
	ready = false // teardown: never reached while the inputs run
	os.Exit(code)
}

func TestParse(t *testing.T) {
	if _, err := record.Parse([]byte("a=1")); err != nil {
		t.Fatal(err)
	}
}

// FuzzParse takes its seeds from embedded files, from files beside this
// source found by a helper package with runtime.Caller, and passes its
// fuzz function by name.
func FuzzParse(f *testing.F) {
	entries, err := seeds.ReadDir("testdata/seeds")
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		b, err := seeds.ReadFile("testdata/seeds/" + e.Name())
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	fuzzhelp.AddFiles(f, "testdata/extra")
	if _, err := os.Stat("testdata/extra"); err != nil {
		f.Fatal("not run in the package directory: ", err)
	}
	f.Fuzz(fuzzParse)
}

func fuzzParse(t *testing.T, b []byte) {
	if !ready {
		t.Fatal("TestMain did not run before the fuzz target, or tore down")
	}
	dir := t.TempDir()
	t.Cleanup(func() { os.RemoveAll(dir) })
	t.Run("parse", func(t *testing.T) {
		r, err := record.Parse(b)
		if err != nil {
			t.Skip("not a record")
		}
		fuzzhelp.Check(t, deep.Depth(b) >= 0, "negative depth")
		if len(r) > 0 && record.Normalize(r) == "" {
			t.Error("a record normalized to nothing")
		}
	})
	if osName() != "linux" {
		t.Fatal("the wrong OS's file was compiled")
	}
}

// FuzzPanicInSubtest panics inside a t.Run: a crash, as under go test.
func FuzzPanicInSubtest(f *testing.F) {
	f.Add([]byte("!"))
	f.Fuzz(func(t *testing.T, b []byte) {
		t.Run("sub", func(t *testing.T) {
			if len(b) >= 2 && b[0] == '!' && b[1] == '!' {
				panic("boom in a subtest")
			}
		})
	})
}

// FuzzSkipped skips itself during setup, as targets needing a service do.
func FuzzSkipped(f *testing.F) {
	f.Skip("needs a network service")
}
