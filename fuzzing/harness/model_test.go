package harness

import (
	"go/parser"
	"go/token"
	"strings"
	"testing"
)

// TestCheckAuthored: the rules a model's file is held to before it is
// compiled, each refusal naming what is wrong.
func TestCheckAuthored(t *testing.T) {
	const ok = "package h\nimport (\"testing\"; \"example.com/lib\")\nfunc FuzzGet(f *testing.F) { f.Fuzz(func(t *testing.T, a, b string, n int64) { lib.Get(a, b, n) }) }\n"
	args, problem := checkAuthored(ok, "h", "FuzzGet", "example.com/lib")
	if problem != "" || strings.Join(args, ",") != "string,string,int64" {
		t.Fatalf("a good file: %v %q", args, problem)
	}
	for _, tc := range []struct{ src, want string }{
		{"package h\nfunc (", "does not parse"},
		{strings.Replace(ok, "package h", "package g", 1), "is in package g, not h"},
		{strings.Replace(ok, `"example.com/lib"`, `lib "example.com/other"`, 1), "does not import the package under test, example.com/lib"},
		{strings.Replace(ok, `"testing";`, `"testing"; "os/exec";`, 1), "imports os/exec, which a fuzz harness may not"},
		{strings.Replace(ok, "FuzzGet(f", "FuzzOther(f", 1), "defines no func FuzzGet(f *testing.F)"},
		{strings.Replace(ok, "f.Fuzz(", "f.Add(", 1), "calls no f.Fuzz"},
		{strings.Replace(ok, "n int64", "n map[string]int", 1), "fuzzes a map[string]int"},
		{strings.Replace(ok, "t *testing.T, a, b string, n int64", "a, b string", 1), "does not take a *testing.T"},
		{"package h\nimport (\"testing\"; \"example.com/lib\")\nfunc FuzzGet(f *testing.F) { f.Fuzz(lib.Check) }\n", "passes f.Fuzz no function literal"},
	} {
		if _, problem := checkAuthored(tc.src, "h", "FuzzGet", "example.com/lib"); !strings.Contains(problem, tc.want) {
			t.Errorf("%q: %q, want %q", tc.src, problem, tc.want)
		}
	}
	if got := exportedName("(*Parser).Parse"); got != "ParserParse" {
		t.Errorf("exportedName = %q", got)
	}
}

// FuzzCheckAuthored: whatever a model answers, the check does not panic,
// and what it accepts fuzzes only types the engines feed.
func FuzzCheckAuthored(f *testing.F) {
	f.Add("package h\nimport (\"testing\"; \"example.com/lib\")\nfunc FuzzGet(f *testing.F) { f.Fuzz(func(t *testing.T, a string) { lib.Get(a) }) }\n")
	f.Add("package h\nfunc FuzzGet(f *testing.F) { f.Fuzz(func(t, u *testing.T) {}) }")
	f.Fuzz(func(t *testing.T, src string) {
		args, problem := checkAuthored(src, "h", "FuzzGet", "example.com/lib")
		if problem != "" {
			return
		}
		if len(args) == 0 {
			t.Fatalf("accepted without fuzz arguments: %q", src)
		}
		for _, a := range args {
			if !fuzzable[a] {
				t.Fatalf("accepted a %s argument: %q", a, src)
			}
		}
	})
}

// FuzzModelReproducer: whatever file a model's harness was (checkAuthored
// accepted it) and whatever input, the reproducer is an error or a Go file
// that parses, in the target's external test package, with one test.
func FuzzModelReproducer(f *testing.F) {
	f.Add(modelParseHarness, "go test fuzz v1\nstring(\"a\")\nint(1)\n")
	f.Add("package toy2\nimport (t \"testing\"; \"example.com/toy\")\nfunc FuzzParse(f *t.F) { f.Fuzz(func(t *t.T, s string, n int) { toy.Parse(s) }) }\n", "go test fuzz v1\nstring(\"\\xff\")\nint(-1)\n")
	f.Fuzz(func(t *testing.T, src, input string) {
		args, problem := checkAuthored(src, "toy2", "FuzzParse", "example.com/toy")
		if problem != "" {
			return
		}
		e := &Entry{ID: "example.com/toy.Parse#model", Kind: KindModel, Pkg: "example.com/toy", Dir: ".", Name: "Parse", PkgName: "toy", Target: "FuzzParse", Args: args, Source: src}
		_, out, err := Reproducer(e, []byte(input))
		if err != nil {
			return
		}
		file, perr := parser.ParseFile(token.NewFileSet(), "r_test.go", out, 0)
		if perr != nil || file.Name.Name != "toy_test" || !strings.Contains(out, "func TestFleetdReproParse_") {
			t.Fatalf("reproducer of %q does not parse as package toy_test with its test: %v\n%s", src, perr, out)
		}
	})
}
