package harness

import (
	"context"
	"errors"
	"fmt"
	"github.com/qafleet/fleetd/clip"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

// KindModel is a fuzz target a model wrote (Author), kept because it
// compiled and follows the rules Authored checks.
const KindModel = "model"

// Author is a model writing a fuzz harness: for the request it returns the
// Go source of one _test.go file. Errors end the loop (a model that cannot
// be reached, a budget spent).
type Author func(ctx context.Context, r AuthorRequest) (string, error)

// AuthorRequest is what the model is asked for: a file in package Package
// defining func Target(f *testing.F) that fuzzes Entry; on a repair, the
// source that failed and why.
type AuthorRequest struct {
	Entry     *Entry
	Package   string // the harness file's package clause
	Target    string // the FuzzXxx it must define
	Signature string // the entry's Go signature, when known
	Previous  string // the last source, when this is a repair
	Problem   string // why it was refused: the compiler's errors or the rule it broke
	Attempt   int    // 1 for the first
}

// Prompt is the request as text for a model: what to fuzz, the rules the
// file must follow and, on a repair, the failing source and its errors.
func (r AuthorRequest) Prompt() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Write a Go native fuzz target for %s in package %s (import path %q).\n", r.Entry.Name, r.Entry.PkgName, r.Entry.Pkg)
	if r.Signature != "" {
		fmt.Fprintf(&b, "Its signature: %s\n", r.Signature)
	}
	if d := strings.TrimSpace(r.Entry.Doc); d != "" {
		fmt.Fprintf(&b, "Its doc comment:\n%s\n", clip.Text(d, 1500))
	}
	fmt.Fprintf(&b, "\nRules: one file, `package %s`, importing %q and \"testing\"; define `func %s(f *testing.F)` that adds a few seeds with f.Add and calls f.Fuzz with a function whose arguments after *testing.T are []byte, string, bool or sized numbers. Build the values the API needs from the fuzz arguments: call its constructors rather than using zero values, and do not pass nil where the API requires a value. Do not recover panics, do not call t.Fatal or t.Error on the API's ordinary errors, and import nothing that reaches outside the process (%s).\n",
		r.Package, r.Entry.Pkg, r.Target, strings.Join(forbiddenImports, ", "))
	if r.Previous != "" {
		fmt.Fprintf(&b, "\nAttempt %d. Your previous file was refused:\n<<<problem\n%s\nproblem>>>\n<<<file\n%s\nfile>>>\nAnswer with the whole corrected file.\n", r.Attempt, clip.Text(r.Problem, 3000), clip.Text(r.Previous, 16000))
	}
	return b.String()
}

// forbiddenImports reach outside the process or around the type system: a
// harness has no use for them.
var forbiddenImports = []string{"os/exec", "net", "net/http", "syscall", "unsafe", "plugin", "os/signal"}

// errAuthor wraps the Author's own error: the loop ends.
var errAuthor = errors.New("the model")

