package fuzzing

// Where the libFuzzer build puts a fuzz target's test files, so that they
// compile as regular code the way go test compiles them: in the package's
// own directory (an in-package test file), or in a directory inside it
// that reproduces what the file reads (an external test package, package
// foo_test, which cannot share a directory with package foo in a plain
// build). Inside the package directory an external test package keeps the
// right to import the package's nested internal/ packages; the files its
// //go:embed patterns name are linked in beside it; and every rewritten
// file starts with a //line directive naming the original file, so
// runtime.Caller, panics and compiler errors show the file go test shows
// (seeds found with runtime.Caller are found). A test file is taken only
// when its name and //go:build line match the build (a foo_windows_test.go
// is not compiled on Linux, renamed or not). Every package in the build
// that imports "testing" (a helper package whose functions take a
// *testing.F, the package's own non-test helpers, a dependency) is
// compiled against the stand-in through go build -overlay, so the types
// agree everywhere and nothing outside the module copy is written.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/qafleet/fleetd/sandbox"
)

// harnessLayout is what writeHarness wrote into the module copy.
type harnessLayout struct {
	modRoot string // the directory of the go.mod nearest above the package
	modPath string
	mainDir string // the harness's main package, relative to modRoot
	// generated maps each original _test.go file (absolute) written as a
	// regular file to that file.
	generated  map[string]string
	targetFile string // the original file declaring the fuzz target
	xdir       string // the external test package's directory, "" for none
	vendor     bool   // the module vendors its dependencies
}

// findModRoot is the directory of the go.mod nearest above pkgDir, at or
// below root.
func findModRoot(root, pkgDir string) (string, error) {
	root = filepath.Clean(root)
	for d := filepath.Clean(pkgDir); ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if d == root || !strings.HasPrefix(d, root+string(filepath.Separator)) {
			return "", fmt.Errorf("no go.mod in %s or above it in the repository", pkgDir)
		}
	}
}

// modRoot is the module root of the target's package (a nested module's
// own), else the repository's root.
func (g GoTarget) modRoot() string {
	if r, err := findModRoot(g.Dir, g.pkgDir()); err == nil {
		return r
	}
	return g.Dir
}

// buildContext is the build's file matching: the target's GOOS and GOARCH
// (from its environment, else this machine's), cgo on, tag libfuzzer.
func buildContext(env []string) build.Context {
	ctxt := build.Default
	ctxt.GOOS, ctxt.GOARCH = runtime.GOOS, runtime.GOARCH
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GOOS="); ok && v != "" {
			ctxt.GOOS = v
		}
		if v, ok := strings.CutPrefix(kv, "GOARCH="); ok && v != "" {
			ctxt.GOARCH = v
		}
	}
	ctxt.CgoEnabled = true
	ctxt.BuildTags = []string{"libfuzzer"}
	ctxt.Dir = ""
	return ctxt
}

// testFile is one _test.go file of the package that the build would take.
type testFile struct {
	path, pkg string
	funcs     map[string]bool // top-level functions (no methods)
	hasMain   bool            // declares TestMain(*testing.M)
}

// readTestFiles parses the package's _test.go files that match the build
// context; excluded lists the others (for the error when the target is in
// one of them).
func readTestFiles(ctxt build.Context, pkgDir string) (files []testFile, excluded []string, err error) {
	names, _ := filepath.Glob(filepath.Join(pkgDir, "*_test.go"))
	sort.Strings(names)
	fset := token.NewFileSet()
	for _, name := range names {
		ok, err := ctxt.MatchFile(pkgDir, filepath.Base(name))
		if err != nil || !ok {
			excluded = append(excluded, name)
			continue
		}
		af, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			excluded = append(excluded, name)
			continue
		}
		tf := testFile{path: name, pkg: af.Name.Name, funcs: map[string]bool{}}
		for _, d := range af.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil {
				tf.funcs[fd.Name.Name] = true
				if fd.Name.Name == "TestMain" && isTestFunc(fd) {
					tf.hasMain = true
				}
			}
		}
		files = append(files, tf)
	}
	return files, excluded, nil
}

// funcIn reports the file of files declaring fn.
func funcIn(files []testFile, fn string) (testFile, bool) {
	for _, f := range files {
		if f.funcs[fn] {
			return f, true
		}
	}
	return testFile{}, false
}

