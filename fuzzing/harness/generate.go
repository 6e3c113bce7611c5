package harness

import (
	"context"
	"fmt"
	"go/types"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/qafleet/fleetd/clip"
)

// Dir is where the generated packages live in the module copy.
const Dir = "fleetdharness"

// File is the generated file's name in each harness package.
const File = "harness_test.go"

// Generate writes one harness package per target package into the module
// copy at dir, compiles each with the go command (goCmd, env), and drops
// the fuzz targets that do not compile (Entry.Dropped holds the
// compiler's message), regenerating without them. It returns the entries
// with Target and Package set, the dropped ones included. Existing native
// targets are returned as they are. Errors: nothing was left to fuzz, or
// the go command could not run.
func Generate(ctx context.Context, dir, goCmd string, env []string, entries []*Entry) ([]*Entry, error) {
	byPkg := map[string][]*Entry{}
	var order []string
	names := map[string]bool{}
	for _, e := range entries {
		if e.Kind == KindNative {
			continue
		}
		if byPkg[e.Pkg] == nil {
			order = append(order, e.Pkg)
		}
		byPkg[e.Pkg] = append(byPkg[e.Pkg], e)
	}
	for _, pkg := range order {
		es := byPkg[pkg]
		name := harnessPkgName(es[0], names)
		rel := path.Join(Dir, name)
		for _, e := range es {
			e.Package = "./" + rel
		}
		if err := compileLoop(ctx, dir, goCmd, env, rel, name, es); err != nil {
			return nil, err
		}
	}
	kept := 0
	for _, e := range entries {
		if e.Dropped == "" {
			kept++
		}
	}
	if kept == 0 {
		return entries, errNoEntries
	}
	return entries, nil
}

// harnessPkgName is a package name for the harness of e's package, unique
// in names.
func harnessPkgName(e *Entry, names map[string]bool) string {
	base := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		if r >= 'A' && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return -1
	}, path.Base(e.Pkg))
	if base == "" || base[0] >= '0' && base[0] <= '9' {
		base = "p" + base
	}
	name := base
	for i := 2; names[name]; i++ {
		name = base + strconv.Itoa(i)
	}
	names[name] = true
	return name
}

var compileErr = regexp.MustCompile(`(?m)^\S*` + regexp.QuoteMeta(File) + `:(\d+):(\d+): (.*)$`)

// compileLoop writes the harness file and compiles it, dropping the
// targets whose lines the compiler names, until it compiles or nothing is
// left (at most five rounds; then every remaining one is dropped).
func compileLoop(ctx context.Context, dir, goCmd string, env []string, rel, name string, es []*Entry) error {
	if err := os.MkdirAll(filepath.Join(dir, rel), 0o755); err != nil {
		return err
	}
	for round := 0; ; round++ {
		var live []*Entry
		for _, e := range es {
			if e.Dropped == "" {
				live = append(live, e)
			}
		}
		if len(live) == 0 {
			return os.RemoveAll(filepath.Join(dir, rel))
		}
		src, spans := render(name, live)
		if err := os.WriteFile(filepath.Join(dir, rel, File), []byte(src), 0o644); err != nil {
			return err
		}
		out, err := compile(ctx, dir, goCmd, env, "./"+rel)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		msgs := compileErr.FindAllStringSubmatch(out, -1)
		dropped := 0
		for _, m := range msgs {
			line, _ := strconv.Atoi(m[1])
			for i, sp := range spans {
				if line >= sp[0] && line <= sp[1] && live[i].Dropped == "" {
					live[i].Dropped = "does not compile: " + clip.Text(m[3], 300)
					dropped++
				}
			}
		}
		if dropped == 0 || round == 4 {
			why := "does not compile: " + clip.Text(strings.TrimSpace(out), 400)
			for _, e := range live {
				if e.Dropped == "" {
					e.Dropped = why
				}
			}
		}
	}
}

// compile builds a package's tests without running them.
func compile(ctx context.Context, dir, goCmd string, env []string, pkg string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goCmd, "test", "-count=1", "-run=^$", pkg)
	cmd.Dir, cmd.Env = dir, env
	b, err := cmd.CombinedOutput()
	return string(b), err
}

// gen renders Go code for one file: its imports by alias.
type gen struct {
	self    string            // the file's own package path (none)
	imports map[string]string // path -> alias
	aliases map[string]bool
}