// Authored runs the generate, compile, fix loop for e with author: the
// model's file goes to <Dir>/<name>/ in the module copy at dir; a file
// that breaks a rule (checkAuthored) or does not compile goes back to the
// model with the reason, up to attempts times. It returns a new entry of
// KindModel for the kept target (Target, Package and Args set); when no
// attempt was kept the entry's Dropped says why and the directory is
// removed. names holds the harness package names in use. Errors: the
// author's (wrapped), or the go command could not run.
func Authored(ctx context.Context, dir, goCmd string, env []string, e *Entry, author Author, attempts int, names map[string]bool) (*Entry, error) {
	m := *e
	m.Kind, m.Dropped, m.Body, m.Imports, m.Args = KindModel, "", nil, nil, nil
	m.ID = e.ID + "#model"
	name := harnessPkgName(e, names)
	rel := path.Join(Dir, name)
	m.Target = "Fuzz" + exportedName(e.Name)
	m.Package = "./" + rel
	req := AuthorRequest{Entry: e, Package: name, Target: m.Target}
	if e.fn != nil {
		req.Signature = types.ObjectString(e.fn, nil)
	}
	if err := os.MkdirAll(filepath.Join(dir, rel), 0o755); err != nil {
		return nil, err
	}
	for n := 1; n <= max(attempts, 1); n++ {
		req.Attempt, m.Dropped = n, ""
		src, err := author(ctx, req)
		if err != nil {
			os.RemoveAll(filepath.Join(dir, rel))
			return nil, fmt.Errorf("%w: %w", errAuthor, err)
		}
		req.Previous = src
		args, problem := checkAuthored(src, name, m.Target, e.Pkg)
		if problem == "" {
			if err := os.WriteFile(filepath.Join(dir, rel, File), []byte(src), 0o644); err != nil {
				return nil, err
			}
			out, err := compile(ctx, dir, goCmd, env, "./"+rel)
			if err == nil {
				m.Args, m.Source = args, src
				return &m, nil
			}
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			problem = "does not compile:\n" + clip.Text(strings.TrimSpace(out), 3000)
			if e := compileErr.FindStringSubmatch(out); e != nil {
				m.Dropped = fmt.Sprintf("the model's harness (attempt %d of %d) does not compile: %s", n, max(attempts, 1), clip.Text(e[3], 300))
			}
		}
		req.Problem = problem
		if !strings.HasPrefix(problem, "does not compile") || m.Dropped == "" {
			m.Dropped = fmt.Sprintf("the model's harness (attempt %d of %d) %s", n, max(attempts, 1), clip.Text(firstLine(problem), 300))
		}
	}
	return &m, os.RemoveAll(filepath.Join(dir, rel))
}

// checkAuthored checks a model's file before it is compiled: it parses,
// is in package pkg, imports the target package and nothing forbidden,
// and defines func target(f *testing.F) calling f.Fuzz with a function
// literal whose arguments are ones the engines can feed. It returns the
// fuzz argument types, or what is wrong.
func checkAuthored(src, pkg, target, importPath string) ([]string, string) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, File, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, "does not parse: " + err.Error()
	}
	if f.Name.Name != pkg {
		return nil, fmt.Sprintf("is in package %s, not %s", f.Name.Name, pkg)
	}
	imported := false
	for _, im := range f.Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		for _, bad := range forbiddenImports {
			if p == bad {
				return nil, fmt.Sprintf("imports %s, which a fuzz harness may not", p)
			}
		}
		imported = imported || p == importPath
	}
	if !imported {
		return nil, fmt.Sprintf("does not import the package under test, %s", importPath)
	}
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Recv != nil || fn.Name.Name != target || fn.Body == nil {
			continue
		}
		var args []string
		problem := "calls no f.Fuzz"
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || args != nil {
				return args == nil
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "Fuzz" || len(call.Args) != 1 {
				return true
			}
			lit, ok := call.Args[0].(*ast.FuncLit)
			if !ok {
				problem = "passes f.Fuzz no function literal"
				return false
			}
			var got []string
			for _, p := range lit.Type.Params.List {
				t := src[fset.Position(p.Type.Pos()).Offset:fset.Position(p.Type.End()).Offset]
				for range max(1, len(p.Names)) {
					got = append(got, t)
				}
			}
			if len(got) < 2 || got[0] != "*testing.T" {
				problem = "f.Fuzz's function does not take a *testing.T and at least one fuzz argument"
				return false
			}
			for _, t := range got[1:] {
				if !fuzzable[t] {
					problem = fmt.Sprintf("fuzzes a %s; the engines feed []byte, string, bool and sized numbers", t)
					return false
				}
			}
			args, problem = got[1:], ""
			return false
		})
		if problem != "" {
			return nil, problem
		}
		return args, ""
	}
	return nil, fmt.Sprintf("defines no func %s(f *testing.F)", target)
}

// fuzzable are the argument types both engines feed.
var fuzzable = map[string]bool{"[]byte": true, "string": true, "bool": true, "byte": true, "rune": true,
	"int": true, "int8": true, "int16": true, "int32": true, "int64": true,
	"uint": true, "uint8": true, "uint16": true, "uint32": true, "uint64": true, "float32": true, "float64": true}

// exportedName turns an entry's name ("(*Parser).Parse", "Get") into a Go
// identifier part: "ParserParse", "Get".
func exportedName(name string) string {
	s := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, name)
	if s == "" {
		return "Entry"
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
