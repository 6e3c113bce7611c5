package harness

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/qafleet/fleetd/fuzzing"
)

// toyCopy copies testdata/toy (a module of its own) to a scratch dir.
func toyCopy(tb testing.TB) string {
	tb.Helper()
	dst := filepath.Join(tb.TempDir(), "toy")
	if err := os.CopyFS(dst, os.DirFS("testdata/toy")); err != nil {
		tb.Fatal(err)
	}
	return dst
}

func goCmd(tb testing.TB) string {
	tb.Helper()
	g, err := fuzzing.GoCommand()
	if err != nil {
		tb.Fatal(err)
	}
	return g
}

// generated is the toy's generation, made once: discovery and the
// compile loop are the slow part (a go list and two builds).
var generated struct {
	once    sync.Once
	dir     string
	entries []*Entry
	err     error
}

func toyGenerated(t *testing.T) (string, []*Entry) {
	t.Helper()
	generated.once.Do(func() {
		dir, err := os.MkdirTemp("", "harness-toy-")
		if err != nil {
			generated.err = err
			return
		}
		dir = filepath.Join(dir, "toy")
		if generated.err = os.CopyFS(dir, os.DirFS("testdata/toy")); generated.err != nil {
			return
		}
		ctx := context.Background()
		es, err := Discover(ctx, dir, Options{})
		if err != nil {
			generated.err = err
			return
		}
		generated.dir = dir
		generated.entries, generated.err = Generate(ctx, dir, goCmd(t), nil, es)
	})
	if generated.err != nil {
		t.Fatal(generated.err)
	}
	return generated.dir, generated.entries
}

func TestMain(m *testing.M) {
	code := m.Run()
	if generated.dir != "" {
		os.RemoveAll(filepath.Dir(generated.dir))
	}
	os.Exit(code)
}

func byName(es []*Entry) map[string]*Entry {
	m := map[string]*Entry{}
	for _, e := range es {
		m[e.Name] = e
	}
	return m
}

func TestDiscoverRanksParsers(t *testing.T) {
	_, es := toyGenerated(t)
	m := byName(es)
	for _, name := range []string{"Fuzz", "Parse", "(*Decoder).Decode", "(*Machine).Feed", "MustCompile", "Render", "Sum"} {
		if m[name] == nil {
			t.Fatalf("entry %s not found; have %v", name, names(es))
		}
	}
	if m["ParseFile"] != nil {
		t.Error("ParseFile takes a path: it should not be an entry")
	}
	// LoadSite's parameter names a file; Serve reaches the network; and
	// Title's receiver, with LoadSite no constructor, is a zero value.
	if m["LoadSite"] != nil || m["(*Site).Serve"] != nil || m["Check"] != nil || m["(*Site).Title"] == nil || !m["(*Site).Title"].ZeroRecv {
		t.Errorf("LoadSite %v, Serve %v, Check %v, Title %+v: want none of the first three, Title on a zero receiver", m["LoadSite"] != nil, m["(*Site).Serve"] != nil, m["Check"] != nil, m["(*Site).Title"])
	}
	// Heading's Page literal leaves its site pointer nil: a nil
	// dereference there is the harness's (ZeroArg); Render's options
	// are leaves only.
	if h := m["Heading"]; h == nil || !h.ZeroArg || m["Render"].ZeroArg || m["Parse"].ZeroArg {
		t.Errorf("ZeroArg: Heading %+v, Render %v, Parse %v", h, m["Render"].ZeroArg, m["Parse"].ZeroArg)
	}
	for name, want := range map[string]string{"configFile": "config file", "URLPath": "url path", "file_name": "file name", "dir": "dir", "HTTPServer": "http server"} {
		if got := strings.Join(nameWords(name), " "); got != want {
			t.Errorf("nameWords(%q) = %q, want %q", name, got, want)
		}
	}
	if m["Fuzz"].Kind != KindGoFuzz || es[0].Name != "Fuzz" {
		t.Errorf("the go-fuzz function should rank first as a gofuzz entry: first %s (%s)", es[0].Name, es[0].Kind)
	}
	if m["Parse"].Score <= m["Sum"].Score || m["Parse"].Score <= m["Render"].Score {
		t.Errorf("Parse %.1f should outrank Sum %.1f and Render %.1f", m["Parse"].Score, m["Sum"].Score, m["Render"].Score)
	}
	if m["Parse"].Tested == 0 || m["Parse"].Reach != 0 && m["Parse"].Reach > 5 || !strings.Contains(strings.Join(m["Parse"].Why, ";"), "Parse") {
		t.Errorf("Parse: tested %d reach %d why %v", m["Parse"].Tested, m["Parse"].Reach, m["Parse"].Why)
	}
	if !m["(*Machine).Feed"].ZeroRecv || m["(*Decoder).Decode"].ZeroRecv {
		t.Errorf("zero receivers: Feed %v (want true), Decode %v (want false: NewDecoder)", m["(*Machine).Feed"].ZeroRecv, m["(*Decoder).Decode"].ZeroRecv)
	}
	if got := m["(*Decoder).Decode"].Shape; got != "[]byte,bool" {
		t.Errorf("Decode's fuzz arguments %q, want the constructor's reader and bool", got)
	}
	if got := m["Render"].Shape; got != "int,string,[]byte" {
		t.Errorf("Render's fuzz arguments %q, want the struct's exported fields then the variadic words", got)
	}
}

