package fixer

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/qafleet/fleetd/fleet"
)

// RegressionTest is the test fleetd adds for a finding: one file holding
// the repro's input and the command that runs just that test.
type RegressionTest struct {
	Path    string   `json:"path"`    // repository-relative, slash-separated
	Content []byte   `json:"content"` // the file's bytes
	Argv    []string `json:"argv"`    // runs only this test, at the repository root
	// Name is how the test names itself in its output (Go: FuzzX/fleetd-<fp>);
	// empty for a layout test, whose exit status alone counts.
	Name string `json:"name,omitempty"`
}

// ErrNoRegression is wrapped when the repository has no way to hold a
// regression test (neither a Go fuzz target nor a regression layout).
var ErrNoRegression = errors.New("no regression test layout: set target.repo.fuzz_target or target.repo.regression")

// corpusHeader opens every file of Go's native fuzz corpus format.
const corpusHeader = "go test fuzz v1\n"

// NewRegression builds the regression test for fingerprint fp with input,
// by repo's configuration, reading the fuzz target's source under root (the
// worktree) to learn its argument type. timeout bounds the Go test run.
func NewRegression(repo fleet.Repo, root, fp string, input []byte, timeout time.Duration) (RegressionTest, error) {
	if repo.FuzzTarget != "" {
		pkg := path.Clean(filepath.ToSlash(repo.FuzzPackage))
		if pkg == ".." || strings.HasPrefix(pkg, "../") || path.IsAbs(pkg) {
			return RegressionTest{}, fmt.Errorf("target.repo.fuzz_package %q: outside the repository", repo.FuzzPackage)
		}
		typ, err := FuzzArgType(filepath.Join(root, filepath.FromSlash(pkg)), repo.FuzzTarget)
		if err != nil {
			return RegressionTest{}, err
		}
		name := "fleetd-" + fp
		if timeout <= 0 {
			timeout = 2 * time.Minute
		}
		pkgArg := "./" + pkg
		if pkg == "." {
			pkgArg = "."
		}
		return RegressionTest{
			Path:    path.Join(pkg, "testdata", "fuzz", repo.FuzzTarget, name),
			Content: EncodeCorpus(typ, input),
			Argv:    []string{"go", "test", "-count=1", "-v", "-timeout=" + timeout.String(), "-run=^" + repo.FuzzTarget + "$/^" + name + "$", pkgArg},
			Name:    repo.FuzzTarget + "/" + name,
		}, nil
	}
	l := repo.Regression
	if l.Dir == "" || l.File == "" || len(l.Test) == 0 {
		return RegressionTest{}, ErrNoRegression
	}
	rel := path.Clean(path.Join(filepath.ToSlash(l.Dir), strings.ReplaceAll(l.File, "{fp}", fp)))
	if rel == "." || rel == ".." || strings.HasPrefix(rel, "../") || path.IsAbs(rel) {
		return RegressionTest{}, fmt.Errorf("target.repo.regression: %q is outside the repository", rel)
	}
	argv := make([]string, len(l.Test))
	for i, a := range l.Test {
		argv[i] = strings.ReplaceAll(a, "{file}", rel)
	}
	return RegressionTest{Path: rel, Content: append([]byte(nil), input...), Argv: argv}, nil
}

// ReproducerRegression makes the regression test of a replay's own
// reproducer file (Reproduction.Test): the file as it is, run by its one
// TestXxx function. Errors name what is wrong with it: a path outside the
// repository or not a _test.go file, source that does not parse, or not
// exactly one test function.
func ReproducerRegression(rt ReproTest, timeout time.Duration) (RegressionTest, error) {
	rel := path.Clean(filepath.ToSlash(rt.Path))
	switch {
	case rt.Path == "" || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") || path.IsAbs(rel) || strings.Contains(rt.Path, "\\"):
		return RegressionTest{}, fmt.Errorf("reproducer test %q: not a path inside the repository", rt.Path)
	case !strings.HasSuffix(rel, "_test.go"):
		return RegressionTest{}, fmt.Errorf("reproducer test %q: not a _test.go file", rt.Path)
	}
	f, err := parser.ParseFile(token.NewFileSet(), path.Base(rel), rt.Content, parser.SkipObjectResolution)
	if err != nil {
		return RegressionTest{}, fmt.Errorf("reproducer test %s: %w", rel, err)
	}
	var names []string
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Test") && fn.Type.Params.NumFields() == 1 {
			names = append(names, fn.Name.Name)
		}
	}
	if len(names) != 1 {
		return RegressionTest{}, fmt.Errorf("reproducer test %s: %d test functions (%s), want one", rel, len(names), strings.Join(names, ", "))
	}
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	pkgArg := "./" + path.Dir(rel)
	if path.Dir(rel) == "." {
		pkgArg = "."
	}
	return RegressionTest{
		Path: rel, Content: append([]byte(nil), rt.Content...), Name: names[0],
		Argv: []string{"go", "test", "-count=1", "-v", "-timeout=" + timeout.String(), "-run=^" + names[0] + "$", pkgArg},
	}, nil
}

