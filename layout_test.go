// The layout tests enforce DESIGN.md §1 (the one-way import rule) and that every
// package documents itself. They read sources with go/build rather than asking
// `go list`, so the test cache notices an edited import.
package fleetd_test

import (
	"fmt"
	"go/build"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/qafleet/fleetd"

// leaves are the packages that import no fleetd package except the ones listed.
// A parent normally never imports its subpackage; two exceptions are
// deliberate: fleet owns the run record format, and chain owns its generated
// contract bindings. chain and sandbox may import fleet, the stdlib-only
// domain, so their APIs speak fleet.Address and fleet.Dial instead of SDK
// types (docs/architecture.md records this change to DESIGN.md §1).
var leaves = map[string][]string{
	"fleet":            {"fleet/trajectory"},
	"fleet/trajectory": nil,
	"sandbox":          {"fleet"},
	"chain":            {"chain/contracts", "chain/feedwire", "fleet"},
	"chain/contracts":  nil,
	"chain/feedwire":   nil, // decoders of what a node sends back: pure, fuzzed apart from go-ethereum
	"chain/devchain":   nil,
	"fuzzing":          {"sandbox"}, // fuzz engines and crash states: bounded exec only
	// crawl is pure link discovery (stdlib and golang.org/x/net/html), a
	// leaf so the playbooks may import it: the crawler's parsers are fuzzed
	// and benchmarked on their own, away from the replay machinery.
	"crawl": nil,
	// contract reads what docs promise (pure, fuzzed), over crawl's
	// HTML-to-text and URL helpers.
	"contract": {"crawl"},
}

// testOnly are packages any test may import but no production package except cmd.
// They may import each other and each other's subpackages (fixer/fixertest
// builds a repository from the testbed compiler's source).
var testOnly = []string{"fleet/fleettest", "chain/devchain", "testbed", "evaltarget/webapp", "evaltarget/injection", "fixer/fixertest"}

// isTestOnly reports whether pkg is a test-only package or below one.
func isTestOnly(pkg string) bool {
	return slices.ContainsFunc(testOnly, func(t string) bool { return within(pkg, t) })
}

// sdks maps a third-party SDK import prefix to the packages allowed to import it.
// A package listed here may also be imported by its own subpackages' tests.
var sdks = map[string][]string{
	"github.com/ethereum/go-ethereum": {"chain", "testbed", "cmd/fleetd"},
	"google.golang.org/genai":         {"fleet/gemini"},
	"github.com/openai/openai-go":     {"fleet/openai"},
	"github.com/google/go-github":     {"fixer/github"},
	"github.com/spf13/cobra":          {"cmd/fleetd"},
	// The MCP SDK stays in mcpserver; cmd/fleetd only composes mcpserver.
	"github.com/modelcontextprotocol/go-sdk": {"mcpserver"},
	// chromedp drives the console's browser tests; no production code uses it.
	"github.com/chromedp": {"cmd/fleetd"},
}

// sdkTests lets a package's tests (never its code) import an SDK: cmd/fleetd's
// tests drive a real `fleetd mcp` process with the SDK's own client.
var sdkTests = map[string][]string{
	"github.com/modelcontextprotocol/go-sdk": {"cmd/fleetd"},
}

// within reports whether pkg is dir or below it.
func within(pkg, dir string) bool { return pkg == dir || strings.HasPrefix(pkg, dir+"/") }

// ancestor reports whether a is a strict ancestor directory of b.
func ancestor(a, b string) bool { return strings.HasPrefix(b, a+"/") }

// checkImport returns why from may not import imp, or "" if it may. Both are
// module-relative for fleetd packages; imp is a full path for anything else.
func checkImport(from, imp string, test bool) string {
	if !strings.HasPrefix(imp, module+"/") {
		for prefix, allowed := range sdks {
			if !within(imp, prefix) {
				continue
			}
			for _, a := range allowed {
				if within(from, a) {
					return ""
				}
			}
			if test && slices.Contains(sdkTests[prefix], from) {
				return ""
			}
			return fmt.Sprintf("SDK %s may only be imported by %v", prefix, allowed)
		}
		return ""
	}
	to := strings.TrimPrefix(imp, module+"/")
	if within(from, "cmd") || to == from { // an external test imports its own package
		return ""
	}
	if test && slices.Contains(testOnly, to) {
		return ""
	}
	if slices.Contains(testOnly, from) && isTestOnly(to) {
		return ""
	}
	if allowed, ok := leaves[from]; ok {
		if slices.Contains(allowed, to) {
			return ""
		}
		return fmt.Sprintf("leaf package %s may import only %v", from, allowed)
	}
	if _, ok := leaves[to]; ok && !slices.Contains(testOnly, to) {
		return ""
	}
	if slices.Contains(testOnly, to) {
		return fmt.Sprintf("%s is for tests and cmd only", to)
	}
	if ancestor(to, from) {
		return "" // a subpackage may import its parent
	}
	if ancestor(from, to) {
		return fmt.Sprintf("a parent never imports its subpackage (%s -> %s)", from, to)
	}
	return fmt.Sprintf("features never import a sibling feature (%s -> %s); compose them in cmd/fleetd", from, to)
}

type pkgDir struct {
	rel string // module-relative import path, "" for the module root
	dir string
}

// walkPackages lists every directory under root holding Go files, skipping
// testdata, node_modules and hidden directories.
func walkPackages(t *testing.T, root string) []pkgDir {
	t.Helper()
	var out []pkgDir
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if p != root && (name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
			return filepath.SkipDir
		}
		matches, _ := filepath.Glob(filepath.Join(p, "*.go"))
		if len(matches) == 0 {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if rel == "." {
			rel = ""
		}
		out = append(out, pkgDir{rel: rel, dir: p})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// violations reads every package under root and returns one line per forbidden import.
func violations(t *testing.T, root string) []string {
	t.Helper()
	var bad []string
	for _, p := range walkPackages(t, root) {
		if p.rel == "" {
			continue // this test package
		}
		bp, err := build.ImportDir(p.dir, build.ImportComment)
		if err != nil {
			if _, ok := err.(*build.NoGoError); ok {
				continue
			}
			t.Fatalf("read %s: %v", p.rel, err)
		}
		check := func(imports []string, test bool) {
			for _, imp := range imports {
				if why := checkImport(p.rel, imp, test); why != "" {
					bad = append(bad, fmt.Sprintf("%s imports %s: %s", p.rel, imp, why))
				}
			}
		}
		check(bp.Imports, false)
		check(bp.TestImports, true)
		check(bp.XTestImports, true)
	}
	return bad
}

func TestImportRule(t *testing.T) {
	for _, v := range violations(t, ".") {
		t.Error(v)
	}
}

// TestImportRuleCatchesViolations builds a small tree with forbidden imports and
// checks the rule reports each one, so TestImportRule cannot pass vacuously.
func TestImportRuleCatchesViolations(t *testing.T) {
	root := t.TempDir()
	write := func(rel, src string) {
		t.Helper()
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	imp := func(pkg string, paths ...string) string {
		var b strings.Builder
		fmt.Fprintf(&b, "// Package %s is a fixture.\npackage %s\n\nimport (\n", path.Base(pkg), path.Base(pkg))
		for _, p := range paths {
			fmt.Fprintf(&b, "\t_ %q\n", p)
		}
		b.WriteString(")\n")
		return b.String()
	}
	write("fleet/f.go", imp("fleet", module+"/chain"))                                                         // leaf importing a leaf sibling
	write("triage/t.go", imp("triage", module+"/fixer", module+"/fleet"))                                      // sibling feature; fleet is fine
	write("fixer/github/g.go", imp("github", module+"/fixer", "github.com/google/go-github/v62/github"))       // fine
	write("fixer/f.go", imp("fixer", module+"/fixer/github"))                                                  // parent importing child
	write("qatools/q.go", imp("qatools", "github.com/ethereum/go-ethereum/common"))                            // SDK outside its adapter
	write("qatools/q_test.go", "package qatools\n\nimport _ \""+module+"/chain/devchain\"\n")                  // test-only import from a test: fine
	write("sandbox/s.go", imp("sandbox", module+"/fleet/fleettest"))                                           // test helper in production code
	write("cmd/fleetd/m_test.go", "package main\n\nimport _ \"github.com/modelcontextprotocol/go-sdk/mcp\"\n") // an SDK client in cmd's tests: fine
	write("cmd/fleetd/m.go", imp("main", "github.com/modelcontextprotocol/go-sdk/mcp"))                        // the SDK in cmd's code

	got := violations(t, root)
	wantSubstrings := []string{
		"fleet imports " + module + "/chain",
		"triage imports " + module + "/fixer: features never import a sibling",
		"fixer imports " + module + "/fixer/github: a parent never imports",
		"qatools imports github.com/ethereum/go-ethereum/common: SDK",
		"sandbox imports " + module + "/fleet/fleettest",
		"cmd/fleetd imports github.com/modelcontextprotocol/go-sdk/mcp: SDK",
	}
	for _, w := range wantSubstrings {
		if !slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, w) }) {
			t.Errorf("violation %q not reported; got:\n%s", w, strings.Join(got, "\n"))
		}
	}
	if len(got) != len(wantSubstrings) {
		t.Errorf("got %d violations, want %d:\n%s", len(got), len(wantSubstrings), strings.Join(got, "\n"))
	}
}

// TestPackageComments checks every package has exactly one package comment, in
// the form go doc expects.
func TestPackageComments(t *testing.T) {
	for _, p := range walkPackages(t, ".") {
		if p.rel == "" {
			continue
		}
		files, _ := filepath.Glob(filepath.Join(p.dir, "*.go"))
		var docs []string
		var name string
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.PackageClauseOnly|parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			name = af.Name.Name
			if af.Doc != nil {
				docs = append(docs, filepath.Base(f)+": "+strings.SplitN(af.Doc.Text(), "\n", 2)[0])
			}
		}
		if name == "" {
			continue // tests only
		}
		want := "Package " + name + " "
		if name == "main" {
			want = "Command " + path.Base(p.rel) + " "
		}
		switch {
		case len(docs) == 0:
			t.Errorf("%s: no package comment", p.rel)
		case len(docs) > 1:
			t.Errorf("%s: %d package comments, want one: %v", p.rel, len(docs), docs)
		case !strings.Contains(docs[0], ": "+want):
			t.Errorf("%s: package comment %q should start with %q", p.rel, docs[0], want)
		}
	}
}