func names(es []*Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Name)
	}
	return out
}

func TestGenerateDropsWhatDoesNotCompile(t *testing.T) {
	dir, es := toyGenerated(t)
	m := byName(es)
	h := m["Hidden"]
	if h == nil || !strings.Contains(h.Dropped, "does not compile") || !strings.Contains(h.Dropped, "opts") {
		t.Fatalf("Hidden should be dropped with the compiler's reason naming opts, got %+v", h)
	}
	for _, e := range es {
		if e != h && e.Dropped != "" {
			t.Errorf("%s dropped: %s", e.Name, e.Dropped)
		}
	}
	src, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(m["Parse"].Package), File))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`f.Add("[a,b]")`, `f.Add("[x,y]")`, `f.Add("[seed,file]")`, "func " + m["Parse"].Target + "(f *testing.F)", "ttoy.Fuzz(a0)"} {
		if !strings.Contains(string(src), want) {
			t.Errorf("harness file lacks %s", want)
		}
	}
	if strings.Contains(string(src), "Hidden") && strings.Contains(string(src), "func FuzzHidden") {
		t.Error("the dropped target is still in the file")
	}
	// The original checkout's go-fuzz file keeps its constraint: only the copy changes.
	if b, _ := os.ReadFile("testdata/toy/fuzz.go"); !strings.Contains(string(b), "//go:build gofuzz") {
		t.Error("the fixture's fuzz.go lost its constraint")
	}
}

// crashOut is a go test failure of a fuzz target as the go engine prints it.
func crashOut(msg string, frames ...string) string {
	var b strings.Builder
	b.WriteString("--- FAIL: FuzzX (0.00s)\n    --- FAIL: FuzzX/seed#0 (0.00s)\n        panic: " + msg + " [recovered]\n\t\tpanic: " + msg + "\n\n        goroutine 7 [running]:\n")
	b.WriteString("        runtime/debug.Stack()\n        \t/usr/lib/go/src/runtime/debug/stack.go:26 +0x5e\n")
	b.WriteString("        testing.tRunner.func1.2({0x5b2f40, 0xc00001a0c0})\n        \t/usr/lib/go/src/testing/testing.go:1734 +0x21c\n")
	b.WriteString("        panic({0x5b2f40?, 0xc00001a0c0?})\n        \t/usr/lib/go/src/runtime/panic.go:792 +0x132\n")
	for _, f := range frames {
		fn, file, _ := strings.Cut(f, "@")
		b.WriteString("        " + fn + "(...)\n        \t" + file + " +0x1f\n")
	}
	return b.String()
}

