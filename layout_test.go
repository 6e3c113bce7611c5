// The layout tests enforce DESIGN.md §1 (the one-way import rule) and that every
// package documents itself. They read sources with go/build rather than asking
// `go list`, so the test cache notices an edited import.
package fleetd_test

import (
	"fmt"
	"go/ast"
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

// layers orders fleetd's packages from the bottom up; a package belongs to
// the deepest entry that is it or one of its ancestors. A package imports
// only packages in lower layers (and its own parent, when the parent is not
// above it): never a sibling in its own layer, never one above. A parent may
// import a subpackage placed below it (specialists composes its checks).
// Every package must be placed, so a new one is placed on purpose
// (TestEveryPackageHasALayer).
//
//	-1 helpers  stdlib-only helpers every layer may call (clip)
//	0 formats   pure parsers and formats of outside input, stdlib (and x/net) only
//	1 domain    fleet, the host: the domain types and the agent loop
//	2 adapters  one package per outside dependency: the node, the jail, models
//	3 engines   the fuzz engines over the jail; the one road to the log over the node;
//	            the replay engine the specialists' checks are written against
//	4 features  the tools, the specialists' checks, triage, the fix stage, the doors (console, MCP)
//	5 pipelines compositions of features: the fix pipeline, the specialists' playbooks
//	6 service   the daemon: the node watcher, the runner's starter, what the
//	            console and /metrics read of the fleet's state; doctor's checks
//	7 commands  cmd/fleetd: flags, config, loading, printing
//
// fixtures and the *test helpers sit beside the stack (testOnly): they are
// in no layer, and the layer rule is never asked about them.
var layers = map[string]int{
	"clip":            -1, // below the formats: a stdlib-only helper every layer may call (shortening text)
	"trajectory":      0,
	"crawl":           0,
	"chain/contracts": 0,
	"chain/feedwire":  0,
	"chain/evm":       0,
	"configs":         0,
	"siwe":            0, // EIP-4361 sign-in messages: built and parsed, never signed
	"docclaims":       1, // over crawl's HTML-to-text and URL helpers
	"fleet":           1,
	"chain":           2,
	"sandbox":         2,
	"fleet/gemini":    2,
	"fleet/openai":    2,
	"sarif":           2, // code scanning's format, over the report's types
	"browser":         2, // headless Chromium over chromedp: the rendering crawl
	"fuzzing":         3,
	"fuzzing/harness": 3, // entry points, generated fuzz targets and crash judging over a module copy
	"poster":          3,
	"qatools":         4,
	"triage":          4,
	"triggers":        4,
	"fixer":           4,
	"mcpserver":       4,
	"console":         4,
	"httpapi":         4,
	"pipeline":        5,
	"runner":          5, // the run core every command that runs a specialist calls
	"daemon":          6, // the service: above the pipelines, below the commands
	"doctor":          6, // fleetd doctor's checks, given the values they check; cmd prints them
	"cmd":             7,

	// The specialists: the replay engine and probe API the checks are
	// written against, the checks, and the playbooks that compose them.
	"specialists/replay":    3,
	"specialists/inject":    4,
	"specialists/redteam":   4,
	"specialists/fuzzstage": 4,
	"specialists/authz":     4, // two-identity checks behind a SIWE login
	"specialists":           5,
}

// layerOf returns pkg's layer and the entry that placed it.
func layerOf(pkg string) (int, string, bool) {
	best := ""
	for p := range layers {
		if within(pkg, p) && len(p) > len(best) {
			best = p
		}
	}
	if best == "" {
		return 0, "", false
	}
	return layers[best], best, true
}

// narrow are packages held to an exact list of fleetd imports, tighter than
// their layer: fleet is stdlib-only but for the run record format, and the
// pure parsers import nothing of fleetd's (docclaims reads crawl's helpers).
// chain owns its generated bindings and the node-output decoders.
var narrow = map[string][]string{
	"fleet":           {"trajectory", "clip"},
	"trajectory":      {"clip"},
	"sandbox":         {"fleet"},
	"chain":           {"chain/contracts", "chain/feedwire", "fleet"},
	"chain/contracts": nil,
	"chain/feedwire":  nil,
	"chain/evm":       {"clip"},
	"chain/devchain":  nil,
	"fuzzing":         {"sandbox"},         // fuzz engines and crash states: bounded exec only
	"fuzzing/harness": {"fuzzing", "clip"}, // the Go corpus format; go/packages is its one outside dependency
	"crawl":           nil,
	"clip":            nil,
	"siwe":            {"clip"},
	"docclaims":       {"crawl"},
	"sarif":           {"fleet"},
	"browser":         {"crawl", "clip"}, // the adapter reports in crawl.Rendered, nothing else of fleetd's
	// the probe API: the domain and the crawl's link discovery only
	"specialists/replay": {"fleet", "crawl", "trajectory", "clip"}, // trajectory: the redaction's key shapes, so the secret scanner finds what records redact
}

// testOnly are packages any test may import but no production package except
// cmd. They may import any package below cmd, each other and each other's
// subpackages (fixer/fixertest builds a repository from the testbed
// compiler's source).
var testOnly = []string{"fleet/fleettest", "chain/devchain", "fixtures", "fixer/fixertest", "faultnet"}

// isTestOnly reports whether pkg is a test-only package or below one.
func isTestOnly(pkg string) bool {
	return slices.ContainsFunc(testOnly, func(t string) bool { return within(pkg, t) })
}

// sdks maps a third-party SDK import prefix to the packages allowed to import it.
// A package listed here may also be imported by its own subpackages' tests.
var sdks = map[string][]string{
	"github.com/ethereum/go-ethereum": {"chain", "fixtures/testbed", "cmd/fleetd"},
	"google.golang.org/genai":         {"fleet/gemini"},
	"github.com/openai/openai-go":     {"fleet/openai"},
	"github.com/google/go-github":     {"fixer/github"},
	"github.com/spf13/cobra":          {"cmd/fleetd"},
	// The MCP SDK stays in mcpserver; cmd/fleetd only composes mcpserver.
	"github.com/modelcontextprotocol/go-sdk": {"mcpserver"},
	// chromedp stays in the browser adapter (the rendering crawl); cmd/fleetd's
	// console browser tests drive it too.
	"github.com/chromedp": {"browser", "cmd/fleetd"},
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
	if isTestOnly(to) {
		if test || isTestOnly(from) {
			return ""
		}
		return fmt.Sprintf("%s is for tests and cmd only", to)
	}
	if allowed, ok := narrow[from]; ok && !slices.Contains(allowed, to) {
		return fmt.Sprintf("%s may import only %v", from, allowed)
	}
	if within(to, "cmd") {
		return "nothing imports a command"
	}
	if isTestOnly(from) {
		return "" // a fixture may use anything below cmd
	}
	fl, fe, ok1 := layerOf(from)
	tl, te, ok2 := layerOf(to)
	if !ok1 || !ok2 {
		return "" // TestEveryPackageHasALayer reports it
	}
	switch {
	case ancestor(to, from) && tl <= fl:
		return "" // a subpackage may import its parent, unless the parent is above it
	case ancestor(from, to) && tl >= fl:
		return fmt.Sprintf("a parent never imports its subpackage (%s -> %s)", from, to)
	case tl > fl:
		return fmt.Sprintf("%s (layer %d, %s) never imports a layer above it: %s is layer %d (%s)", from, fl, fe, to, tl, te)
	case tl == fl:
		return fmt.Sprintf("a package never imports a sibling in its own layer %d (%s -> %s); compose them a layer up", fl, from, to)
	}
	return ""
}

type pkgDir struct {
	rel string // module-relative import path, "" for the module root
	dir string
}

// nestedModule reports whether rel lies in a module of its own
// (deploy/kubernetes, fixtures/parsers): not a package of this one.
func nestedModule(root, rel string) bool {
	for d := rel; d != "." && d != ""; d = path.Dir(d) {
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(d), "go.mod")); err == nil {
			return true
		}
	}
	return false
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

