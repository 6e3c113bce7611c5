// TestGlossary keeps docs/architecture.md's glossary honest: one row per
// word, and every name a row gives for the word exists in the code.
package fleetd_test

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// glossaryRow is one row of the glossary table.
type glossaryRow struct {
	line       int
	term, what string
	names      []string // the backticked names of the last column
}

// readGlossary returns the rows of the table under "## Glossary" in doc.
func readGlossary(doc string) ([]glossaryRow, error) {
	lines := strings.Split(doc, "\n")
	start := slices.Index(lines, "## Glossary")
	if start < 0 {
		return nil, errors.New(`no "## Glossary" section`)
	}
	var rows []glossaryRow
	for i := start + 1; i < len(lines) && !strings.HasPrefix(lines[i], "## "); i++ {
		l := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(l, "|") || strings.HasPrefix(l, "| ---") || strings.HasPrefix(l, "| term ") {
			continue
		}
		cells := strings.Split(strings.Trim(l, "|"), "|")
		if len(cells) != 3 {
			return nil, fmt.Errorf("line %d: %d cells, want 3 (term, what it is, in the code)", i+1, len(cells))
		}
		r := glossaryRow{line: i + 1, term: strings.TrimSpace(cells[0]), what: strings.TrimSpace(cells[1])}
		for _, m := range backticked.FindAllStringSubmatch(cells[2], -1) {
			r.names = append(r.names, m[1])
		}
		rows = append(rows, r)
	}
	return rows, nil
}

var backticked = regexp.MustCompile("`([^`]+)`")

// codeIndex answers whether a name exists in the tree at root.
type codeIndex struct {
	root     string
	decls    map[string]map[string]bool // package dir -> declared names (Name, Type.Member)
	commands map[string]bool            // first words of the cobra commands' Use
	literals string                     // every non-test Go file, for "qa_*" literals
	keys     map[string]bool            // dotted keys of the example config, and each last element
}

var useRE = regexp.MustCompile(`Use:\s*"([a-z][a-z-]*)`)

func newCodeIndex(root string) (*codeIndex, error) {
	ix := &codeIndex{root: root, decls: map[string]map[string]bool{}, commands: map[string]bool{}, keys: map[string]bool{}}
	var lit strings.Builder
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && p != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		lit.Write(b)
		for _, m := range useRE.FindAllStringSubmatch(string(b), -1) {
			ix.commands[m[1]] = true
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, b, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(p))
		rel = filepath.ToSlash(rel)
		if ix.decls[rel] == nil {
			ix.decls[rel] = map[string]bool{}
		}
		addDecls(f, ix.decls[rel])
		return nil
	})
	if err != nil {
		return nil, err
	}
	ix.literals = lit.String()
	b, err := os.ReadFile(filepath.Join(root, "configs", "fleetd.example.yaml"))
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	var walk func(n *yaml.Node, prefix string)
	walk = func(n *yaml.Node, prefix string) {
		if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
			walk(n.Content[0], prefix)
			return
		}
		if n.Kind != yaml.MappingNode {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			if prefix != "" {
				k = prefix + "." + k
			}
			ix.keys[k] = true
			ix.keys[n.Content[i].Value] = true
			walk(n.Content[i+1], k)
		}
	}
	walk(&doc, "")
	return ix, nil
}

// addDecls adds a file's top-level names, its methods as Type.Method and
// its struct types' fields as Type.Field.
func addDecls(f *ast.File, into map[string]bool) {
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil || len(d.Recv.List) == 0 {
				into[d.Name.Name] = true
				continue
			}
			t := d.Recv.List[0].Type
			for {
				switch x := t.(type) {
				case *ast.StarExpr:
					t = x.X
					continue
				case *ast.IndexExpr:
					t = x.X
					continue
				case *ast.IndexListExpr:
					t = x.X
					continue
				}
				break
			}
			if id, ok := t.(*ast.Ident); ok {
				into[id.Name+"."+d.Name.Name] = true
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					into[s.Name.Name] = true
					if st, ok := s.Type.(*ast.StructType); ok {
						for _, fl := range st.Fields.List {
							for _, n := range fl.Names {
								into[s.Name.Name+"."+n.Name] = true
							}
						}
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						into[n.Name] = true
					}
				}
			}
		}
	}
}