func TestJudge(t *testing.T) {
	mod := "example.com/toy"
	lib := &Entry{Name: "Parse"}
	zero := &Entry{Name: "(*Machine).Feed", ZeroRecv: true}
	promised := &Entry{Name: "MustCompile", Doc: "MustCompile returns s; it panics if s is empty.\n"}
	internal := &Entry{Name: "Add", Pkg: "example.com/toy/internal/tag"}
	for _, tc := range []struct {
		name    string
		e       *Entry
		outcome string
		out     string
		want    string
	}{
		{"library bug", lib, "crashed", crashOut("runtime error: slice bounds out of range [1:-1]",
			"runtime.goPanicSliceB@/usr/lib/go/src/runtime/panic.go:153", "strings.Split@/usr/lib/go/src/strings/strings.go:10",
			"example.com/toy.Parse@/tmp/x/toy/toy.go:22", "example.com/toy/fleetdharness/toy.FuzzParse.func1@/tmp/x/toy/fleetdharness/toy/harness_test.go:60"), Library},
		{"the harness's own code", lib, "crashed", crashOut("runtime error: index out of range [3] with length 3",
			"example.com/toy/fleetdharness/toy.FuzzParse.func1@/tmp/x/toy/fleetdharness/toy/harness_test.go:60"), Misuse},
		{"another module", lib, "crashed", crashOut("runtime error: index out of range [3] with length 3",
			"github.com/tidwall/match.Match@/m/match.go:30", "example.com/toy.Parse@/tmp/x/toy/toy.go:22"), Outside},
		{"constructor skipped", zero, "crashed", crashOut("runtime error: invalid memory address or nil pointer dereference",
			"example.com/toy.(*Machine).Feed@/tmp/x/toy/toy.go:60"), Misuse},
		{"a nil dereference with a partial struct argument", &Entry{Name: "(*HTMLWriter).Before", ZeroArg: true}, "crashed", crashOut("runtime error: invalid memory address or nil pointer dereference",
			"example.com/toy.(*HTMLWriter).Before@/tmp/x/toy/toy.go:80"), Misuse},
		{"a nil dereference with a real receiver", lib, "crashed", crashOut("runtime error: invalid memory address or nil pointer dereference",
			"example.com/toy.(*Machine).Feed@/tmp/x/toy/toy.go:60"), Library},
		{"a promised panic", promised, "crashed", crashOut("toy: empty pattern", "example.com/toy.MustCompile@/tmp/x/toy/toy.go:66"), Misuse},
		{"an unpromised explicit panic", lib, "crashed", crashOut("toy: bad state", "example.com/toy.Parse@/tmp/x/toy/toy.go:22"), Library},
		// toml v1.0.0's internal/tag.Add on the harness's made-up value: an
		// explicit panic in an internal package is the contract its module
		// callers keep; a runtime error there is still a bug.
		{"an explicit panic in an internal package", internal, "crashed", crashOut("Unknown type: *interface {}",
			"example.com/toy/internal/tag.Add@/tmp/x/toy/internal/tag/add.go:16", "example.com/toy/fleetdharness/tag.FuzzAdd.func1@/tmp/x/toy/fleetdharness/tag/harness_test.go:60"), Misuse},
		{"a runtime error in an internal package", internal, "crashed", crashOut("runtime error: index out of range [3] with length 3",
			"example.com/toy/internal/tag.Add@/tmp/x/toy/internal/tag/add.go:16"), Library},
		{"a hang", lib, "timeout", "", Unknown},
		{"no stack", lib, "crashed", "fatal error: out of memory\n", Unknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Judge(tc.e, mod, tc.outcome, tc.out)
			if v.Verdict != tc.want || v.Why == "" {
				t.Errorf("verdict %q (%s), want %q", v.Verdict, v.Why, tc.want)
			}
		})
	}
}

// FuzzJudge: Judge reads engine output, which the fuzzed program shapes.
func FuzzJudge(f *testing.F) {
	f.Add(crashOut("runtime error: x", "example.com/toy.Parse@/t/toy.go:1"), "crashed")
	f.Add("goroutine 1 [running]:\n(\n\t:1\npanic(\n", "crashed")
	f.Fuzz(func(t *testing.T, out, outcome string) {
		v := Judge(&Entry{Name: "X", ZeroRecv: true, Doc: "panics"}, "example.com/toy", outcome, out)
		switch v.Verdict {
		case Library, Misuse, Outside, Unknown:
		default:
			t.Fatalf("verdict %q", v.Verdict)
		}
		if v.Verdict == Library && !strings.HasPrefix(v.Frame, "example.com/toy") {
			t.Fatalf("a library verdict outside the module: %+v", v)
		}
	})
}