// removeHarness takes the generated files out of the module copy again,
// so that other engines see the repository as it is.
func removeHarness(g GoTarget) {
	root := g.modRoot()
	os.RemoveAll(filepath.Join(root, harnessDir))
	os.RemoveAll(filepath.Join(g.pkgDir(), harnessDir))
	gen, _ := filepath.Glob(filepath.Join(g.pkgDir(), "*"+harnessSuffix))
	for _, f := range gen {
		os.Remove(f)
	}
}

// writeHarness writes the generated packages into the module copy: the
// package's test files as regular files (every one the build takes but
// those in skip; with narrow only the target's), the stand-in testing
// package and the main package.
func writeHarness(g GoTarget, skip map[string]bool, narrow bool) (*harnessLayout, error) {
	pkgDir := g.pkgDir()
	root, err := findModRoot(g.Dir, pkgDir)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errHarness, err)
	}
	modPath, err := modulePath(filepath.Join(root, "go.mod"))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errHarness, err)
	}
	rel, err := filepath.Rel(root, pkgDir)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errHarness, err)
	}
	importPath := modPath
	if r := filepath.ToSlash(rel); r != "." {
		importPath = modPath + "/" + r
	}
	files, excluded, _ := readTestFiles(buildContext(g.Env), pkgDir)
	target, ok := funcIn(files, g.Func)
	if !ok {
		for _, name := range excluded {
			if b, err := os.ReadFile(name); err == nil && bytes.Contains(b, []byte("func "+g.Func+"(")) {
				return nil, fmt.Errorf("%w: %s is in %s, which the build's constraints exclude (its file name's _GOOS/_GOARCH or its //go:build line)", errHarness, g.Func, filepath.Base(name))
			}
		}
		return nil, fmt.Errorf("%w: no func %s in %s/*_test.go", errHarness, g.Func, filepath.ToSlash(filepath.Clean(g.Package)))
	}
	if target.pkg == "main" {
		return nil, fmt.Errorf("%w: %s is in package main, which cannot be imported", errHarness, g.Func)
	}
	xtest := strings.HasSuffix(target.pkg, "_test")
	lay := &harnessLayout{modRoot: root, modPath: modPath, mainDir: path.Join(harnessDir, "main"),
		generated: map[string]string{}, targetFile: target.path}
	if _, err := os.Stat(filepath.Join(root, "vendor", "modules.txt")); err == nil {
		lay.vendor = true
	}
	if xtest {
		lay.xdir = filepath.Join(pkgDir, harnessDir, path.Base(importPath)+"_test")
	}
	testingPath := modPath + "/" + harnessDir + "/testing"
	mainPkg, mainImport := "nil", ""
	for _, f := range files {
		inX := strings.HasSuffix(f.pkg, "_test")
		switch {
		case f.path == target.path:
		case narrow || skip[f.path]:
			continue
		case inX && (!xtest || f.pkg != target.pkg):
			continue
		}
		src, err := os.ReadFile(f.path)
		if err != nil {
			return nil, fmt.Errorf("libfuzzer harness: %w", err)
		}
		keep := func(name string) bool { return name == g.Func || name == "TestMain" }
		out, _, err := rewriteTestFile(src, keep, testingPath)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", errHarness, filepath.Base(f.path), err)
		}
		// The //line directive: positions, runtime.Caller and compiler
		// errors name the original file.
		out = append([]byte("//line "+f.path+":1\n"), out...)
		name := strings.TrimSuffix(filepath.Base(f.path), "_test.go") + harnessSuffix
		dst := filepath.Join(pkgDir, name)
		if inX {
			dst = filepath.Join(lay.xdir, name)
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
			return nil, fmt.Errorf("libfuzzer harness: %w", err)
		}
		if err := os.WriteFile(dst, out, 0o600); err != nil {
			return nil, fmt.Errorf("libfuzzer harness: %w", err)
		}
		lay.generated[f.path] = dst
		if f.hasMain {
			if inX {
				mainPkg = "target.TestMain"
			} else if xtest {
				mainPkg, mainImport = "fleetdbase.TestMain", "\n\tfleetdbase "+strconv.Quote(importPath)
			} else {
				mainPkg = "target.TestMain"
			}
		}
		if inX {
			if err := linkEmbeds(src, pkgDir, lay.xdir); err != nil {
				return nil, fmt.Errorf("libfuzzer harness: %s: %w", filepath.Base(f.path), err)
			}
		}
	}
	targetPath := importPath
	if xtest {
		targetPath = importPath + "/" + harnessDir + "/" + filepath.Base(lay.xdir)
	}
	repl := strings.NewReplacer("{{.Testing}}", testingPath, "{{.Target}}", targetPath, "{{.Func}}", g.Func,
		"{{.Dir}}", harnessDir, "{{.Suffix}}", harnessSuffix, "{{.TestMain}}", mainPkg, "{{.MainImport}}", mainImport)
	for name, src := range map[string]string{"main/main.go": harnessMainSrc, "testing/testing.go": harnessTestingSrc, "testing/synctest/synctest.go": harnessSynctestSrc} {
		p := filepath.Join(root, harnessDir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return nil, fmt.Errorf("libfuzzer harness: %w", err)
		}
		if err := os.WriteFile(p, []byte(repl.Replace(src)), 0o600); err != nil {
			return nil, fmt.Errorf("libfuzzer harness: %w", err)
		}
	}
	return lay, nil
}

