package fixer

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/qafleet/fleetd/fleet"
)

func TestCorpusRoundTrip(t *testing.T) {
	for _, in := range [][]byte{[]byte("enum E {}"), {}, []byte("\xff\x00\"\\`\n"), bytes.Repeat([]byte("x"), 5000)} {
		for _, typ := range []string{"[]byte", "string"} {
			enc := EncodeCorpus(typ, in)
			if !bytes.HasPrefix(enc, []byte("go test fuzz v1\n"+typ+"(\"")) {
				t.Fatalf("EncodeCorpus = %q", enc)
			}
			gotTyp, got, err := DecodeCorpus(enc)
			if err != nil || gotTyp != typ || !bytes.Equal(got, in) {
				t.Fatalf("DecodeCorpus(EncodeCorpus(%q)) = %s %q %v", in, gotTyp, got, err)
			}
		}
	}
}

// FuzzDecodeCorpus checks the corpus reader never panics and that what it
// reads re-encodes to a file it reads back the same.
func FuzzDecodeCorpus(f *testing.F) {
	f.Add([]byte("go test fuzz v1\n[]byte(\"enum E {}\")\n"))
	f.Add([]byte("go test fuzz v1\nstring(\"\\xff\")\n"))
	f.Add([]byte("go test fuzz v1\nint(1)\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		typ, v, err := DecodeCorpus(b)
		if err != nil {
			return
		}
		typ2, v2, err := DecodeCorpus(EncodeCorpus(typ, v))
		if err != nil || typ2 != typ || !bytes.Equal(v, v2) {
			t.Fatalf("round trip of %q: %s %q %v", b, typ2, v2, err)
		}
	})
}

func TestFuzzArgType(t *testing.T) {
	dir := t.TempDir()
	src := `package p
import "testing"
func FuzzBytes(f *testing.F) { f.Fuzz(func(t *testing.T, b []byte) {}) }
func FuzzString(f *testing.F) { f.Add("x"); f.Fuzz(func(t *testing.T, s string) {}) }
func FuzzTwo(f *testing.F) { f.Fuzz(func(t *testing.T, a, b string) {}) }
func FuzzInt(f *testing.F) { f.Fuzz(func(t *testing.T, n int) {}) }
func FuzzNamed(f *testing.F) { f.Fuzz(check) }
func check(t *testing.T, b []byte) {}
`
	os.WriteFile(filepath.Join(dir, "p_test.go"), []byte(src), 0o644)
	for target, want := range map[string]string{"FuzzBytes": "[]byte", "FuzzString": "string", "FuzzTwo": "", "FuzzInt": "", "FuzzNamed": "", "FuzzMissing": ""} {
		got, err := FuzzArgType(dir, target)
		if got != want || (want == "") != (err != nil) {
			t.Errorf("FuzzArgType(%s) = %q, %v; want %q", target, got, err, want)
		}
		if err != nil && !strings.Contains(err.Error(), target) {
			t.Errorf("error %q does not name %s", err, target)
		}
	}
}

func TestNewRegression(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "compiler"), 0o755)
	os.WriteFile(filepath.Join(root, "compiler", "f_test.go"), []byte("package c\nimport \"testing\"\nfunc FuzzCompile(f *testing.F) { f.Fuzz(func(t *testing.T, src []byte) {}) }\n"), 0o644)
	rt, err := NewRegression(fleet.Repo{URL: "x", FuzzPackage: "./compiler", FuzzTarget: "FuzzCompile"}, root, "0123456789abcdef", []byte("enum E {}"), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	want := RegressionTest{
		Path:    "compiler/testdata/fuzz/FuzzCompile/fleetd-0123456789abcdef",
		Content: []byte("go test fuzz v1\n[]byte(\"enum E {}\")\n"),
		Argv:    []string{"go", "test", "-count=1", "-v", "-timeout=1m0s", "-run=^FuzzCompile$/^fleetd-0123456789abcdef$", "./compiler"},
		Name:    "FuzzCompile/fleetd-0123456789abcdef",
	}
	if diff := cmp.Diff(want, rt); diff != "" {
		t.Errorf("go regression (-want +got):\n%s", diff)
	}
	rt, err = NewRegression(fleet.Repo{URL: "x", Regression: fleet.Regression{Dir: "tests/crashers", File: "{fp}.tl", Test: []string{"sh", "tests/run.sh", "{file}"}}}, root, "ab", []byte("x"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(RegressionTest{Path: "tests/crashers/ab.tl", Content: []byte("x"), Argv: []string{"sh", "tests/run.sh", "tests/crashers/ab.tl"}}, rt); diff != "" {
		t.Errorf("layout regression (-want +got):\n%s", diff)
	}
	if _, err := NewRegression(fleet.Repo{URL: "x", Regression: fleet.Regression{Dir: "..", File: "x", Test: []string{"x"}}}, root, "ab", nil, 0); err == nil {
		t.Error("a layout outside the repository was accepted")
	}
	if _, err := NewRegression(fleet.Repo{URL: "x"}, root, "ab", nil, 0); err == nil {
		t.Error("no layout was accepted")
	}
}
