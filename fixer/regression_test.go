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

// TestReproducerRegression: a replay's reproducer file becomes the
// regression test run by its one test function; paths outside the
// repository, files that are not tests and files without exactly one
// test function are refused, naming why.
func TestReproducerRegression(t *testing.T) {
	src := []byte("package p_test\n\nimport \"testing\"\n\nfunc helper() {}\n\nfunc TestFleetdReproGet(t *testing.T) { helper() }\n")
	rt, err := ReproducerRegression(ReproTest{Path: "sub/fleetd_repro_get_test.go", Content: src}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	want := RegressionTest{Path: "sub/fleetd_repro_get_test.go", Content: src, Name: "TestFleetdReproGet",
		Argv: []string{"go", "test", "-count=1", "-v", "-timeout=1m0s", "-run=^TestFleetdReproGet$", "./sub"}}
	if diff := cmp.Diff(want, rt); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if rt, err := ReproducerRegression(ReproTest{Path: "x_test.go", Content: src}, 0); err != nil || rt.Argv[len(rt.Argv)-1] != "." {
		t.Errorf("at the root: %v %v", rt.Argv, err)
	}
	for _, tc := range []struct{ path, src, why string }{
		{"../x_test.go", string(src), "not a path inside"},
		{"/etc/x_test.go", string(src), "not a path inside"},
		{"", string(src), "not a path inside"},
		{"a\\b_test.go", string(src), "not a path inside"},
		{"x.go", string(src), "not a _test.go"},
		{"x_test.go", "package p_test\nfunc (", "x_test.go:"},
		{"x_test.go", "package p_test\n", "0 test functions"},
		{"x_test.go", "package p_test\nimport \"testing\"\nfunc TestA(t *testing.T) {}\nfunc TestB(t *testing.T) {}\n", "2 test functions (TestA, TestB)"},
	} {
		if _, err := ReproducerRegression(ReproTest{Path: tc.path, Content: []byte(tc.src)}, 0); err == nil || !strings.Contains(err.Error(), tc.why) {
			t.Errorf("%q: %v, want %q", tc.path, err, tc.why)
		}
	}
}

// FuzzReproducerRegression: whatever a replay returns, the regression test
// made of it stays inside the repository and runs one test function.
func FuzzReproducerRegression(f *testing.F) {
	f.Add("fleetd_repro_get_test.go", "package p_test\nimport \"testing\"\nfunc TestFleetdReproGet(t *testing.T) {}\n")
	f.Add("a/../../x_test.go", "package p\nfunc TestX(t *T) {}\n")
	f.Fuzz(func(t *testing.T, p, src string) {
		rt, err := ReproducerRegression(ReproTest{Path: p, Content: []byte(src)}, 0)
		if err != nil {
			return
		}
		if strings.HasPrefix(rt.Path, "../") || strings.HasPrefix(rt.Path, "/") || !strings.HasSuffix(rt.Path, "_test.go") || !strings.HasPrefix(rt.Name, "Test") || rt.Argv[5] != "-run=^"+rt.Name+"$" {
			t.Fatalf("%q: %+v", p, rt)
		}
	})
}