var embedLine = regexp.MustCompile(`(?m)^//go:embed\s+(.+)$`)

// linkEmbeds makes what the //go:embed patterns of an external test file
// name in pkgDir present in xdir too, at the same relative paths (hard
// links where the file system allows, else copies: go:embed refuses
// symbolic links).
func linkEmbeds(src []byte, pkgDir, xdir string) error {
	for _, m := range embedLine.FindAllSubmatch(src, -1) {
		pats, err := embedPatterns(string(m[1]))
		if err != nil {
			return err
		}
		for _, pat := range pats {
			pat = strings.TrimPrefix(pat, "all:")
			matches, err := filepath.Glob(filepath.Join(pkgDir, filepath.FromSlash(pat)))
			if err != nil {
				return fmt.Errorf("//go:embed %s: %w", pat, err)
			}
			for _, mp := range matches {
				rel, err := filepath.Rel(pkgDir, mp)
				if err != nil || strings.HasPrefix(rel, "..") || rel == harnessDir || strings.HasPrefix(rel, harnessDir+string(filepath.Separator)) {
					continue
				}
				if err := linkTree(mp, filepath.Join(xdir, rel)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// embedPatterns splits a //go:embed line's arguments (space-separated,
// Go-quoted ones allowed).
func embedPatterns(s string) ([]string, error) {
	var out []string
	s = strings.TrimSpace(s)
	for s != "" {
		var p string
		switch s[0] {
		case '"', '`':
			q, err := strconv.QuotedPrefix(s)
			if err != nil {
				return nil, fmt.Errorf("//go:embed %s: bad quoted pattern", s)
			}
			if p, err = strconv.Unquote(q); err != nil {
				return nil, fmt.Errorf("//go:embed %s: bad quoted pattern", s)
			}
			s = s[len(q):]
		default:
			i := strings.IndexAny(s, " \t")
			if i < 0 {
				i = len(s)
			}
			p, s = s[:i], s[i:]
		}
		out = append(out, p)
		s = strings.TrimSpace(s)
	}
	return out, nil
}

// linkTree hard-links (or copies) src, a file or a directory, to dst.
func linkTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o700)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
			return err
		}
		if _, err := os.Lstat(to); err == nil {
			return nil
		}
		if os.Link(p, to) == nil {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		return copyFile(p, to, info.Mode().Perm()|0o600)
	})
}

// testingOverlay points every non-standard package of the build that
// imports "testing" (but the stand-in) at the stand-in instead. A package
// in the module copy or its vendor directory gets an overlay entry (a
// copy of each such file under dir); the go command refuses overlays of
// the module cache, so a module there is copied into the harness
// directory, its files rewritten, and go.mod replaces it with the copy
// (restore puts go.mod and go.sum back). It returns the go build -overlay
// file ("" when no file needs one).
func testingOverlay(ctx context.Context, g GoTarget, lay *harnessLayout, env []string, dir string) (overlay string, restore func(), err error) {
	restore = func() {}
	argv := []string{g.Go, "list", "-e", "-deps", "-tags", "libfuzzer"}
	if lay.vendor {
		argv = append(argv, "-mod=vendor")
	}
	argv = append(argv, "-f", "{{if not .Standard}}{{.ImportPath}}\t{{.Dir}}\t{{join .GoFiles \" \"}} {{join .CgoFiles \" \"}}\t{{join .Imports \" \"}}\t{{with .Module}}{{.Path}}\t{{.Version}}\t{{.Dir}}\t{{.Main}}{{end}}{{end}}", "./"+lay.mainDir)
	res, err := sandbox.Exec(ctx, sandbox.ExecSpec{Argv: argv, Dir: lay.modRoot, Env: env, Timeout: 5 * time.Minute,
		MemoryBytes: g.memory(), OutputCap: 8 << 20})
	if err != nil {
		return "", restore, fmt.Errorf("libfuzzer build: go list: %w", err)
	}
	if res.ExitCode != 0 {
		return "", restore, buildError("go list", res.Stderr, lay)
	}
	shim := lay.modPath + "/" + harnessDir + "/testing"
	replace := map[string]string{}
	type modCopy struct{ path, version, src, dst string }
	copies := map[string]*modCopy{} // by module path@version
	sc := bufio.NewScanner(bytes.NewReader(res.Stdout))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		parts := strings.Split(sc.Text(), "\t")
		if len(parts) < 4 || parts[0] == shim || parts[0] == shim+"/synctest" || !containsField(parts[3], "testing") && !containsField(parts[3], "testing/synctest") {
			continue
		}
		pkgDir := parts[1]
		var mc *modCopy
		if len(parts) == 8 && parts[7] != "true" && parts[6] != "" && !within(lay.modRoot, pkgDir) {
			// A module outside the copy (the module cache): copy it.
			key := parts[4] + "@" + parts[5]
			if mc = copies[key]; mc == nil {
				mc = &modCopy{path: parts[4], version: parts[5], src: parts[6],
					dst: filepath.Join(lay.modRoot, harnessDir, "mods", strconv.Itoa(len(copies)))}
				if err := copyModule(mc.src, mc.dst, mc.path); err != nil {
					return "", restore, fmt.Errorf("libfuzzer build: copy %s: %w", key, err)
				}
				copies[key] = mc
			}
		}
		for _, name := range strings.Fields(parts[2]) {
			file := filepath.Join(pkgDir, name)
			src, err := os.ReadFile(file)
			if err != nil {
				return "", restore, fmt.Errorf("libfuzzer build: %w", err)
			}
			out, changed, err := retargetTesting(src, shim)
			if err != nil || !changed {
				continue
			}
			if mc != nil {
				rel, err := filepath.Rel(mc.src, file)
				if err != nil {
					return "", restore, fmt.Errorf("libfuzzer build: %w", err)
				}
				if err := os.WriteFile(filepath.Join(mc.dst, rel), out, 0o600); err != nil {
					return "", restore, fmt.Errorf("libfuzzer build: %w", err)
				}
				continue
			}
			dst := filepath.Join(dir, strconv.Itoa(len(replace))+"-"+name)
			if err := os.WriteFile(dst, out, 0o600); err != nil {
				return "", restore, fmt.Errorf("libfuzzer build: %w", err)
			}
			replace[file] = dst
		}
	}
	if len(copies) > 0 {
		gomod, gosum := filepath.Join(lay.modRoot, "go.mod"), filepath.Join(lay.modRoot, "go.sum")
		modB, err := os.ReadFile(gomod)
		if err != nil {
			return "", restore, fmt.Errorf("libfuzzer build: %w", err)
		}
		sumB, sumErr := os.ReadFile(gosum)
		restore = func() {
			os.WriteFile(gomod, modB, 0o600)
			if sumErr == nil {
				os.WriteFile(gosum, sumB, 0o600)
			}
		}
		edit := []string{g.Go, "mod", "edit"}
		for _, mc := range copies {
			rel, _ := filepath.Rel(lay.modRoot, mc.dst)
			edit = append(edit, "-replace="+mc.path+"@"+mc.version+"=./"+filepath.ToSlash(rel))
		}
		res, err := sandbox.Exec(ctx, sandbox.ExecSpec{Argv: edit, Dir: lay.modRoot, Env: env, Timeout: time.Minute, MemoryBytes: g.memory()})
		if err != nil {
			return "", restore, fmt.Errorf("libfuzzer build: go mod edit: %w", err)
		}
		if res.ExitCode != 0 {
			return "", restore, buildError("go mod edit", res.Stderr, lay)
		}
	}
	if len(replace) == 0 {
		return "", restore, nil
	}
	b, err := json.Marshal(map[string]any{"Replace": replace})
	if err != nil {
		return "", restore, err
	}
	p := filepath.Join(dir, "overlay.json")
	return p, restore, os.WriteFile(p, b, 0o600)
}

