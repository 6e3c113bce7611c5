package fuzzing

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/qafleet/fleetd/sandbox"
)

// The libFuzzer probe: clang on PATH and a fuzzer that links.
var (
	lfProbeMu sync.Mutex
	lfProbed  bool
	lfClang   string
	lfWhy     string
)

// clangNames are tried in order: Debian installs clang-N and, with the
// clang package, clang.
var clangNames = []string{"clang", "clang-19", "clang-18", "clang-17", "clang-16", "clang-15", "clang-14"}

// LibFuzzerAvailable reports whether the libfuzzer engine can build here:
// clang is on PATH and `clang -fsanitize=fuzzer` links a fuzzer (the
// libFuzzer runtime, compiler-rt's libclang_rt.fuzzer, is installed). why
// says what was found or what is missing. The answer is probed once per
// process.
func LibFuzzerAvailable(ctx context.Context) (ok bool, why string) {
	clang, why := libFuzzerClang(ctx)
	return clang != "", why
}

// libFuzzerClang returns the clang that links libFuzzer ("" and why not).
func libFuzzerClang(ctx context.Context) (string, string) {
	lfProbeMu.Lock()
	defer lfProbeMu.Unlock()
	if lfProbed {
		return lfClang, lfWhy
	}
	clang, why, final := probeLibFuzzer(ctx)
	if final {
		lfProbed, lfClang, lfWhy = true, clang, why
	}
	return clang, why
}

// probeLibFuzzer links an empty fuzzer with each clang found. final is
// false when the probe itself could not run (cancelled, no temp dir).
func probeLibFuzzer(ctx context.Context) (clang, why string, final bool) {
	var found []string
	for _, name := range clangNames {
		if p, err := exec.LookPath(name); err == nil {
			found = append(found, p)
		}
	}
	if len(found) == 0 {
		return "", "clang is not on PATH (apt-get install clang: Debian's clang brings compiler-rt's libFuzzer runtime)", true
	}
	dir, err := os.MkdirTemp("", "fleetd-libfuzzer-probe-")
	if err != nil {
		return "", "libFuzzer probe: " + err.Error(), false
	}
	defer os.RemoveAll(dir)
	src := filepath.Join(dir, "probe.c")
	if err := os.WriteFile(src, []byte("#include <stddef.h>\n#include <stdint.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n"), 0o600); err != nil {
		return "", "libFuzzer probe: " + err.Error(), false
	}
	var last string
	for _, c := range found {
		res, err := sandbox.Exec(ctx, sandbox.ExecSpec{Argv: []string{c, "-fsanitize=fuzzer", src, "-o", filepath.Join(dir, "probe")},
			Dir: dir, Timeout: time.Minute, MemoryBytes: 4 << 30})
		if ctx.Err() != nil {
			return "", "libFuzzer probe: " + ctx.Err().Error(), false
		}
		if err != nil {
			last = err.Error()
			continue
		}
		if res.ExitCode == 0 {
			return c, c + " links -fsanitize=fuzzer (libFuzzer runtime present)", true
		}
		tail, _ := sandbox.Text(res.Stderr, 300)
		last = fmt.Sprintf("%s -fsanitize=fuzzer exited %d: %s", c, res.ExitCode, strings.TrimSpace(tail))
	}
	return "", "no clang links -fsanitize=fuzzer (the libFuzzer runtime, libclang_rt.fuzzer, is missing?): " + last, true
}

// RepoSourceKey names a repository copy's source for the build cache: the
// commit of a clone (a .git directory with a HEAD), else a hash of every
// file's path and content (a local directory, copied without .git). The
// harness directory is left out.
func RepoSourceKey(ctx context.Context, dir string) (string, error) {
	if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
		if git, err := exec.LookPath("git"); err == nil {
			res, err := sandbox.Exec(ctx, sandbox.ExecSpec{Argv: []string{git, "-C", dir, "rev-parse", "HEAD"}, Dir: dir, Timeout: 30 * time.Second,
				Env: gitEnv(dir)})
			if err == nil && res.ExitCode == 0 {
				if c := strings.TrimSpace(string(res.Stdout)); len(c) >= 40 {
					return "commit-" + c, nil
				}
			}
		}
	}
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			if d.Name() == ".git" || d.Name() == harnessDir && rel != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || strings.HasSuffix(d.Name(), harnessSuffix) || strings.HasPrefix(d.Name(), ".fleetd-") {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		fmt.Fprintf(h, "%s\x00", filepath.ToSlash(rel))
		if _, err := io.Copy(h, f); err != nil {
			return err
		}
		h.Write([]byte{0})
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("source key %s: %w", dir, err)
	}
	return "content-" + hex.EncodeToString(h.Sum(nil)[:16]), nil
}