// treeWriter returns a function writing src to rel below root, for the
// small bad trees that prove a rule reports what it must.
func treeWriter(t *testing.T, root string) func(rel, src string) {
	return func(rel, src string) {
		t.Helper()
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestImportRuleCatchesViolations builds a small tree with forbidden imports and
// checks the rule reports each one, so TestImportRule cannot pass vacuously.
func TestImportRuleCatchesViolations(t *testing.T) {
	root := t.TempDir()
	write := treeWriter(t, root)
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
	write("poster/p.go", imp("poster", module+"/qatools", module+"/chain"))                                    // a layer above; chain is below: fine
	write("specialists/inject/i.go", imp("inject", module+"/specialists/replay", module+"/fuzzing"))           // lower layers: fine
	write("specialists/redteam/r.go", imp("redteam", module+"/specialists"))                                   // its parent, a layer above
	write("specialists/fuzzstage/f.go", imp("fuzzstage", module+"/specialists/inject"))                        // a sibling check
	write("specialists/s.go", imp("specialists", module+"/specialists/inject", module+"/specialists/replay"))  // a parent over checks below it: fine
	write("console/c.go", imp("console", module+"/fixtures/testbed"))                                          // a fixture in production code
	write("fixtures/testbed/t.go", imp("testbed", module+"/cmd/fleetd", module+"/pipeline"))                   // a command; a fixture may use a pipeline

	got := violations(t, root)
	wantSubstrings := []string{
		"fleet imports " + module + "/chain: fleet may import only [trajectory clip]",
		"triage imports " + module + "/fixer: a package never imports a sibling in its own layer 4",
		"fixer imports " + module + "/fixer/github: a parent never imports",
		"qatools imports github.com/ethereum/go-ethereum/common: SDK",
		"sandbox imports " + module + "/fleet/fleettest",
		"cmd/fleetd imports github.com/modelcontextprotocol/go-sdk/mcp: SDK",
		"poster imports " + module + "/qatools: poster (layer 3, poster) never imports a layer above it",
		"specialists/redteam imports " + module + "/specialists: specialists/redteam (layer 4, specialists/redteam) never imports a layer above it: specialists is layer 5",
		"specialists/fuzzstage imports " + module + "/specialists/inject: a package never imports a sibling in its own layer 4",
		"console imports " + module + "/fixtures/testbed: fixtures/testbed is for tests and cmd only",
		"fixtures/testbed imports " + module + "/cmd/fleetd: nothing imports a command",
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

// submitters are the selectors that append to the feedback log:
// chain.FeedbackLog's Submit, SubmitFor and SubmitKeyed, and the generated
// binding's calldata packers a raw transaction would need.
var submitters = []string{"Submit", "SubmitFor", "SubmitKeyed", "PackSubmitFeedback", "PackSubmitFeedbackFor"}

// mayPost are the packages that may use them: the one road to the log, and
// the chain adapter below it (with its subpackages).
var mayPost = []string{"poster", "chain"}

// logPosts reads the non-test Go files under root and returns one line per
// use of a submitter, in a file that imports chain or its bindings, outside
// mayPost and the test-only packages. It reads syntax, not types: a
// selector of that name is enough to be looked at.
func logPosts(t *testing.T, root string) []string {
	t.Helper()
	var bad []string
	for _, p := range walkPackages(t, root) {
		if p.rel == "" || isTestOnly(p.rel) || slices.ContainsFunc(mayPost, func(m string) bool { return within(p.rel, m) }) {
			continue
		}
		files, _ := filepath.Glob(filepath.Join(p.dir, "*.go"))
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			fset := token.NewFileSet()
			af, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(af.Imports, func(s *ast.ImportSpec) bool {
				return s.Path.Value == `"`+module+`/chain"` || s.Path.Value == `"`+module+`/chain/contracts"`
			}) {
				continue
			}
			ast.Inspect(af, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok && slices.Contains(submitters, sel.Sel.Name) {
					pos := fset.Position(sel.Sel.Pos())
					rel, _ := filepath.Rel(root, pos.Filename)
					bad = append(bad, fmt.Sprintf("%s:%d: %s posts to the log around package poster", filepath.ToSlash(rel), pos.Line, sel.Sel.Name))
				}
				return true
			})
		}
	}
	return bad
}

// TestOneRoadToTheLog fails on a post to the feedback log that does not go
// through package poster (its outbox, dedupe, rate limit and keys): every
// consumer declares a one-method interface that a poster satisfies.
func TestOneRoadToTheLog(t *testing.T) {
	for _, v := range logPosts(t, ".") {
		t.Error(v)
	}
}

// TestOneRoadCatchesBypasses builds a small tree that posts around the
// poster and checks each bypass is reported, so TestOneRoadToTheLog cannot
// pass vacuously.
func TestOneRoadCatchesBypasses(t *testing.T) {
	root := t.TempDir()
	write := treeWriter(t, root)
	src := func(pkg, imp, body string) string {
		return fmt.Sprintf("package %s\n\nimport %s\n\nfunc f(l *chain.FeedbackLog) {\n\t%s\n}\n", pkg, imp, body)
	}
	chainImp := `"` + module + `/chain"`
	write("cmd/fleetd/mark.go", src("main", chainImp, "l.SubmitFor(ctx, id, sponsor, text)"))                                      // a door of its own
	write("triage/meta.go", src("triage", "ch "+chainImp, "post := l.SubmitKeyed\n\t_ = post"))                                    // a method value, a renamed import
	write("fixer/raw.go", src("fixer", `"`+module+`/chain/contracts"`, "_ = contracts.NewFeedbackLog().PackSubmitFeedback(text)")) // raw calldata
	write("poster/poster.go", src("poster", chainImp, "l.SubmitKeyed(ctx, id, sponsor, text, key, w)"))                            // the road itself: fine
	write("chain/feedback.go", src("chain", `"context"`, "l.Submit(ctx, k, text)"))                                                // the adapter: fine
	write("triage/meta_test.go", src("triage", chainImp, "l.Submit(ctx, k, text)"))                                                // a test: fine
	write("fixtures/testbed/seed.go", src("testbed", chainImp, "l.Submit(ctx, k, text)"))                                          // a fixture: fine
	write("console/form.go", src("console", `"net/http"`, "form.Submit()"))                                                        // another Submit, no chain: fine

	got := logPosts(t, root)
	want := []string{
		"cmd/fleetd/mark.go:6: SubmitFor posts to the log around package poster",
		"fixer/raw.go:6: PackSubmitFeedback posts to the log around package poster",
		"triage/meta.go:6: SubmitKeyed posts to the log around package poster",
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("bypasses reported:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestEveryPackageHasALayer fails on a package the layers table does not
// place, so a new package is put in the stack on purpose.
func TestEveryPackageHasALayer(t *testing.T) {
	for _, p := range unplaced(t, ".") {
		t.Errorf("%s is in no layer: add it to layers in layout_test.go and to docs/architecture.md", p)
	}
}

// unplaced lists the packages under root that no entry of layers places.
func unplaced(t *testing.T, root string) []string {
	var out []string
	for _, p := range walkPackages(t, root) {
		if p.rel == "" || isTestOnly(p.rel) || nestedModule(root, p.rel) {
			continue
		}
		if _, _, ok := layerOf(p.rel); !ok {
			out = append(out, p.rel)
		}
	}
	return out
}

// TestUnplacedPackageIsCaught builds a tree with a package the table does
// not place, beside placed, test-only and nested-module ones, so
// TestEveryPackageHasALayer cannot pass vacuously.
func TestUnplacedPackageIsCaught(t *testing.T) {
	root := t.TempDir()
	write := treeWriter(t, root)
	write("newthing/n.go", "// Package newthing is a fixture.\npackage newthing\n")
	write("triage/t.go", "// Package triage is a fixture.\npackage triage\n")
	write("fixtures/x/x.go", "// Package x is a fixture.\npackage x\n")
	write("deploy/other/go.mod", "module other\n")
	write("deploy/other/o.go", "// Package other is a fixture.\npackage other\n")
	if got := unplaced(t, root); !slices.Equal(got, []string{"newthing"}) {
		t.Errorf("unplaced = %v, want [newthing]", got)
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
