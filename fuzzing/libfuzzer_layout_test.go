package fuzzing

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestWriteHarnessLayout: the external test package is laid out inside
// its package's directory with what its //go:embed names linked in, the
// in-package test files beside the package, each starting with a //line
// directive naming its original; the Windows-only test file is left out;
// TestMain is wired into the main package; and removeHarness leaves the
// copy as it was.
func TestWriteHarnessLayout(t *testing.T) {
	g := mustGoTarget(t, "realshapes", "./record", "FuzzParse")
	before, err := RepoSourceKey(context.Background(), g.Dir)
	if err != nil {
		t.Fatal(err)
	}
	lay, err := writeHarness(g, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	pkg := g.pkgDir()
	xdir := filepath.Join(pkg, harnessDir, "record_test")
	var got []string
	for orig, gen := range lay.generated {
		rel, _ := filepath.Rel(g.Dir, gen)
		got = append(got, filepath.Base(orig)+" -> "+filepath.ToSlash(rel))
		b, err := os.ReadFile(gen)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(b), "//line "+orig+":1\n") {
			t.Errorf("%s does not start with a //line directive naming %s", gen, orig)
		}
	}
	want := []string{
		"bench_test.go -> record/bench_test_fleetdlibfuzzer.go",
		"export_test.go -> record/export_test_fleetdlibfuzzer.go",
		"os_linux_test.go -> record/fleetdlibfuzzer/record_test/os_linux_test_fleetdlibfuzzer.go",
		"record_test.go -> record/fleetdlibfuzzer/record_test/record_test_fleetdlibfuzzer.go",
	}
	if diff := cmp.Diff(want, slices.Sorted(slices.Values(got))); diff != "" || lay.xdir != xdir || lay.modRoot != g.Dir {
		t.Errorf("layout (-want +got):\n%s\nxdir %s, module root %s", diff, lay.xdir, lay.modRoot)
	}
	for _, f := range []string{"testdata/seeds/one", "testdata/seeds/two"} {
		if _, err := os.Stat(filepath.Join(xdir, f)); err != nil {
			t.Errorf("embedded %s not beside the external test package: %v", f, err)
		}
	}
	main, err := os.ReadFile(filepath.Join(g.Dir, harnessDir, "main", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(main), `fleetdtesting.FleetdInit("FuzzParse", target.FuzzParse, target.TestMain)`) ||
		!strings.Contains(string(main), `target "example.com/realshapes/record/fleetdlibfuzzer/record_test"`) {
		t.Errorf("main package:\n%s", main)
	}
	removeHarness(g)
	after, err := RepoSourceKey(context.Background(), g.Dir)
	if err != nil {
		t.Fatal(err)
	}
	left, _ := filepath.Glob(filepath.Join(pkg, "*"+harnessSuffix))
	if _, err := os.Stat(filepath.Join(pkg, harnessDir)); err == nil || len(left) > 0 || before != after {
		t.Errorf("harness left behind: %v, source key %s -> %s", left, before, after)
	}

	// A target only in a file the build excludes is named with the cause.
	if err := os.WriteFile(filepath.Join(pkg, "only_windows_test.go"), []byte("package record\n\nimport \"testing\"\n\nfunc FuzzWin(f *testing.F) {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = writeHarness(GoTarget{Dir: g.Dir, Package: g.Package, Func: "FuzzWin", Go: g.Go, Env: g.Env}, nil, false)
	if err == nil || !strings.Contains(err.Error(), "FuzzWin is in only_windows_test.go, which the build's constraints exclude") {
		t.Errorf("target in an excluded file: %v", err)
	}
	removeHarness(g)
}

func TestEmbedPatterns(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		err  bool
	}{
		{"testdata/seeds/*", []string{"testdata/seeds/*"}, false},
		{`a.txt "b c.txt"  all:d` + " `e f`", []string{"a.txt", "b c.txt", "all:d", "e f"}, false},
		{`"unterminated`, nil, true},
	} {
		got, err := embedPatterns(tc.in)
		if (err != nil) != tc.err || !cmp.Equal(got, tc.want) {
			t.Errorf("embedPatterns(%q) = %q, %v; want %q (error %v)", tc.in, got, err, tc.want, tc.err)
		}
	}
}

// TestRetargetTesting: only the import path changes, and a file without
// the testing import is left alone.
func TestRetargetTesting(t *testing.T) {
	src := "package p\n\nimport (\n\t\"fmt\"\n\tstdtesting \"testing\"\n)\n\nfunc H(f *stdtesting.F) { fmt.Println() }\n"
	got, changed, err := retargetTesting([]byte(src), "m/fleetdlibfuzzer/testing")
	want := strings.Replace(src, `"testing"`, `"m/fleetdlibfuzzer/testing"`, 1)
	if err != nil || !changed || string(got) != want {
		t.Errorf("retargetTesting: %v %v\n%s", changed, err, got)
	}
	if _, changed, _ := retargetTesting([]byte("package p\n\nimport \"fmt\"\n"), "x"); changed {
		t.Error("a file without testing changed")
	}
	// testing/synctest too (go-openapi/testify's assertions call
	// synctest.Test with their *testing.T), both in one file.
	src = "package p\n\nimport (\n\t\"testing\"\n\t\"testing/synctest\"\n)\n\nfunc H(t *testing.T) { synctest.Test(t, func(*testing.T) {}) }\n"
	got, changed, err = retargetTesting([]byte(src), "m/fleetdlibfuzzer/testing")
	want = strings.NewReplacer(`"testing"`, `"m/fleetdlibfuzzer/testing"`, `"testing/synctest"`, `"m/fleetdlibfuzzer/testing/synctest"`).Replace(src)
	if err != nil || !changed || string(got) != want {
		t.Errorf("retargetTesting with synctest: %v %v\n%s", changed, err, got)
	}
}

// TestFailingTestFiles: compiler errors are mapped to the original test
// files they name (through the //line directive, or the generated name),
// never the target's own file.
func TestFailingTestFiles(t *testing.T) {
	lay := &harnessLayout{modRoot: "/m", targetFile: "/m/p/a_test.go", generated: map[string]string{
		"/m/p/a_test.go": "/m/p/a_test_fleetdlibfuzzer.go",
		"/m/p/b_test.go": "/m/p/b_test_fleetdlibfuzzer.go",
		"/m/p/c_test.go": "/m/p/c_test_fleetdlibfuzzer.go",
	}}
	stderr := "# m/p\np/a_test.go:3:1: undefined: X\np/b_test.go:9:2: b.Foo undefined\n/m/p/c_test_fleetdlibfuzzer.go:1: syntax error\n"
	got := failingTestFiles([]byte(stderr), lay)
	if diff := cmp.Diff(map[string]bool{"/m/p/b_test.go": true, "/m/p/c_test.go": true}, got); diff != "" {
		t.Errorf("failing files (-want +got):\n%s", diff)
	}
	be := buildError("go build", []byte(stderr), lay)
	if be.First != "p/a_test.go:3:1: undefined: X" || FirstBuildError(be) != be.First {
		t.Errorf("first error %q", be.First)
	}
}

// TestLibFuzzerBuildsRealShapes builds the shapes real repositories' fuzz
// targets come in (fuzzing/testdata/realshapes) and fuzzes them briefly:
//   - FuzzParse, in an external test package with //go:embed seeds, a
//     helper package taking the real *testing.F that finds seed files with
//     runtime.Caller, a nested internal/ import, TestMain, export_test.go,
//     a benchmark helper calling B.SetParallelism, a _windows test file,
//     its fuzz function passed by name, t.Run, t.Skip inside it, t.TempDir
//     and t.Cleanup: it builds, starts from every seed and fuzzes past
//     them with no crash (a subtest is not a failure);
//   - FuzzPanicInSubtest: a panic inside t.Run is still a crash, its state
//     the panic's;
//   - FuzzSkipped: f.Skip during setup is a clear build error;
//   - FuzzDecode in a nested module that vendors its dependency (replaced
//     by a relative path), f.Add with every type testing.F accepts.
func TestLibFuzzerBuildsRealShapes(t *testing.T) {
	clang := MustLibFuzzer(t)
	if testing.Short() {
		t.Skip("builds five instrumented binaries")
	}
	ctx := context.Background()
	cache := t.TempDir()

	g := mustGoTarget(t, "realshapes", "./record", "FuzzParse")
	rep, err := RunLibFuzzer(ctx, LibFuzzerTarget{Go: g, Clang: clang, CacheDir: cache}, Session{Duration: 8 * time.Second}, LibFuzzerOptions{Minimize: -1})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Crashers) > 0 {
		t.Errorf("FuzzParse: a false crash %q: %s", rep.Crashers[0].State, rep.Crashers[0].Stderr)
	}
	if rep.StartedFrom < 3 || rep.Execs == 0 || rep.InitialCoverage == 0 || rep.Coverage <= rep.InitialCoverage {
		t.Errorf("FuzzParse: started from %d inputs (3 seeds), %d execs, coverage %d at the start, %d at the end: %s",
			rep.StartedFrom, rep.Execs, rep.InitialCoverage, rep.Coverage, rep.Note)
	}

	g = mustGoTarget(t, "realshapes", "./record", "FuzzPanicInSubtest")
	rep, err = RunLibFuzzer(ctx, LibFuzzerTarget{Go: g, Clang: clang, CacheDir: cache}, Session{Duration: 30 * time.Second, StopAtFirst: true}, LibFuzzerOptions{Minimize: -1})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Crashers) == 0 || rep.Crashers[0].Outcome != Crashed || !strings.HasPrefix(rep.Crashers[0].State, "panic: boom in a subtest @ record_test.FuzzPanicInSubtest.func") {
		t.Errorf("FuzzPanicInSubtest: %+v", rep.Crashers)
	}

	g = mustGoTarget(t, "realshapes", "./record", "FuzzSkipped")
	_, err = RunLibFuzzer(ctx, LibFuzzerTarget{Go: g, Clang: clang, CacheDir: cache}, Session{Duration: 2 * time.Second}, LibFuzzerOptions{})
	if err == nil || !strings.Contains(err.Error(), "FuzzSkipped skipped itself during setup") || !strings.Contains(err.Error(), "needs a network service") {
		t.Errorf("FuzzSkipped: %v", err)
	}

	g = mustGoTarget(t, "realshapes", "./nested/decode", "FuzzDecode")
	lt := LibFuzzerTarget{Go: g, Clang: clang, CacheDir: cache}
	b, err := lt.build(ctx)
	if err != nil {
		t.Fatal(err)
	}
	types := []string{"[]byte", "string", "bool", "uint8", "int32", "float32", "float64", "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64"}
	if diff := cmp.Diff(types, b.types); diff != "" || len(b.seeds) != 1 {
		t.Errorf("FuzzDecode: %d seeds, types (-want +got):\n%s", len(b.seeds), diff)
	}

	// A body inside synctest.Test: synctest's Test takes testing's *T, so
	// it is built against a stand-in too, and fuzzes without a false crash.
	g = mustGoTarget(t, "realshapes", "./clock", "FuzzBursts")
	rep, err = RunLibFuzzer(ctx, LibFuzzerTarget{Go: g, Clang: clang, CacheDir: cache}, Session{Duration: 5 * time.Second}, LibFuzzerOptions{Minimize: -1})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Crashers) > 0 || rep.Execs <= rep.StartedFrom {
		t.Errorf("FuzzBursts: %d execs from %d inputs, crashers %+v: %s", rep.Execs, rep.StartedFrom, rep.Crashers, rep.Note)
	}
}