// lfBuild is a built libFuzzer binary with what the describe run said.
type lfBuild struct {
	dir   string   // the cache entry: fuzzer, types, seeds/
	bin   string   // dir/fuzzer
	types []string // the fuzz function's argument kinds
	seeds [][]byte // f.Add seeds as libFuzzer inputs
	// seedsDropped says how many f.Add seeds were not loaded and why
	// (over maxKeptInput bytes, past maxKeptInputs); "" = none.
	seedsDropped string
	// literals are the string, character and byte-slice literals of the
	// fuzz target's package and the module's packages it imports.
	literals []string
}

// build returns the target's libFuzzer binary, from the cache when this
// source was built before: it writes the harness into the module copy,
// compiles it with the Go compiler's libFuzzer instrumentation into a C
// archive, links it with clang -fsanitize=fuzzer and runs it once in
// describe mode for the argument types and the f.Add seeds.
func (lt *LibFuzzerTarget) build(ctx context.Context) (*lfBuild, error) {
	g := lt.Go
	if err := g.check(); err != nil {
		return nil, err
	}
	if lt.Clang == "" {
		return nil, errors.New("libfuzzer: no clang with the libFuzzer runtime")
	}
	src := lt.SourceKey
	if src == "" {
		var err error
		if src, err = RepoSourceKey(ctx, g.Dir); err != nil {
			return nil, err
		}
	}
	sum := sha256.Sum256([]byte(strings.Join([]string{harnessVersion, src, filepath.Clean(g.Package), g.Func, g.Go, lt.Clang, goVersion(ctx, g),
		strings.Join(uninstrumented, ","), strings.Join(plainStd, ",")}, "\x00")))
	key := hex.EncodeToString(sum[:12])
	cacheRoot := lt.CacheDir
	if cacheRoot == "" {
		cacheRoot = filepath.Join(lt.work(), "bin")
	}
	entry := filepath.Join(cacheRoot, key)
	if b, err := loadBuild(entry); err == nil {
		return b, nil
	}
	// First every test file the build takes; when compiler errors name
	// other files than the target's, again without them; else, when there
	// were others, with the target's file alone.
	var errs []error
	skip := map[string]bool{}
	for attempt := 0; attempt < 2; attempt++ {
		tmp, err := lt.buildOnce(ctx, skip, attempt == 1 && len(skip) == 0)
		if err == nil {
			if err := installBuild(cacheRoot, key, tmp); err != nil {
				return nil, fmt.Errorf("libfuzzer build: %w", err)
			}
			os.Remove(filepath.Join(cacheRoot, buildFailureFile))
			return loadBuild(entry)
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		errs = append(errs, err)
		var fe *filesError
		switch {
		case errors.Is(err, errHarness):
			attempt = 2 // no file set would help
		case errors.As(err, &fe) && len(fe.failing) > 0:
			skip = fe.failing
		case errors.As(err, &fe) && fe.others == 0:
			attempt = 2 // the target's file was alone already
		}
	}
	err := errs[0]
	if len(errs) == 2 {
		err = fmt.Errorf("%w (again without the other test files: %v)", errs[0], errs[1])
	}
	recordBuildFailure(cacheRoot, g.Func, err)
	return nil, err
}

// buildFailureFile, in a build cache directory, describes the last build
// that failed (removed by the next that succeeds): what `fleetd doctor`
// shows of a degraded engine between runs.
const buildFailureFile = "last-build-failure.json"

// BuildFailure is the last failed libFuzzer build of a target.
type BuildFailure struct {
	Target string    `json:"target"`
	Cause  string    `json:"cause"` // the compiler's first error, else the error's first line
	At     time.Time `json:"at"`
}

func recordBuildFailure(root, fn string, err error) {
	cause := FirstBuildError(err)
	if cause == "" {
		cause = firstLine(err.Error())
	}
	b, _ := json.Marshal(BuildFailure{Target: fn, Cause: cause, At: time.Now().UTC()})
	if os.MkdirAll(root, 0o700) == nil {
		os.WriteFile(filepath.Join(root, buildFailureFile), b, 0o600)
	}
}

// LastBuildFailure reads the last failed build recorded in a libFuzzer
// build cache directory (LibFuzzerTarget.CacheDir): nil when the last
// build succeeded or none ran.
func LastBuildFailure(cacheDir string) (*BuildFailure, error) {
	b, err := os.ReadFile(filepath.Join(cacheDir, buildFailureFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var f BuildFailure
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(cacheDir, buildFailureFile), err)
	}
	return &f, nil
}

// filesError is a go build that failed: which other test files its
// errors named, and how many others there were.
type filesError struct {
	*BuildError
	failing map[string]bool
	others  int
}

func (e *filesError) Unwrap() error { return e.BuildError }

func goVersion(ctx context.Context, g GoTarget) string {
	// Asked once per go binary (and its modification time, so a toolchain
	// upgraded under a running daemon is asked again), not at every session.
	memo := g.Go
	if fi, err := os.Stat(g.Go); err == nil {
		memo += "\x00" + fi.ModTime().String()
	}
	if v, ok := goVersions.Load(memo); ok {
		return v.(string)
	}
	res, err := sandbox.Exec(ctx, sandbox.ExecSpec{Argv: []string{g.Go, "env", "GOVERSION"}, Dir: g.Dir, Env: g.Env, Timeout: 30 * time.Second, MemoryBytes: g.memory()})
	if err != nil || res.ExitCode != 0 {
		return ""
	}
	v := strings.TrimSpace(string(res.Stdout))
	goVersions.Store(memo, v)
	return v
}

// describeTimeout bounds the describe run (the target's setup; a
// variable for the tests).
var describeTimeout = 10 * time.Minute

// goVersions memoizes goVersion.
var goVersions sync.Map

// loadBuild reads a cache entry.
func loadBuild(dir string) (*lfBuild, error) {
	b := &lfBuild{dir: dir, bin: filepath.Join(dir, "fuzzer")}
	if _, err := os.Stat(b.bin); err != nil {
		return nil, err
	}
	t, err := os.ReadFile(filepath.Join(dir, "types"))
	if err != nil {
		return nil, err
	}
	b.types = strings.Fields(string(t))
	if err := checkArgTypes(b.types); err != nil {
		return nil, fmt.Errorf("libfuzzer: %w", err)
	}
	b.seeds, b.seedsDropped = loadBuildSeeds(filepath.Join(dir, "seeds"))
	if d, err := os.ReadFile(filepath.Join(dir, "literals.dict")); err == nil {
		b.literals, _ = ParseDict(d)
	}
	return b, nil
}

// pruneBuilds keeps the newest n cache entries.
func pruneBuilds(root string, n int) {
	entries, _ := os.ReadDir(root)
	type ent struct {
		name string
		mod  time.Time
	}
	var es []ent
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if info, err := e.Info(); err == nil {
			es = append(es, ent{e.Name(), info.ModTime()})
		}
	}
	sort.Slice(es, func(i, j int) bool { return es[i].mod.After(es[j].mod) })
	for i := n; i < len(es); i++ {
		os.RemoveAll(filepath.Join(root, es[i].name))
	}
}