// TestReproducerFailsThenPasses runs the real thing: the toy's Parse bug
// as a standalone test, failing on the buggy source and passing once the
// line is fixed.
func TestReproducerFailsThenPasses(t *testing.T) {
	_, es := toyGenerated(t)
	e := byName(es)["Parse"]
	dir := toyCopy(t)
	rel, src, err := Reproducer(e, []byte("go test fuzz v1\nstring(\"[a\")\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(rel)), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func() (string, error) {
		cmd := exec.Command(goCmd(t), "test", "-count=1", "-run", "^TestFleetdRepro", ".")
		cmd.Dir = dir
		b, err := cmd.CombinedOutput()
		return string(b), err
	}
	out, err := run()
	if err == nil || !strings.Contains(out, "slice bounds out of range") {
		t.Fatalf("the reproducer should fail on the buggy source with the crash:\n%s", out)
	}
	toy := filepath.Join(dir, "toy.go")
	b, _ := os.ReadFile(toy)
	fixed := strings.Replace(string(b), "body := s[1:end]", "if end < 0 {\n\t\treturn nil, errors.New(\"toy: want ]\")\n\t}\n\tbody := s[1:end]", 1)
	if err := os.WriteFile(toy, []byte(fixed), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := run(); err != nil {
		t.Fatalf("the reproducer should pass once fixed: %v\n%s", err, out)
	}
	if _, _, err := Reproducer(e, []byte("go test fuzz v1\nstring(\"a\")\nint(1)\n")); err == nil {
		t.Error("an input with the wrong number of values should be refused")
	}
	// Another crash of the same harness is another file and test; the
	// same input is the same one.
	rel2, src2, err := Reproducer(e, []byte("go test fuzz v1\nstring(\"[b\")\n"))
	if err != nil || rel2 == rel || strings.Contains(src2, strings.TrimSuffix(strings.TrimPrefix(filepath.Base(rel), "fleetd_repro_parse_"), "_test.go")) {
		t.Errorf("two inputs' reproducers: %s and %s (%v)", rel, rel2, err)
	}
	if again, _, _ := Reproducer(e, []byte("go test fuzz v1\nstring(\"[a\")\n")); again != rel {
		t.Errorf("one input, two paths: %s, %s", rel, again)
	}
}

// modelParseHarness is a fuzz target a model might write for the toy's
// Parse: set-up before f.Fuzz, a helper typed against *testing.F, names
// of its own (seeds, wrap) that the package's external tests also
// declare, and two fuzz arguments.
const modelParseHarness = `package toy2

import (
	"strings"
	"testing"

	"example.com/toy"
)

var seeds = []string{"[a,b]", "[]"}

func addSeeds(f *testing.F) {
	f.Helper()
	for _, s := range seeds {
		f.Add(s, 1)
	}
}

func wrap(s string, n int) string { return strings.Repeat("[", n%3) + s }

func FuzzParse(f *testing.F) {
	addSeeds(f)
	prefix := "" // set-up before f.Fuzz runs in the reproducer too
	f.Fuzz(func(t *testing.T, s string, n int) {
		if _, err := toy.Parse(prefix + wrap(s, n)); err != nil {
			t.Skip()
		}
	})
}
`

// TestModelReproducerFailsThenPasses: a crash through a harness a model
// wrote gets a standalone reproducer too, made from the model's file: it
// compiles beside the package's own external tests (whose names it
// shares), fails on the buggy source with the crash and passes once fixed.
func TestModelReproducerFailsThenPasses(t *testing.T) {
	dir := toyCopy(t)
	// The package's own external tests, declaring the model's names.
	ext := "package toy_test\n\nimport \"testing\"\n\nvar seeds = 1\n\nfunc wrap() {}\n\nfunc TestExt(t *testing.T) { wrap(); _ = seeds }\n"
	if err := os.WriteFile(filepath.Join(dir, "ext_test.go"), []byte(ext), 0o644); err != nil {
		t.Fatal(err)
	}
	e := &Entry{ID: "example.com/toy.Parse#model", Kind: KindModel, Pkg: "example.com/toy", Dir: ".", Name: "Parse", PkgName: "toy",
		Target: "FuzzParse", Package: "./" + Dir + "/toy2", Args: []string{"string", "int"}, Source: modelParseHarness}
	rel, src, err := Reproducer(e, []byte("go test fuzz v1\nstring(\"a\")\nint(1)\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(rel, "fleetd_repro_parse_") || !strings.HasSuffix(rel, "_test.go") || !strings.Contains(src, "package toy_test") || !strings.Contains(src, "func TestFleetdReproParse_") {
		t.Fatalf("reproducer %s:\n%s", rel, src)
	}
	if err := os.WriteFile(filepath.Join(dir, rel), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func() (string, error) {
		cmd := exec.Command(goCmd(t), "test", "-count=1", "-v", "-run", "^TestFleetdRepro|^TestExt$", ".")
		cmd.Dir = dir
		b, err := cmd.CombinedOutput()
		return string(b), err
	}
	out, err := run()
	if err == nil || !strings.Contains(out, "--- FAIL: TestFleetdReproParse_") || !strings.Contains(out, "slice bounds out of range") {
		t.Fatalf("the reproducer should fail on the buggy source with the crash:\n%s\n%s", out, src)
	}
	toy := filepath.Join(dir, "toy.go")
	b, _ := os.ReadFile(toy)
	fixed := strings.Replace(string(b), "body := s[1:end]", "if end < 0 {\n\t\treturn nil, errors.New(\"toy: want ]\")\n\t}\n\tbody := s[1:end]", 1)
	if err := os.WriteFile(toy, []byte(fixed), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := run(); err != nil || !strings.Contains(out, "--- SKIP: TestFleetdReproParse_") || !strings.Contains(out, "--- PASS: TestExt") {
		t.Fatalf("the reproducer should pass (the fixed Parse's error skips) beside the package's tests: %v\n%s", err, out)
	}
	for _, bad := range []struct {
		e     Entry
		input string
		want  string
	}{
		{Entry{ID: "x", Kind: KindModel, Args: []string{"string", "int"}}, "go test fuzz v1\nstring(\"a\")\nint(1)\n", "not kept"},
		{*e, "go test fuzz v1\nstring(\"a\")\n", "the input has 1 values"},
		{*e, "go test fuzz v1\nstring(\"a\")\nstring(\"b\")\n", "value 2 is a string"},
		{Entry{ID: "x", Kind: KindModel, Target: "FuzzOther", Args: []string{"string", "int"}, Source: modelParseHarness}, "go test fuzz v1\nstring(\"a\")\nint(1)\n", "defines no func FuzzOther"},
		{Entry{ID: "x", Kind: KindModel, Target: "FuzzParse", Args: []string{"string", "int"}, Source: "package ("}, "go test fuzz v1\nstring(\"a\")\nint(1)\n", "expected"},
	} {
		if _, _, err := Reproducer(&bad.e, []byte(bad.input)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("Reproducer(%s, %q): %v, want an error with %q", bad.e.ID, bad.input, err, bad.want)
		}
	}
}

func TestMemoryDropsHarnessCrashes(t *testing.T) {
	dir, es := toyGenerated(t)
	mem, err := LoadMemory(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := mem.Remember(dir, es); err != nil {
		t.Fatal(err)
	}
	if mem.Module != "example.com/toy" || len(mem.Files) != 1 {
		t.Fatalf("module %q, files %d", mem.Module, len(mem.Files))
	}
	feed := byName(es)["(*Machine).Feed"]
	mem.HarnessCrash(feed, "constructor skipped")
	mem.HarnessCrash(feed, "constructor skipped")
	keep := t.TempDir()
	if err := mem.Save(keep); err != nil {
		t.Fatal(err)
	}
	back, err := LoadMemory(keep)
	if err != nil {
		t.Fatal(err)
	}
	if back.TotalCrashes() != 2 || back.Dropped[feed.ID] == "" || back.Entry(feed.Package, feed.Target) == nil {
		t.Fatalf("memory after a round trip: crashes %d dropped %v", back.TotalCrashes(), back.Dropped)
	}
	// The next discovery leaves the dropped entry out.
	again, err := Discover(context.Background(), toyCopy(t), Options{Skip: back.Dropped})
	if err != nil {
		t.Fatal(err)
	}
	if byName(again)["(*Machine).Feed"] != nil {
		t.Error("a dropped entry was discovered again")
	}
	// Prepare writes the remembered files into a fresh copy.
	fresh := toyCopy(t)
	if err := back.Prepare(fresh); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(fresh, filepath.FromSlash(feed.Package), File)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(keep, MemoryFile), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadMemory(keep); err == nil || !strings.Contains(err.Error(), MemoryFile) {
		t.Errorf("a broken memory file should be named: %v", err)
	}
}

func TestDiscoverErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Discover(context.Background(), dir, Options{}); err == nil {
		t.Error("a directory without a module should be refused")
	}
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/empty\n\ngo 1.21\n"), 0o644)
	// Values takes only a destination (go-querystring's shape): a harness
	// for it would read no input, and go test refuses a fuzz function
	// without a fuzz argument.
	os.WriteFile(filepath.Join(dir, "a.go"), []byte("package empty\n\nfunc Nothing() {}\n\nfunc Values(v interface{}) (string, error) { return \"\", nil }\n"), 0o644)
	if _, err := Discover(context.Background(), dir, Options{}); err == nil || !strings.Contains(err.Error(), "no drivable entry point") {
		t.Errorf("a module with nothing to drive: %v", err)
	}
}

// TestChainConfiguresFirst: a method whose name parses, on a type with a
// constructor and configuring methods, gets a second harness that
// constructs, configures, then calls it; the bug only that order reaches
// (Parse after SetMaxDepth) is found through it and judged the library's.
func TestChainConfiguresFirst(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "chain")
	if err := os.CopyFS(dir, os.DirFS("testdata/chain")); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	es, err := Discover(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	es, err = Generate(ctx, dir, goCmd(t), nil, es)
	if err != nil {
		t.Fatal(err)
	}
	var plain, chained *Entry
	for _, e := range es {
		switch e.ID {
		case "example.com/chain.(*Lexer).Parse":
			plain = e
		case "example.com/chain.(*Lexer).Parse+SetMaxDepth+SetStrict":
			chained = e
		}
	}
	if plain == nil || chained == nil || chained.Dropped != "" {
		t.Fatalf("plain %+v chained %+v", plain, chained)
	}
	body := strings.Join(chained.Body, "\n")
	if i, j := strings.Index(body, ".SetMaxDepth("), strings.Index(body, ".Parse()"); i < 0 || j < i || !strings.Contains(body, ".SetStrict(") || !strings.Contains(body, "the configuration refused the input") {
		t.Errorf("the chain's body:\n%s", body)
	}
	if chained.Score >= plain.Score || !strings.Contains(strings.Join(chained.Why, "; "), "configured first by SetMaxDepth, SetStrict") {
		t.Errorf("chained score %.1f (plain %.1f), why %v", chained.Score, plain.Score, chained.Why)
	}
	// Only the chain reaches the bug: "((" past a depth limit of 1.
	vals := map[string]string{"[]byte": `[]byte("((")`, "int": "int(1)", "int64": "int64(1)", "bool": "bool(false)"}
	var lines []string
	for _, a := range chained.Args {
		lines = append(lines, vals[a])
	}
	g := fuzzing.GoTarget{Dir: dir, Package: chained.Package, Func: chained.Target, Go: goCmd(t), Env: os.Environ()}
	c, err := fuzzing.ReplayGo(ctx, g, []byte("go test fuzz v1\n"+strings.Join(lines, "\n")+"\n"), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if v := Judge(chained, "example.com/chain", c.Outcome, c.Stderr); v.Verdict != Library || !strings.Contains(v.Frame, "Parse") {
		t.Errorf("args %v: %s %+v\n%s", chained.Args, c.Outcome, v, c.Stderr)
	}
}