// within reports whether p is dir or below it.
func within(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// copyModule copies a module's tree (writable; no nested modules' go.mod
// is there in the module cache) and gives it a go.mod when it has none.
func copyModule(src, dst, modPath string) error {
	if err := copyTree(src, dst); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dst, "go.mod")); err != nil {
		return os.WriteFile(filepath.Join(dst, "go.mod"), []byte("module "+modPath+"\n"), 0o600)
	}
	return nil
}

func containsField(s, f string) bool {
	for _, x := range strings.Fields(s) {
		if x == f {
			return true
		}
	}
	return false
}

// retargetTesting points a file's "testing" import at shim, and its
// "testing/synctest" import at the stand-in beside it (its Test takes
// testing's *T: go-openapi/testify's assertions call it), nothing else
// changed (positions kept); changed is false when it has neither.
func retargetTesting(src []byte, shim string) ([]byte, bool, error) {
	fset := token.NewFileSet()
	af, err := parser.ParseFile(fset, "", src, parser.ImportsOnly|parser.ParseComments)
	if err != nil {
		return nil, false, err
	}
	out, changed := src, false
	for i := len(af.Imports) - 1; i >= 0; i-- { // from the end: offsets before an edit stay
		is := af.Imports[i]
		p, err := strconv.Unquote(is.Path.Value)
		if err != nil || p != "testing" && p != "testing/synctest" {
			continue
		}
		to := shim + strings.TrimPrefix(p, "testing")
		lo, hi := fset.Position(is.Path.Pos()).Offset, fset.Position(is.Path.End()).Offset
		out = append(append(append([]byte(nil), out[:lo]...), strconv.Quote(to)...), out[hi:]...)
		changed = true
	}
	return out, changed, nil
}