// EncodeCorpus returns a one-value corpus file in Go's native fuzzing
// format ("go test fuzz v1"), typ being "[]byte" or "string". The value is
// a Go string literal (strconv.Quote, as go test writes them), so any
// bytes, invalid UTF-8 included, round-trip.
func EncodeCorpus(typ string, input []byte) []byte {
	return []byte(corpusHeader + typ + "(" + strconv.Quote(string(input)) + ")\n")
}

// DecodeCorpus reads a one-value corpus file written by EncodeCorpus (or go
// test) whose value is a []byte or string literal.
func DecodeCorpus(b []byte) (typ string, value []byte, err error) {
	s, ok := strings.CutPrefix(string(b), corpusHeader)
	if !ok {
		return "", nil, errors.New("corpus file: no \"go test fuzz v1\" header")
	}
	s = strings.TrimSpace(s)
	if strings.Contains(s, "\n") {
		return "", nil, errors.New("corpus file: more than one value")
	}
	for _, t := range []string{"[]byte", "string"} {
		if lit, ok := strings.CutPrefix(s, t+"("); ok && strings.HasSuffix(lit, ")") {
			v, err := strconv.Unquote(lit[:len(lit)-1])
			if err != nil {
				return "", nil, fmt.Errorf("corpus file: %s value: %w", t, err)
			}
			return t, []byte(v), nil
		}
	}
	return "", nil, fmt.Errorf("corpus file: value %.40q is not a []byte or string literal", s)
}

// FuzzArgType reads the Go package in dir and returns the type of the one
// fuzzed argument of target's f.Fuzz function ("[]byte" or "string").
// Targets fuzzing several arguments or other types are an error saying so:
// a repro holds one input.
func FuzzArgType(dir, target string) (string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil || len(files) == 0 {
		return "", fmt.Errorf("fuzz target %s: no test files in %s", target, dir)
	}
	fset := token.NewFileSet()
	for _, file := range files {
		src, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("fuzz target %s: %w", target, err)
		}
		f, err := parser.ParseFile(fset, file, src, parser.SkipObjectResolution)
		if err != nil {
			continue // a file that does not parse cannot hold the target either way
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Name.Name != target || fn.Recv != nil || fn.Body == nil {
				continue
			}
			return fuzzFuncArg(fset, src, fn, target)
		}
	}
	return "", fmt.Errorf("fuzz target %s: no func %s(f *testing.F) in %s", target, target, dir)
}

// fuzzFuncArg finds f.Fuzz(func(t *testing.T, x T)) in fn's body.
func fuzzFuncArg(fset *token.FileSet, src []byte, fn *ast.FuncDecl, target string) (string, error) {
	var typ string
	var err error
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		if typ != "" || err != nil {
			return false
		}
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok || sel.Sel.Name != "Fuzz" || len(call.Args) != 1 {
			return true
		}
		lit, ok := call.Args[0].(*ast.FuncLit)
		if !ok {
			err = fmt.Errorf("fuzz target %s: f.Fuzz takes a named function; fleetd reads only a function literal", target)
			return false
		}
		var params []string
		for i, p := range lit.Type.Params.List {
			text := string(src[fset.Position(p.Type.Pos()).Offset:fset.Position(p.Type.End()).Offset])
			n := max(1, len(p.Names))
			for range n {
				if i == 0 && len(params) == 0 {
					params = append(params, "") // *testing.T
					continue
				}
				params = append(params, text)
			}
		}
		switch {
		case len(params) != 2:
			err = fmt.Errorf("fuzz target %s fuzzes %d arguments; a regression corpus file from one repro holds one", target, len(params)-1)
		case params[1] != "[]byte" && params[1] != "string":
			err = fmt.Errorf("fuzz target %s fuzzes a %s; fleetd writes []byte or string corpus values", target, params[1])
		default:
			typ = params[1]
		}
		return false
	})
	if err != nil {
		return "", err
	}
	if typ == "" {
		return "", fmt.Errorf("fuzz target %s: no f.Fuzz call", target)
	}
	return typ, nil
}

// testRan reports how one run of the regression test ended: failed (the
// test ran and failed, or hung), passed (it ran and passed), or neither
// (it did not run: a build failure, a pattern that matched nothing).
func (rt RegressionTest) verdict(r CommandResult) (failed, passed bool) {
	if r.TimedOut {
		return true, false
	}
	if rt.Name == "" {
		return r.ExitCode != 0, r.ExitCode == 0
	}
	out := string(r.Output)
	failed = r.ExitCode != 0 && (strings.Contains(out, "--- FAIL: "+rt.Name) || strings.Contains(out, "panic: test timed out"))
	passed = r.ExitCode == 0 && strings.Contains(out, "--- PASS: "+rt.Name)
	return failed, passed
}