// check says why name does not exist in the code, or nil.
func (ix *codeIndex) check(name string) error {
	switch {
	case strings.HasPrefix(name, "fleetd "):
		w, _, _ := strings.Cut(strings.TrimPrefix(name, "fleetd "), " ")
		if !ix.commands[w] {
			return fmt.Errorf("no command %q (no cobra Use starts with it)", w)
		}
	case strings.HasPrefix(name, "qa_"):
		if !strings.Contains(ix.literals, `"`+name+`"`) {
			return fmt.Errorf("no tool %q (no Go literal names it)", name)
		}
	case strings.HasSuffix(name, ":"):
		if !ix.keys[strings.TrimSuffix(name, ":")] {
			return fmt.Errorf("no config key %q in configs/fleetd.example.yaml", strings.TrimSuffix(name, ":"))
		}
	default:
		dir, ident := name, ""
		if i := strings.LastIndex(name, "/"); strings.Contains(name[i+1:], ".") {
			j := i + 1 + strings.Index(name[i+1:], ".")
			dir, ident = name[:j], name[j+1:]
		}
		decls, ok := ix.decls[dir]
		if !ok {
			return fmt.Errorf("no package directory %s", dir)
		}
		if ident != "" && !decls[ident] {
			return fmt.Errorf("package %s declares no %s", dir, ident)
		}
	}
	return nil
}

func TestGlossary(t *testing.T) {
	doc, err := os.ReadFile("docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := readGlossary(string(doc))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) < 30 {
		t.Fatalf("the glossary has %d rows; a newcomer meets more words than that", len(rows))
	}
	ix, err := newCodeIndex(".")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, r := range rows {
		if prev, ok := seen[strings.ToLower(r.term)]; ok {
			t.Errorf("docs/architecture.md:%d: %q is in the glossary twice (line %d too): one word, one thing", r.line, r.term, prev)
		}
		seen[strings.ToLower(r.term)] = r.line
		if r.what == "" {
			t.Errorf("docs/architecture.md:%d: %q says nothing", r.line, r.term)
		}
		if len(r.names) == 0 {
			t.Errorf("docs/architecture.md:%d: %q names nothing in the code", r.line, r.term)
		}
		for _, n := range r.names {
			if err := ix.check(n); err != nil {
				t.Errorf("docs/architecture.md:%d: %q: `%s`: %v", r.line, r.term, n, err)
			}
		}
	}
	for _, w := range []string{"dial", "rung", "face", "surface", "place", "fold", "crash state", "report", "probe", "poster", "tally", "play", "finding", "run"} {
		if _, ok := seen[w]; !ok {
			t.Errorf("the glossary does not define %q", w)
		}
	}
}

// TestGlossaryCheckerFails: the checker refuses what does not exist, so
// TestGlossary cannot pass by accepting everything.
func TestGlossaryCheckerFails(t *testing.T) {
	ix, err := newCodeIndex(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, good := range []string{"fleet.Dial", "fleet.Control.SetDial", "fleet.Finding.Repro", "specialists/inject", "fleetd doctor", "qa_report", "poster:", "chain.rpc:", "trusted_senders:"} {
		if err := ix.check(good); err != nil {
			t.Errorf("%s: %v", good, err)
		}
	}
	for _, bad := range []string{"fleet.NoSuchThing", "fleet.Dial.NoSuch", "specialists/nowhere", "specialists/inject.NoSuch", "fleetd nosuch", "qa_nosuch", "report:", "chain.nosuch:"} {
		if err := ix.check(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	rows, err := readGlossary("## Glossary\n\n| term | what it is | in the code |\n| --- | --- | --- |\n| a | b | `c` `d` |\n| x | y |\n")
	if err == nil || !strings.Contains(err.Error(), "line 6: 2 cells") {
		t.Errorf("a two-cell row: %v %+v", err, rows)
	}
}