// copyDirFlat copies the regular files of src and its seeds/ directory.
func copyDirFlat(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o700)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		return copyFile(p, filepath.Join(dst, rel), info.Mode().Perm()|0o600)
	})
}

// errHarness marks a fuzz target the harness cannot be generated for.
var errHarness = errors.New("libfuzzer harness")

// buildOnce generates the harness (every test file of the package the
// build takes but those in skip, or with narrow the target's alone) and
// builds it into a fresh directory under the work dir, returning that
// directory.
func (lt *LibFuzzerTarget) buildOnce(ctx context.Context, skip map[string]bool, narrow bool) (string, error) {
	g := lt.Go
	defer removeHarness(g)
	lay, err := writeHarness(g, skip, narrow)
	if err != nil {
		return "", err
	}
	out, err := os.MkdirTemp(lt.work(), "build-")
	if err != nil {
		return "", fmt.Errorf("libfuzzer build: %w", err)
	}
	timeout := g.BuildTime
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	env := lt.buildEnv()
	// The stand-in compiles at the module's language version: a go 1.12
	// module's copy is raised for the build (and put back after it, as
	// testingOverlay's go.mod edit is: restores run in reverse).
	restoreGo, err := RaiseGoDirective(lay.modRoot, StandInGo)
	defer restoreGo()
	if err != nil {
		return "", fmt.Errorf("libfuzzer build: %w", err)
	}
	overlay, restore, err := testingOverlay(ctx, g, lay, env, out)
	defer restore()
	if err != nil {
		return "", err
	}
	archive := filepath.Join(out, "fuzzer.a")
	argv := []string{g.Go, "build", "-tags", "libfuzzer", "-buildmode=c-archive", "-gcflags=all=-d=libfuzzer"}
	if lay.vendor {
		argv = append(argv, "-mod=vendor")
	}
	if overlay != "" {
		argv = append(argv, "-overlay="+overlay)
	}
	// Like go test -fuzz, leave uninstrumented the packages whose coverage
	// is the runtime's and the harness's noise rather than the target's,
	// and the standard library's plumbing (for each package the last
	// matching -gcflags wins).
	harness := []string{lay.modPath + "/" + harnessDir + "/main", lay.modPath + "/" + harnessDir + "/testing"}
	for _, p := range slices.Concat(uninstrumented, plainStd, harness) {
		argv = append(argv, "-gcflags="+p+"=")
	}
	res, err := sandbox.Exec(ctx, sandbox.ExecSpec{
		Argv: append(argv, "-o", archive, "./"+lay.mainDir),
		Dir:  lay.modRoot, Env: env, Timeout: timeout, MemoryBytes: g.memory(), CPUSeconds: uint64(timeout.Seconds()) * 2, FileBytes: 1 << 30,
	})
	if err != nil {
		return "", fmt.Errorf("libfuzzer build: %w", err)
	}
	if res.TimedOut {
		return "", &BuildError{Step: "go build", First: fmt.Sprintf("timed out after %s", timeout)}
	}
	if res.ExitCode != 0 {
		fe := &filesError{BuildError: buildError("go build", res.Stderr, lay), failing: failingTestFiles(res.Stderr, lay), others: len(lay.generated) - 1}
		return "", fe
	}
	bin := filepath.Join(out, "fuzzer")
	res, err = sandbox.Exec(ctx, sandbox.ExecSpec{Argv: []string{lt.Clang, "-fsanitize=fuzzer", archive, "-o", bin, "-lpthread"},
		Dir: out, Env: env, Timeout: 5 * time.Minute, MemoryBytes: 4 << 30, FileBytes: 1 << 30})
	if err != nil {
		return "", fmt.Errorf("libfuzzer link: %w", err)
	}
	if res.ExitCode != 0 || res.TimedOut {
		return "", buildError("clang -fsanitize=fuzzer", res.Stderr, lay)
	}
	os.Remove(archive)
	os.Remove(filepath.Join(out, "fuzzer.h"))
	// Describe: the argument types and the f.Add seeds.
	seeds := filepath.Join(out, "seeds")
	if err := os.MkdirAll(seeds, 0o700); err != nil {
		return "", fmt.Errorf("libfuzzer build: %w", err)
	}
	denv := append(lt.runEnv(), "FLEETD_LIBFUZZER_DESCRIBE="+seeds)
	// The describe run is the target's setup (its body up to f.Fuzz):
	// minio/minlz's reads 4,091 seeds out of zip files through go/parser,
	// 12–13 CPU-seconds under the instrumentation, and at load 45 on 2
	// cores a 2-minute bound killed it and failed the build.
	res, err = sandbox.Exec(ctx, sandbox.ExecSpec{Argv: []string{bin, "-runs=0"}, Dir: g.pkgDir(), Env: denv, Timeout: describeTimeout,
		MemoryBytes: g.memory(), OutputCap: 1 << 20, FileBytes: 1 << 30})
	if err != nil {
		return "", fmt.Errorf("libfuzzer describe: %w", err)
	}
	if res.TimedOut || res.CPULimited {
		return "", fmt.Errorf("%w: %s setup (its body before f.Fuzz: the seeds it adds) did not finish in %s", errHarness, g.Func, describeTimeout)
	}
	if res.ExitCode != 0 {
		tail, _ := sandbox.Text(append(res.Stdout, res.Stderr...), 800)
		return "", fmt.Errorf("%w: %s setup failed (exit %d%s): %s", errHarness, g.Func, res.ExitCode, sigSuffix(res.Signal), strings.TrimSpace(tail))
	}
	if err := os.Rename(filepath.Join(seeds, "types"), filepath.Join(out, "types")); err != nil {
		return "", fmt.Errorf("%w: %s: the describe run wrote no types: %v", errHarness, g.Func, err)
	}
	// The source's literals, for the dictionary: the package (its tests
	// included) and the non-standard packages it imports.
	dict, _ := FormatDict(GoLiterals(lt.sourceDirs(ctx), 0))
	if err := os.WriteFile(filepath.Join(out, "literals.dict"), dict, 0o600); err != nil {
		return "", fmt.Errorf("libfuzzer build: %w", err)
	}
	return out, nil
}