func newGen() *gen {
	g := &gen{imports: map[string]string{}, aliases: map[string]bool{}}
	for _, p := range []string{"testing", "encoding/binary", "math", "bytes"} {
		g.imports[p] = path.Base(p)
		g.aliases[path.Base(p)] = true
	}
	return g
}

// pkg returns the alias of an import path, adding it.
func (g *gen) pkg(p *types.Package) string {
	if a, ok := g.imports[p.Path()]; ok {
		return a
	}
	a := "t" + strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, p.Name())
	for i := 2; g.aliases[a]; i++ {
		a = "t" + p.Name() + strconv.Itoa(i)
	}
	g.imports[p.Path()], g.aliases[a] = a, true
	return a
}

func (g *gen) typ(t types.Type) string { return types.TypeString(t, g.pkg) }

// body is the Go statements that build an entry's arguments from the fuzz
// arguments a0, a1, ... and call it; args are the fuzz argument types.
type body struct {
	stmts []string
	args  []string
	nv    int
}

func (b *body) arg(leaf string) string {
	b.args = append(b.args, leaf)
	return "a" + strconv.Itoa(len(b.args)-1)
}

func (b *body) tmp() string { b.nv++; return "v" + strconv.Itoa(b.nv-1) }

// expr returns an expression for v, adding statements and fuzz arguments.
func (g *gen) expr(b *body, v value) string {
	switch v.kind {
	case "leaf":
		a := b.arg(v.leaf)
		if types.TypeString(v.typ, nil) == v.leaf || v.leaf == "[]byte" && isByteSlice(v.typ) {
			return a
		}
		return g.typ(v.typ) + "(" + a + ")"
	case "reader":
		return "bytes.NewReader(" + b.arg("[]byte") + ")"
	case "slice":
		a := b.arg("[]byte")
		t := b.tmp()
		elem := v.typ.Underlying().(*types.Slice).Elem()
		b.stmts = append(b.stmts,
			fmt.Sprintf("var %s %s", t, g.typ(v.typ)),
			fmt.Sprintf("for _, x := range fleetdElems(%s, %d) {", a, elemSize(v.leaf)),
			fmt.Sprintf("\t%s = append(%s, %s)", t, t, g.conv(elem, v.leaf, "x")),
			"}")
		return t
	case "struct":
		var fs []string
		for _, f := range v.fields {
			fs = append(fs, f.name+": "+g.expr(b, f.v))
		}
		lit := g.typ(v.typ) + "{" + strings.Join(fs, ", ") + "}"
		if v.ptr {
			return "&" + lit
		}
		return lit
	case "ctor":
		var args []string
		for _, a := range v.args {
			args = append(args, g.expr(b, a))
		}
		t := b.tmp()
		call := g.pkg(v.ctor.Pkg()) + "." + v.ctor.Name() + "(" + strings.Join(args, ", ") + ")"
		cond := ""
		if v.err {
			b.stmts = append(b.stmts, t+", err := "+call)
			cond = "err != nil"
		} else {
			b.stmts = append(b.stmts, t+" := "+call)
		}
		if v.nilchk {
			cond = strings.TrimPrefix(cond+" || "+t+" == nil", " || ")
		}
		if cond != "" {
			b.stmts = append(b.stmts, "if "+cond+" {", "\treturn // the constructor refused the input", "}")
		}
		return t
	case "dest":
		return "new(interface{})"
	case "zero":
		t := b.tmp()
		b.stmts = append(b.stmts, "var "+t+" "+g.typ(v.typ))
		return t
	}
	panic("harness: unknown value kind " + v.kind)
}

func isByteSlice(t types.Type) bool {
	s, ok := t.(*types.Slice)
	if !ok {
		return false
	}
	b, ok := s.Elem().(*types.Basic)
	return ok && b.Kind() == types.Uint8
}

// conv converts a leaf's bytes expression (x, []byte) to type t.
func (g *gen) conv(t types.Type, leaf, x string) string {
	var e string
	switch leaf {
	case "string":
		e = "string(" + x + ")"
	case "[]byte":
		e = x
	case "bool":
		e = "fleetdU64(" + x + ")&1 == 1"
	case "float64":
		e = "math.Float64frombits(fleetdU64(" + x + "))"
	case "float32":
		e = "math.Float32frombits(uint32(fleetdU64(" + x + ")))"
	default:
		e = leaf + "(fleetdU64(" + x + "))"
	}
	if types.TypeString(t, nil) == leaf {
		return e
	}
	return g.typ(t) + "(" + e + ")"
}