// TestLibFuzzerOldGoDirective: a repository's own fuzz target in a module
// whose go.mod says go 1.12 builds under libFuzzer (the stand-in testing
// package needs a newer language version than the module names: the
// build copy's go directive is raised) and fuzzes past its seeds; the
// copy's go.mod is as it was afterwards, for the other engines.
func TestLibFuzzerOldGoDirective(t *testing.T) {
	clang := MustLibFuzzer(t)
	if testing.Short() {
		t.Skip("builds an instrumented binary")
	}
	g := mustGoTarget(t, "oldmod", "./frame", "FuzzRead")
	before, err := os.ReadFile(filepath.Join(g.Dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	lt := LibFuzzerTarget{Go: g, Clang: clang, CacheDir: t.TempDir()}
	rep, err := RunLibFuzzer(context.Background(), lt, Session{Duration: 2 * time.Second}, LibFuzzerOptions{Minimize: -1})
	if err != nil {
		t.Fatalf("the go 1.12 module's target did not build under libFuzzer: %v", err)
	}
	if rep.Engine != EngineLibFuzzer || rep.Execs <= rep.StartedFrom || len(rep.Crashers) != 0 {
		t.Errorf("engine %s, %d execs from %d inputs, crashers %+v, note %q", rep.Engine, rep.Execs, rep.StartedFrom, rep.Crashers, rep.Note)
	}
	after, err := os.ReadFile(filepath.Join(g.Dir, "go.mod"))
	if err != nil || !bytes.Equal(after, before) {
		t.Errorf("the copy's go.mod after the build: %q (%v), before %q", after, err, before)
	}
}