// BuildError is a libFuzzer build that failed: the step (go list, go
// build, clang, the describe run), the first error it printed (a compiler
// error's file:line: message) and the output's tail.
type BuildError struct {
	Step  string
	First string
	Tail  string
}

func (e *BuildError) Error() string {
	if e.First == "" || strings.Contains(e.Tail, e.First) {
		return fmt.Sprintf("libfuzzer build: %s: %s", e.Step, e.Tail)
	}
	return fmt.Sprintf("libfuzzer build: %s: %s (%s)", e.Step, e.First, e.Tail)
}

// FirstBuildError is the first compiler error of a failed libFuzzer build
// in err ("" when err is none).
func FirstBuildError(err error) string {
	var be *BuildError
	if errors.As(err, &be) {
		if be.First != "" {
			return be.First
		}
		return firstLine(be.Tail)
	}
	return ""
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// compileError is a compiler error line: file.go:line[:col]: message.
var compileError = regexp.MustCompile(`(?m)^(\S+\.go):(\d+)(?::\d+)?: .+$`)

func buildError(step string, stderr []byte, lay *harnessLayout) *BuildError {
	tail, _ := sandbox.Text(stderr, 800)
	be := &BuildError{Step: step, Tail: strings.TrimSpace(tail)}
	if m := compileError.Find(stderr); m != nil {
		be.First = string(m)
	} else {
		for _, l := range strings.Split(string(stderr), "\n") {
			if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
				be.First = l
				break
			}
		}
	}
	return be
}

// failingTestFiles are the original test files, other than the target's,
// that compiler errors in stderr name.
func failingTestFiles(stderr []byte, lay *harnessLayout) map[string]bool {
	out := map[string]bool{}
	for _, m := range compileError.FindAllSubmatch(stderr, -1) {
		f := string(m[1])
		if !filepath.IsAbs(f) {
			f = filepath.Join(lay.modRoot, f)
		}
		f = filepath.Clean(f)
		for orig, gen := range lay.generated {
			if (f == orig || f == gen) && orig != lay.targetFile {
				out[orig] = true
			}
		}
	}
	return out
}