// elemSize is the bytes one element of a leaf kind takes (0: a length prefix).
func elemSize(leaf string) int {
	switch leaf {
	case "string", "[]byte":
		return 0
	case "bool", "int8", "uint8":
		return 1
	case "int16", "uint16":
		return 2
	case "int32", "uint32", "float32":
		return 4
	}
	return 8
}

// call renders an entry's statements and fuzz arguments.
func (g *gen) call(e *Entry) body {
	var b body
	recv := ""
	if e.recv != nil {
		recv = g.expr(&b, *e.recv)
	}
	for _, c := range e.setup {
		var args []string
		for _, p := range c.params {
			args = append(args, g.expr(&b, p))
		}
		call := recv + "." + c.fn.Name() + "(" + strings.Join(args, ", ") + ")"
		if c.err {
			b.stmts = append(b.stmts, "if err := "+call+"; err != nil {", "\treturn // the configuration refused the input", "}")
		} else {
			b.stmts = append(b.stmts, call)
		}
	}
	var args []string
	for _, p := range e.params {
		args = append(args, g.expr(&b, p))
	}
	if e.varia && len(args) > 0 {
		args[len(args)-1] += "..."
	}
	fn := g.pkg(e.fn.Pkg()) + "." + e.fn.Name()
	if recv != "" {
		fn = recv + "." + e.fn.Name()
	}
	b.stmts = append(b.stmts, fn+"("+strings.Join(args, ", ")+")")
	return b
}

// render writes the harness file for entries of one package; spans are
// each target's first and last line.
func render(name string, es []*Entry) (string, [][2]int) {
	g := newGen()
	var funcs []string
	used := map[string]bool{}
	for _, e := range es {
		b := g.call(e)
		e.Args, e.Body = b.args, b.stmts
		e.Shape = strings.Join(b.args, ",")
		if e.Target == "" || used[e.Target] {
			e.Target = targetName(e, used)
		}
		used[e.Target] = true
		var s strings.Builder
		fmt.Fprintf(&s, "// %s drives %s.%s (%s, score %.1f): %s.\n", e.Target, e.Pkg, e.Name, e.Kind, e.Score, strings.Join(e.Why, "; "))
		fmt.Fprintf(&s, "func %s(f *testing.F) {\n", e.Target)
		for _, seed := range seedLines(e, b.args) {
			fmt.Fprintf(&s, "\tf.Add(%s)\n", seed)
		}
		var params []string
		for i, a := range b.args {
			params = append(params, fmt.Sprintf("a%d %s", i, a))
		}
		fmt.Fprintf(&s, "\tf.Fuzz(func(t *testing.T, %s) {\n", strings.Join(params, ", "))
		for _, st := range b.stmts {
			fmt.Fprintf(&s, "\t\t%s\n", st)
		}
		s.WriteString("\t})\n}\n")
		funcs = append(funcs, s.String())
	}
	for _, e := range es {
		e.Imports = map[string]string{}
		for p, a := range g.imports {
			e.Imports[p] = a // the file's: a superset of what the body needs
		}
	}
	head := header(name, g.imports)
	var out strings.Builder
	out.WriteString(head)
	line := strings.Count(head, "\n") + 1
	spans := make([][2]int, len(funcs))
	for i, f := range funcs {
		out.WriteString("\n")
		line++
		spans[i] = [2]int{line, line + strings.Count(f, "\n") - 1}
		out.WriteString(f)
		line += strings.Count(f, "\n")
	}
	return out.String(), spans
}

// header is the file's package clause, imports and decoding helpers.
func header(name string, imports map[string]string) string {
	var s strings.Builder
	s.WriteString("// Code generated by fleetd (fuzzing/harness); DO NOT EDIT.\n\n")
	s.WriteString("package " + name + "\n\nimport (\n")
	var paths []string
	for p := range imports {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		if a := imports[p]; a == path.Base(p) {
			fmt.Fprintf(&s, "\t%q\n", p)
		} else {
			fmt.Fprintf(&s, "\t%s %q\n", a, p)
		}
	}
	s.WriteString(")\n\n")
	s.WriteString(helpers)
	return s.String()
}

