package fuzzing

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Source literal limits: what AFL++'s autodictionary and a -dict file give
// C targets, from Go source.
const (
	maxLiteralFiles  = 2000
	maxLiteralFile   = 1 << 20
	maxLiteralTokens = 512
)

// GoLiterals returns the string, character and byte-slice literals of the
// Go files directly in dirs (_test.go files included; import paths and
// struct tags left out): the keywords, magic values and delimiters a
// parser compares its input with. Literals of dirs[0] (the fuzz target's
// package) come first, then the others', each group most frequent first;
// at most max (default 512), each 1 to maxDictToken bytes. Files that do
// not parse, files over 1 MiB and files past the 2000th are skipped.
func GoLiterals(dirs []string, max int) []string {
	if max <= 0 {
		max = maxLiteralTokens
	}
	seen := map[string]bool{}
	var out []string
	files := 0
	for _, dir := range dirs {
		count := map[string]int{}
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if files >= maxLiteralFiles {
				break
			}
			if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".go") || strings.HasPrefix(e.Name(), ".") {
				continue
			}
			if info, err := e.Info(); err != nil || info.Size() > maxLiteralFile {
				continue
			}
			files++
			literalsOf(filepath.Join(dir, e.Name()), count)
		}
		for _, t := range top(count) {
			if len(out) >= max {
				return out
			}
			if !seen[t] {
				seen[t] = true
				out = append(out, t)
			}
		}
	}
	return out
}

// RepoLiterals is GoLiterals over a repository's directories that hold Go
// files (vendor, testdata, hidden and node_modules directories skipped; at
// most 256 directories, shallowest first): the dictionary of a compiler
// whose source is target.repo.
func RepoLiterals(root string, max int) []string {
	var dirs []string
	level := []string{root}
	for len(level) > 0 && len(dirs) < 256 {
		var next []string
		for _, d := range level {
			entries, err := os.ReadDir(d)
			if err != nil {
				continue
			}
			hasGo := false
			for _, e := range entries {
				name := e.Name()
				switch {
				case e.IsDir():
					if !strings.HasPrefix(name, ".") && !strings.HasPrefix(name, "_") && name != "vendor" && name != "testdata" && name != "node_modules" {
						next = append(next, filepath.Join(d, name))
					}
				case strings.HasSuffix(name, ".go"):
					hasGo = true
				}
			}
			if hasGo && len(dirs) < 256 {
				dirs = append(dirs, d)
			}
		}
		level = next
	}
	return GoLiterals(dirs, max)
}

// literalsOf counts the literals of one file.
func literalsOf(path string, count map[string]int) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		return
	}
	add := func(s string) {
		if len(s) > 0 && len(s) <= maxDictToken {
			count[s]++
		}
	}
	tags := map[*ast.BasicLit]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.ImportSpec:
			return false
		case *ast.Field:
			if x.Tag != nil {
				tags[x.Tag] = true
			}
		case *ast.BasicLit:
			if tags[x] {
				return false
			}
			switch x.Kind {
			case token.STRING:
				if s, err := strconv.Unquote(x.Value); err == nil {
					add(s)
				}
			case token.CHAR:
				if s, err := strconv.Unquote(x.Value); err == nil {
					add(s)
				}
			}
		case *ast.CompositeLit:
			if b, ok := byteSliceLit(x); ok {
				add(string(b))
				return false
			}
		}
		return true
	})
}

// byteSliceLit reads []byte{...} (or [N]byte{...}) of integer and
// character literals.
func byteSliceLit(c *ast.CompositeLit) ([]byte, bool) {
	at, ok := c.Type.(*ast.ArrayType)
	if !ok {
		return nil, false
	}
	if id, ok := at.Elt.(*ast.Ident); !ok || id.Name != "byte" && id.Name != "uint8" {
		return nil, false
	}
	if len(c.Elts) == 0 || len(c.Elts) > maxDictToken {
		return nil, false
	}
	var out []byte
	for _, e := range c.Elts {
		bl, ok := e.(*ast.BasicLit)
		if !ok {
			return nil, false
		}
		var v uint64
		var err error
		switch bl.Kind {
		case token.INT:
			v, err = strconv.ParseUint(bl.Value, 0, 8)
		case token.CHAR:
			var r rune
			r, _, _, err = strconv.UnquoteChar(strings.Trim(bl.Value, "'"), '\'')
			v = uint64(r)
		default:
			return nil, false
		}
		if err != nil || v > 255 {
			return nil, false
		}
		out = append(out, byte(v))
	}
	return out, true
}

// repoDictionaries reads the dictionaries a repository ships for a fuzz
// target, as OSS-Fuzz projects do: <pkg>/<Func>.dict,
// <pkg>/testdata/<Func>.dict and <pkg>/testdata/fuzz/<Func>.dict. Lines
// that are not valid dictionary syntax are skipped and named in notes.
func repoDictionaries(g GoTarget) (tokens []string, notes []string) {
	dir := g.pkgDir()
	for _, p := range []string{filepath.Join(dir, g.Func+".dict"), filepath.Join(dir, "testdata", g.Func+".dict"), filepath.Join(dir, "testdata", "fuzz", g.Func+".dict")} {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		if len(b) > 4<<20 {
			notes = append(notes, fmt.Sprintf("dictionary %s is over 4 MiB: not used", rel(g.Dir, p)))
			continue
		}
		toks, bad := ParseDict(b)
		tokens = append(tokens, toks...)
		for i, e := range bad {
			if i == 5 {
				notes = append(notes, fmt.Sprintf("dictionary %s: %d more invalid lines skipped", rel(g.Dir, p), len(bad)-5))
				break
			}
			notes = append(notes, fmt.Sprintf("dictionary %s line %d skipped: %s", rel(g.Dir, p), e.Line, e.Err))
		}
	}
	return tokens, notes
}

func rel(base, p string) string {
	if r, err := filepath.Rel(base, p); err == nil {
		return filepath.ToSlash(r)
	}
	return p
}