// sourceDirs lists the fuzz target's package directory, then the
// directories of the non-standard packages it imports (go list -deps, at
// most 64; the module cache's copies of dependencies among them).
func (lt *LibFuzzerTarget) sourceDirs(ctx context.Context) []string {
	g := lt.Go
	dirs := []string{g.pkgDir()}
	root := g.modRoot()
	rel, _ := filepath.Rel(root, g.pkgDir())
	res, err := sandbox.Exec(ctx, sandbox.ExecSpec{Argv: []string{g.Go, "list", "-deps", "-f", "{{if not .Standard}}{{.Dir}}{{end}}", "./" + filepath.ToSlash(rel)},
		Dir: root, Env: g.Env, Timeout: 2 * time.Minute, MemoryBytes: g.memory(), OutputCap: 1 << 20})
	if err != nil || res.ExitCode != 0 {
		return dirs
	}
	for _, d := range strings.Split(string(res.Stdout), "\n") {
		d = strings.TrimSpace(d)
		if d != "" && d != g.pkgDir() && len(dirs) < 65 {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

func sigSuffix(sig string) string {
	if sig == "" {
		return ""
	}
	return ", signal " + sig
}

// uninstrumented are the packages go test -fuzz does not instrument
// (cmd/go/internal/test: used concurrently with fuzzing, coverage noise).
var uninstrumented = []string{"context", "internal/fuzz", "internal/godebug", "internal/runtime/maps", "internal/sync",
	"reflect", "runtime", "sync", "sync/atomic", "syscall", "testing", "time"}

// plainStd are the standard library's plumbing, left uninstrumented too
// (go test -fuzz instruments them; its hooks are no-ops there, not here):
// what a parser calls on its whole input or for its error messages
// (bytes.Runes, strings.Fields, UTF-8 decoding, fmt), whose comparisons
// cost a hook call each, per byte, and describe the library rather than
// the target's grammar. A comparison these packages inline into the
// target (strings.HasPrefix, bytes.Equal) is compiled, and instrumented,
// as the target's; strconv, unicode, encoding/..., regexp, text/... and
// the other parsers of the standard library stay instrumented, since a
// target may hand its input to them. Measured on go-toml (bytes.Runes
// over every input: 16 % of the CPU in its hooks) and mvdan.cc/sh (fmt
// formats every syntax error): see BENCHMARKS.md, issue 21.
var plainStd = []string{"bufio", "bytes", "errors", "fmt", "internal/...", "io", "io/fs", "maps", "math/bits", "os",
	"path", "path/filepath", "slices", "sort", "strings", "unicode/utf16", "unicode/utf8"}

// buildEnv is the Go environment with cgo on and clang as the C compiler.
func (lt *LibFuzzerTarget) buildEnv() []string {
	var env []string
	for _, kv := range lt.Go.Env {
		if !strings.HasPrefix(kv, "CGO_ENABLED=") && !strings.HasPrefix(kv, "CC=") {
			env = append(env, kv)
		}
	}
	return append(env, "CGO_ENABLED=1", "CC="+lt.Clang)
}

// runEnv is the fuzzer's environment: the Go environment (GOMEMLIMIT
// among it) with GOTRACEBACK=crash, so a panic the harness cannot recover
// (another goroutine's, a fatal error) aborts and libFuzzer saves the input.
func (lt *LibFuzzerTarget) runEnv() []string {
	env := []string{}
	for _, kv := range lt.Go.Env {
		if !strings.HasPrefix(kv, "GOTRACEBACK=") {
			env = append(env, kv)
		}
	}
	return append(env, "GOTRACEBACK=crash")
}

var moduleLine = regexp.MustCompile(`(?m)^\s*module\s+("[^"]+"|\S+)`)

// modulePath reads the module path from a go.mod file.
func modulePath(gomod string) (string, error) {
	b, err := os.ReadFile(gomod)
	if err != nil {
		return "", err
	}
	m := moduleLine.FindSubmatch(b)
	if m == nil {
		return "", fmt.Errorf("%s has no module line", gomod)
	}
	p := string(m[1])
	if strings.HasPrefix(p, `"`) {
		if p, err = strconv.Unquote(p); err != nil {
			return "", fmt.Errorf("%s: bad module path", gomod)
		}
	}
	return p, nil
}

// rewriteTestFile turns a _test.go file into a regular file of its package
// compiled against the stand-in testing package: the "testing" import
// points at testingPath, "testing/synctest" at its stand-in beside it; test, benchmark, example and fuzz functions keep
// does not name are blanked out, and imports only they used are dropped.
// Blanking keeps every line where it was, so positions in a crash's stack
// are the original file's. It returns the file and its package name.
func rewriteTestFile(src []byte, keep func(name string) bool, testingPath string) ([]byte, string, error) {
	fset := token.NewFileSet()
	af, err := parser.ParseFile(fset, "", src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, "", err
	}
	off := func(p token.Pos) int { return fset.Position(p).Offset }
	type span struct{ lo, hi int }
	var blank []span
	for _, d := range af.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Recv != nil || keep(fd.Name.Name) || !isTestFunc(fd) {
			continue
		}
		lo := off(fd.Pos())
		if fd.Doc != nil {
			lo = off(fd.Doc.Pos())
		}
		blank = append(blank, span{lo, off(fd.End())})
	}
	inBlank := func(p int) bool {
		for _, s := range blank {
			if p >= s.lo && p < s.hi {
				return true
			}
		}
		return false
	}
	usedKept, usedGone := map[string]bool{}, map[string]bool{}
	ast.Inspect(af, func(n ast.Node) bool {
		if se, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := se.X.(*ast.Ident); ok {
				if inBlank(off(id.Pos())) {
					usedGone[id.Name] = true
				} else {
					usedKept[id.Name] = true
				}
			}
		}
		return true
	})
	type edit struct {
		lo, hi int
		text   string // "" = blank out
	}
	var edits []edit
	for _, s := range blank {
		edits = append(edits, edit{s.lo, s.hi, ""})
	}
	for _, d := range af.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.IMPORT {
			continue
		}
		var dropped int
		var specEdits []edit
		for _, s := range gd.Specs {
			is := s.(*ast.ImportSpec)
			p, err := strconv.Unquote(is.Path.Value)
			if err != nil {
				continue
			}
			names := importNames(p)
			if is.Name != nil {
				names = []string{is.Name.Name}
			}
			drop := false
			if is.Name == nil || (is.Name.Name != "_" && is.Name.Name != ".") {
				kept, gone := false, false
				for _, n := range names {
					kept = kept || usedKept[n]
					gone = gone || usedGone[n]
				}
				drop = gone && !kept
			}
			switch {
			case drop:
				dropped++
				specEdits = append(specEdits, edit{off(is.Pos()), off(is.End()), ""})
			case p == "testing":
				specEdits = append(specEdits, edit{off(is.Path.Pos()), off(is.Path.End()), strconv.Quote(testingPath)})
			case p == "testing/synctest": // its Test takes testing's *T: the stand-in's
				specEdits = append(specEdits, edit{off(is.Path.Pos()), off(is.Path.End()), strconv.Quote(testingPath + "/synctest")})
			}
		}
		if !gd.Lparen.IsValid() && dropped == len(gd.Specs) {
			edits = append(edits, edit{off(gd.Pos()), off(gd.End()), ""})
			continue
		}
		edits = append(edits, specEdits...)
	}
	sort.Slice(edits, func(i, j int) bool { return edits[i].lo > edits[j].lo })
	out := append([]byte(nil), src...)
	for _, e := range edits {
		rep := []byte(e.text)
		if e.text == "" {
			rep = bytes.Map(func(r rune) rune {
				if r == '\n' {
					return r
				}
				return ' '
			}, out[e.lo:e.hi])
		}
		out = append(out[:e.lo], append(rep, out[e.hi:]...)...)
	}
	return out, af.Name.Name, nil
}