// helpers decode slices and struct fields (see the package doc's layout).
const helpers = `var (
	_ = binary.LittleEndian
	_ = math.Float64frombits
	_ = bytes.NewReader
)

// fleetdU64 reads up to 8 little-endian bytes.
func fleetdU64(b []byte) uint64 {
	var x [8]byte
	copy(x[:], b)
	return binary.LittleEndian.Uint64(x[:])
}

// fleetdElems splits a slice argument into at most 16 elements: size bytes
// each, or (size 0) a 4-byte little-endian length and that many bytes, the
// last element taking the rest.
func fleetdElems(b []byte, size int) [][]byte {
	var out [][]byte
	for len(b) > 0 && len(out) < 16 {
		n := size
		if size == 0 {
			if len(b) < 4 {
				out = append(out, b)
				break
			}
			n = int(binary.LittleEndian.Uint32(b))
			b = b[4:]
		}
		if n > len(b) || n < 0 {
			n = len(b)
		}
		out = append(out, b[:n])
		b = b[n:]
	}
	return out
}
`

// targetName is a fuzz target's name for e, unique in used.
func targetName(e *Entry, used map[string]bool) string {
	n := strings.NewReplacer("(", "", ")", "", "*", "", ".", "_").Replace(e.Name)
	if len(e.Chain) > 0 {
		n += "_Configured"
	}
	base := "Fuzz" + strings.ToUpper(n[:1]) + n[1:]
	if strings.HasPrefix(n, "Fuzz") {
		base = "FuzzGoFuzz" + strings.TrimPrefix(n, "Fuzz")
	}
	name := base
	for i := 2; used[name]; i++ {
		name = base + strconv.Itoa(i)
	}
	return name
}

// seedLines are the f.Add arguments: the test calls' constants first,
// then the tests' string literals and testdata files in the first text
// argument, at most maxSeeds.
func seedLines(e *Entry, args []string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(vals []seedVal) {
		if len(out) >= maxSeeds {
			return
		}
		var parts []string
		for i, a := range args {
			var v seedVal
			if i < len(vals) {
				v = vals[i]
			}
			parts = append(parts, seedLit(a, v))
		}
		line := strings.Join(parts, ", ")
		if !seen[line] {
			seen[line] = true
			out = append(out, line)
		}
	}
	// A test call's constants map onto the fuzz arguments only when each
	// parameter is one leaf.
	leafOnly := len(e.params) == len(args) && e.recv == nil || e.recv != nil && e.recv.kind == "zero" && len(e.params) == len(args)
	for _, p := range e.params {
		leafOnly = leafOnly && (p.kind == "leaf" || p.kind == "reader")
	}
	if leafOnly {
		for _, s := range e.seeds {
			add(s)
		}
	}
	text := -1
	for i, a := range args {
		if a == "string" || a == "[]byte" {
			text = i
			break
		}
	}
	if text >= 0 {
		for _, s := range e.extra {
			vals := make([]seedVal, len(args))
			vals[text] = seedVal{bytes: s, set: true}
			add(vals)
		}
	}
	return out
}

// seedLit renders one seed value as a typed Go expression f.Add accepts.
func seedLit(typ string, v seedVal) string {
	switch typ {
	case "string":
		return strconv.Quote(string(v.bytes))
	case "[]byte":
		return "[]byte(" + strconv.Quote(string(v.bytes)) + ")"
	case "bool":
		if v.lit == "true" {
			return "true"
		}
		return "false"
	}
	if v.lit != "" && v.bytes == nil && fits(typ, v.lit) {
		return typ + "(" + v.lit + ")"
	}
	return typ + "(0)"
}

// fits reports whether a constant's exact text is a valid value of a
// numeric fuzz argument type (a seed that does not fit would not compile).
func fits(typ, lit string) bool {
	bits := 64
	if n := strings.TrimLeft(typ, "intufloa"); n != "" {
		bits, _ = strconv.Atoi(n)
	}
	switch {
	case strings.HasPrefix(typ, "float"):
		_, err := strconv.ParseFloat(lit, bits)
		return err == nil && !strings.Contains(lit, "/")
	case strings.HasPrefix(typ, "uint"):
		_, err := strconv.ParseUint(lit, 10, bits)
		return err == nil
	case strings.HasPrefix(typ, "int"):
		_, err := strconv.ParseInt(lit, 10, bits)
		return err == nil
	}
	return false
}