// importNames guesses the names a package at import path p may be used
// by: its last element, without a .vN or -go suffix or go- prefix, or the
// element before a major-version suffix.
func importNames(p string) []string {
	elems := strings.Split(p, "/")
	last := elems[len(elems)-1]
	names := []string{last}
	if majorOnly.MatchString(last) && len(elems) > 1 {
		names = append(names, elems[len(elems)-2])
	}
	for _, n := range append([]string(nil), names...) {
		n = dotVersion.ReplaceAllString(n, "")
		n = strings.TrimPrefix(strings.TrimSuffix(n, "-go"), "go-")
		names = append(names, strings.ReplaceAll(n, "-", ""), strings.ReplaceAll(n, "-", "_"))
	}
	return names
}

var (
	majorOnly  = regexp.MustCompile(`^v\d+$`)
	dotVersion = regexp.MustCompile(`\.v\d+$`)
)

// isTestFunc reports whether fd is a test, benchmark, fuzz test or example
// by go test's rules: the name is the prefix or continues with a
// non-lowercase letter, and (but for examples) the one parameter is a
// pointer to testing's T, B, F or M.
func isTestFunc(fd *ast.FuncDecl) bool {
	name := fd.Name.Name
	for _, prefix := range []string{"Test", "Benchmark", "Fuzz", "Example"} {
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		if rest := name[len(prefix):]; rest != "" {
			if c := rest[0]; 'a' <= c && c <= 'z' {
				continue
			}
		}
		params := fd.Type.Params.List
		if prefix == "Example" {
			return len(params) == 0
		}
		if len(params) != 1 || len(params[0].Names) > 1 {
			return false
		}
		star, ok := params[0].Type.(*ast.StarExpr)
		if !ok {
			return false
		}
		sel, ok := star.X.(*ast.SelectorExpr)
		return ok && (sel.Sel.Name == "T" || sel.Sel.Name == "B" || sel.Sel.Name == "F" || sel.Sel.Name == "M")
	}
	return false
}

// installBuild copies a finished build from tmp into the cache as
// root/key, replacing an older entry of that key in one rename, and keeps
// the three newest entries. The libfuzzer and instrumented AFL++ builds
// share it.
func installBuild(root, key, tmp string) error {
	if err := os.MkdirAll(root, 0o700); err != nil {
		return err
	}
	entry := filepath.Join(root, key)
	final := filepath.Join(root, ".tmp-"+key+"-"+strconv.FormatInt(time.Now().UnixNano(), 36))
	if err := copyDirFlat(tmp, final); err != nil {
		return err
	}
	os.RemoveAll(entry)
	if err := os.Rename(final, entry); err != nil {
		return err
	}
	pruneBuilds(root, 3)
	return nil
}

// loadBuildSeeds reads the f.Add seeds a build wrote (seed-NNNN, in f.Add
// order): all of them up to maxKeptInputs, each up to maxKeptInput bytes
// (a compressor's or a parser's seeds are often its largest, slowest
// inputs: the seed pass defers them, it does not drop them). dropped
// says how many were left out and why; "" = none.
func loadBuildSeeds(dir string) (seeds [][]byte, dropped string) {
	entries, _ := os.ReadDir(dir)
	big, over := 0, 0
	for _, e := range entries {
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		info, err := e.Info()
		if err != nil || info.Size() == 0 {
			continue
		}
		if info.Size() > maxKeptInput {
			big++
			continue
		}
		if len(seeds) >= maxKeptInputs {
			over++
			continue
		}
		if b, err := os.ReadFile(filepath.Join(dir, e.Name())); err == nil {
			seeds = append(seeds, b)
		}
	}
	var why []string
	if big > 0 {
		why = append(why, fmt.Sprintf("%d over %d bytes", big, maxKeptInput))
	}
	if over > 0 {
		why = append(why, fmt.Sprintf("%d past the first %d", over, maxKeptInputs))
	}
	if len(why) == 0 {
		return seeds, ""
	}
	return seeds, fmt.Sprintf("%d of the target's f.Add seeds not staged: %s", big+over, strings.Join(why, ", "))
}
