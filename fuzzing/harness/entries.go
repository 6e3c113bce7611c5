package harness

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"unicode"

	"golang.org/x/tools/go/packages"

	"github.com/qafleet/fleetd/fuzzing"
)

// Entry kinds.
const (
	KindFunc   = "func"   // a package-level function
	KindMethod = "method" // a method on a receiver a constructor made (or its zero value)
	KindGoFuzz = "gofuzz" // a go-fuzz style Fuzz(data []byte) int
	KindNative = "native" // an existing FuzzXxx(*testing.F): the engines run it as it is
)

// Entry is one exported function or method an engine can drive.
type Entry struct {
	ID       string `json:"id"`                  // stable across runs: "<import path>.<Recv.>Name"
	Kind     string `json:"kind"`                // KindFunc, KindMethod, KindGoFuzz, KindNative
	Pkg      string `json:"pkg"`                 // the target package's import path
	Dir      string `json:"dir"`                 // its directory, slash-separated, relative to the module root ("." for the root)
	Name     string `json:"name"`                // "Get", "(*Parser).Parse"
	Shape    string `json:"shape"`               // the fuzz arguments, e.g. "string,string"
	ZeroRecv bool   `json:"zero_recv,omitempty"` // the receiver is a zero value: the type has no constructor
	// ZeroArg: an argument (or the receiver) is a struct literal that
	// leaves nil fields its constructor would set (value.partial): a nil
	// dereference in it is the harness's misuse, as with ZeroRecv.
	ZeroArg bool              `json:"zero_arg,omitempty"`
	Score   float64           `json:"score"`
	Why     []string          `json:"why"`
	Reach   int               `json:"reach"`         // the module's functions it reaches (static, syntactic)
	Tested  int               `json:"tested"`        // calls of it in the package's tests
	Doc     string            `json:"doc,omitempty"` // its doc comment (the misuse check reads promised panics)
	Target  string            `json:"target"`        // the fuzz target's name (set by Generate; an existing one's own name)
	Package string            `json:"package"`       // the fuzz target's package directory, "./fleetdharness/x" (set by Generate)
	Dropped string            `json:"dropped,omitempty"`
	PkgName string            `json:"pkg_name"`          // the target package's name
	Args    []string          `json:"args,omitempty"`    // fuzz argument types, in order (set by Generate)
	Body    []string          `json:"body,omitempty"`    // the fuzz function's statements over a0, a1, ... (set by Generate)
	Imports map[string]string `json:"imports,omitempty"` // import path -> alias the body uses (set by Generate)
	// Chain names the configuring methods called on the receiver, in
	// order, between its constructor and the entry (construct, configure,
	// parse); empty for a plain call.
	Chain []string `json:"chain,omitempty"`
	// Source is a KindModel entry's harness file as the model wrote it
	// (the reproducer of its crashes is made from it).
	Source string `json:"source,omitempty"`

	fn     *types.Func
	recv   *value // the receiver's value (methods)
	params []value
	varia  bool
	seeds  [][]seedVal // test calls' constant arguments, one per parameter
	extra  [][]byte    // the package tests' string literals and testdata files
	setup  []setupCall // Chain's calls
}

// takesInput reports whether building v reads a fuzz argument: a
// destination (new(interface{})) or a zero value reads none.
func takesInput(v value) bool {
	switch v.kind {
	case "leaf", "reader", "slice":
		return true
	case "struct":
		return slices.ContainsFunc(v.fields, func(f field) bool { return takesInput(f.v) })
	case "ctor":
		return slices.ContainsFunc(v.args, takesInput)
	}
	return false
}

// setupCall is one configuring method call of a chain: its leaf
// arguments, and whether it returns an error (then a refusal ends the
// input, as a constructor's does).
type setupCall struct {
	fn     *types.Func
	params []value
	err    bool
}

// configWords start the names of methods that configure a receiver.
var configWords = []string{"Set", "Enable", "Disable", "Use", "Allow"}

// maxChain bounds the configuring calls of a chain.
const maxChain = 2

// configurers lists named's configuring methods, by name: exported,
// pointer receiver (they change the value), a configuring name, one or
// two leaf parameters, and no result or an error alone. At most maxChain.
func (d *discovery) configurers(named *types.Named) []setupCall {
	var out []setupCall
	for i := 0; i < named.NumMethods() && len(out) < maxChain; i++ {
		m := named.Method(i)
		sig := m.Type().(*types.Signature)
		if !m.Exported() || sig.Variadic() || sig.Params().Len() == 0 || sig.Params().Len() > 2 || sig.Results().Len() > 1 {
			continue
		}
		if _, ptr := sig.Recv().Type().(*types.Pointer); !ptr || !slices.ContainsFunc(configWords, func(w string) bool { return strings.HasPrefix(m.Name(), w) }) {
			continue
		}
		c := setupCall{fn: m}
		if sig.Results().Len() == 1 {
			if !types.Identical(sig.Results().At(0).Type(), types.Universe.Lookup("error").Type()) {
				continue
			}
			c.err = true
		}
		for j := 0; j < sig.Params().Len(); j++ {
			l, ok := leafOf(sig.Params().At(j).Type())
			if !ok {
				c.params = nil
				break
			}
			c.params = append(c.params, value{kind: "leaf", typ: sig.Params().At(j).Type(), leaf: l})
		}
		if len(c.params) == sig.Params().Len() {
			out = append(out, c)
		}
	}
	return out
}

// parses reports whether name has one of parseWords.
func parses(name string) bool {
	return slices.ContainsFunc(parseWords, func(w struct {
		word string
		w    float64
	}) bool {
		return strings.Contains(name, w.word)
	})
}

// value is how one argument is built from fuzz arguments.
type value struct {
	kind   string // "leaf", "reader", "slice", "struct", "ctor", "zero"
	typ    types.Type
	leaf   string // the fuzz argument's type (leaf, slice elements)
	ptr    bool   // struct: its address is passed
	fields []field
	ctor   *types.Func
	args   []value
	err    bool // ctor returns an error last
	nilchk bool // ctor's result can be nil
	// partial: a struct literal that leaves a pointer, map, interface,
	// func or channel field nil (unexported, or not a leaf the harness
	// fills): the type's constructor, which would set it, was skipped.
	partial bool
}

type field struct {
	name string
	v    value
}

// seedVal is one seed value of a fuzz argument: the bytes of a string or
// []byte, else a Go literal.
type seedVal struct {
	bytes []byte
	lit   string
	set   bool
}

// leafKinds maps a basic kind to the fuzz argument type it is fuzzed as.
var leafKinds = map[types.BasicKind]string{
	types.String: "string", types.Bool: "bool",
	types.Int: "int", types.Int8: "int8", types.Int16: "int16", types.Int32: "int32", types.Int64: "int64",
	types.Uint: "uint", types.Uint8: "uint8", types.Uint16: "uint16", types.Uint32: "uint32", types.Uint64: "uint64",
	types.Float32: "float32", types.Float64: "float64",
}

// MaxEntries is how many entries Discover returns at most, best first.
const MaxEntries = 40

// Options configure Discover.
type Options struct {
	Env  []string          // the go command's environment (fuzzing.GoEnv); nil: the process's
	Skip map[string]string // entry IDs to leave out (Memory's dropped entries) and why
}

// Discover loads the module rooted at dir (a scratch copy: go-fuzz files
// are enabled in it) and returns its drivable entry points, best first,
// at most MaxEntries. Errors: the module does not load (the go command's
// message), or it has no package with an entry point.
func Discover(ctx context.Context, dir string, o Options) ([]*Entry, error) {
	enableGoFuzz(dir)
	cfg := &packages.Config{
		Context: ctx, Dir: dir, Env: o.Env, Tests: true,
		Mode: packages.NeedName | packages.NeedFiles | packages.NeedSyntax | packages.NeedTypes |
			packages.NeedTypesInfo | packages.NeedModule | packages.NeedImports,
	}
	pkgs, err := packages.Load(cfg, "./...")
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", dir, err)
	}
	var mod string
	var loadErrs []string
	for _, p := range pkgs {
		if p.Module != nil && p.Module.Main && mod == "" {
			mod = p.Module.Path
		}
		for _, e := range p.Errors {
			loadErrs = append(loadErrs, e.Error())
		}
	}
	if mod == "" {
		if len(loadErrs) > 0 {
			return nil, fmt.Errorf("load %s: %s", dir, strings.Join(first(loadErrs, 3), "; "))
		}
		return nil, fmt.Errorf("load %s: no Go module", dir)
	}
	d := &discovery{mod: mod, dir: dir, callees: map[string][]string{}, tested: map[string]int{},
		seeds: map[string][][]seedVal{}, lits: map[string][]string{}, varLits: map[string]string{}}
	var plain []*packages.Package
	for _, p := range pkgs {
		if strings.HasSuffix(p.PkgPath, ".test") || !within(p.PkgPath, mod) {
			continue
		}
		if p.ID == p.PkgPath { // the package itself, not its test variant
			plain = append(plain, p)
		}
		d.index(p)
	}
	for _, p := range pkgs {
		if within(strings.TrimSuffix(p.PkgPath, "_test"), mod) && !strings.HasSuffix(p.PkgPath, ".test") {
			d.readTests(p)
		}
	}
	var out []*Entry
	for _, p := range plain {
		if p.Name == "main" || p.Types == nil || strings.Contains(p.PkgPath, "/internal/") && false {
			continue
		}
		out = append(out, d.entries(p)...)
	}
	out = slices.DeleteFunc(out, func(e *Entry) bool { _, skip := o.Skip[e.ID]; return skip })
	if len(out) == 0 {
		if len(loadErrs) > 0 {
			return nil, fmt.Errorf("no drivable entry point in %s (load errors: %s)", mod, strings.Join(first(loadErrs, 3), "; "))
		}
		return nil, fmt.Errorf("no drivable entry point in %s", mod)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Score != out[j].Score {
			return out[i].Score > out[j].Score
		}
		return out[i].ID < out[j].ID
	})
	if len(out) > MaxEntries {
		out = out[:MaxEntries]
	}
	return out, nil
}

func first(s []string, n int) []string { return s[:min(n, len(s))] }

// within reports whether import path p is mod or below it.
func within(p, mod string) bool { return p == mod || strings.HasPrefix(p, mod+"/") }

// discovery holds what Discover learned about the module across its
// packages and their tests.
type discovery struct {
	mod, dir string
	callees  map[string][]string    // function full name -> the module functions it calls
	tested   map[string]int         // function full name -> calls in tests
	seeds    map[string][][]seedVal // function full name -> constant arguments of test calls, per parameter
	lits     map[string][]string    // package path -> string literals in its tests
	varLits  map[string]string      // package-level variable full name -> its string literal initializer
	ctors    []*types.Func          // exported package-level functions of the module's packages
}

// index records a non-test or test-variant package's call graph edges,
// constructors and literal-initialized variables.
func (d *discovery) index(p *packages.Package) {
	if p.TypesInfo == nil {
		return
	}
	for _, f := range p.Syntax {
		test := strings.HasSuffix(p.Fset.Position(f.Pos()).Filename, "_test.go")
		for _, decl := range f.Decls {
			switch decl := decl.(type) {
			case *ast.FuncDecl:
				obj, _ := p.TypesInfo.Defs[decl.Name].(*types.Func)
				if obj == nil || decl.Body == nil {
					continue
				}
				if !test {
					d.callees[obj.FullName()] = d.calls(p, decl.Body)
					if p.ID == p.PkgPath && decl.Recv == nil && obj.Exported() && p.Name != "main" {
						d.ctors = append(d.ctors, obj)
					}
				}
			case *ast.GenDecl:
				if decl.Tok != token.VAR && decl.Tok != token.CONST {
					continue
				}
				for _, s := range decl.Specs {
					vs, ok := s.(*ast.ValueSpec)
					if !ok || len(vs.Values) != len(vs.Names) {
						continue
					}
					for i, n := range vs.Names {
						if s, ok := stringLit(vs.Values[i]); ok {
							if obj := p.TypesInfo.Defs[n]; obj != nil {
								d.varLits[obj.Pkg().Path()+"."+obj.Name()] = s
							}
						}
					}
				}
			}
		}
	}
}

// stringLit returns the string of a string literal, or of []byte("...").
func stringLit(e ast.Expr) (string, bool) {
	if c, ok := e.(*ast.CallExpr); ok && len(c.Args) == 1 {
		if at, ok := c.Fun.(*ast.ArrayType); ok && at.Len == nil {
			if id, ok := at.Elt.(*ast.Ident); ok && id.Name == "byte" {
				e = c.Args[0]
			}
		}
	}
	bl, ok := e.(*ast.BasicLit)
	if !ok || bl.Kind != token.STRING {
		return "", false
	}
	v := constant.MakeFromLiteral(bl.Value, token.STRING, 0)
	if v.Kind() != constant.String {
		return "", false
	}
	return constant.StringVal(v), true
}

// calls lists the module functions a body calls, by full name.
func (d *discovery) calls(p *packages.Package, body ast.Node) []string {
	var out []string
	ast.Inspect(body, func(n ast.Node) bool {
		c, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		if fn := callee(p.TypesInfo, c); fn != nil && fn.Pkg() != nil && within(fn.Pkg().Path(), d.mod) {
			out = append(out, fn.FullName())
		}
		return true
	})
	return out
}

// callee is the function or method a call expression calls, if static.
func callee(info *types.Info, c *ast.CallExpr) *types.Func {
	switch f := ast.Unparen(c.Fun).(type) {
	case *ast.Ident:
		fn, _ := info.Uses[f].(*types.Func)
		return fn
	case *ast.SelectorExpr:
		if sel := info.Selections[f]; sel != nil {
			fn, _ := sel.Obj().(*types.Func)
			return fn
		}
		fn, _ := info.Uses[f.Sel].(*types.Func)
		return fn
	case *ast.IndexExpr: // an instantiated generic function
		if id, ok := f.X.(*ast.Ident); ok {
			fn, _ := info.Uses[id].(*types.Func)
			return fn
		}
	}
	return nil
}

// readTests records, from a package's test files, the calls of module
// functions (counts and constant arguments) and the string literals.
func (d *discovery) readTests(p *packages.Package) {
	if p.TypesInfo == nil {
		return
	}
	path := strings.TrimSuffix(p.PkgPath, "_test")
	seenLit := map[string]bool{}
	for _, s := range d.lits[path] {
		seenLit[s] = true
	}
	for _, f := range p.Syntax {
		if !strings.HasSuffix(p.Fset.Position(f.Pos()).Filename, "_test.go") {
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BasicLit:
				if n.Kind == token.STRING {
					if s, ok := stringLit(n); ok && len(s) > 0 && len(s) <= maxSeed && !seenLit[s] && len(d.lits[path]) < maxLits {
						seenLit[s] = true
						d.lits[path] = append(d.lits[path], s)
					}
				}
			case *ast.CallExpr:
				fn := callee(p.TypesInfo, n)
				if fn == nil || fn.Pkg() == nil || !within(fn.Pkg().Path(), d.mod) {
					return true
				}
				name := fn.FullName()
				d.tested[name]++
				if len(d.seeds[name]) < maxCallSeeds {
					var vals []seedVal
					any := false
					for _, a := range n.Args {
						v := d.constArg(p.TypesInfo, a)
						any = any || v.set
						vals = append(vals, v)
					}
					if any {
						d.seeds[name] = append(d.seeds[name], vals)
					}
				}
			}
			return true
		})
	}
}

// constArg is a call argument's constant value: a constant expression, a
// []byte("...") conversion, or a package-level variable initialized with a
// string literal.
func (d *discovery) constArg(info *types.Info, a ast.Expr) seedVal {
	if tv, ok := info.Types[a]; ok && tv.Value != nil {
		switch tv.Value.Kind() {
		case constant.String:
			return seedVal{bytes: []byte(constant.StringVal(tv.Value)), set: true}
		case constant.Int, constant.Float, constant.Bool:
			return seedVal{lit: tv.Value.ExactString(), set: true}
		}
	}
	if s, ok := stringLit(a); ok {
		return seedVal{bytes: []byte(s), set: true}
	}
	e := ast.Unparen(a)
	if c, ok := e.(*ast.CallExpr); ok && len(c.Args) == 1 { // []byte(someVar)
		e = ast.Unparen(c.Args[0])
	}
	var obj types.Object
	switch e := e.(type) {
	case *ast.Ident:
		obj = info.Uses[e]
	case *ast.SelectorExpr:
		obj = info.Uses[e.Sel]
	}
	if v, ok := obj.(*types.Var); ok && v.Pkg() != nil {
		if s, ok := d.varLits[v.Pkg().Path()+"."+v.Name()]; ok {
			return seedVal{bytes: []byte(s), set: true}
		}
	}
	return seedVal{}
}

// Seed bounds.
const (
	maxSeed      = 4 << 10 // bytes of one seed value
	maxLits      = 48      // string literals kept per package
	maxCallSeeds = 24      // test calls kept per function
	maxSeeds     = 64      // f.Add lines per fuzz target
	MaxElems     = 16      // elements of a slice argument
	maxFields    = 8       // leaf fields of a struct argument
)

// entries lists one package's drivable entry points.
func (d *discovery) entries(p *packages.Package) []*Entry {
	rel := "."
	if p.PkgPath != d.mod {
		rel = strings.TrimPrefix(p.PkgPath, d.mod+"/")
	}
	docs := docComments(p)
	extra := d.extraSeeds(p.PkgPath, filepath.Join(d.dir, filepath.FromSlash(rel)))
	var out []*Entry
	add := func(fn *types.Func, recv *value, zero bool, chain []setupCall) {
		sig := fn.Type().(*types.Signature)
		if sig.TypeParams() != nil || sig.RecvTypeParams() != nil || touchesOutside(fn.Name()) || takesOutside(sig) {
			return
		}
		e := &Entry{Kind: KindFunc, Pkg: p.PkgPath, Dir: rel, fn: fn, recv: recv, ZeroRecv: zero, Doc: docs[fn.FullName()], PkgName: p.Name, varia: sig.Variadic(), extra: extra}
		e.Name = fn.Name()
		e.ID = p.PkgPath + "." + fn.Name()
		if recv != nil {
			e.Kind = KindMethod
			e.Name = recvName(sig) + "." + fn.Name()
			e.ID = p.PkgPath + "." + e.Name
		}
		if isGoFuzz(fn) {
			e.Kind = KindGoFuzz
		}
		for _, c := range chain {
			e.setup = append(e.setup, c)
			e.Chain = append(e.Chain, c.fn.Name())
		}
		if len(chain) > 0 {
			e.ID += "+" + strings.Join(e.Chain, "+")
		}
		for i := 0; i < sig.Params().Len(); i++ {
			t := sig.Params().At(i).Type()
			if e.varia && i == sig.Params().Len()-1 {
				t = types.NewSlice(t.(*types.Slice).Elem())
			}
			v, ok := d.valueOf(t, 0)
			if !ok {
				return
			}
			e.params = append(e.params, v)
		}
		e.ZeroArg = slices.ContainsFunc(e.params, func(v value) bool { return v.partial }) || recv != nil && recv.partial
		if !slices.ContainsFunc(e.params, takesInput) && (recv == nil || !takesInput(*recv)) {
			return // nothing of the input reaches it (go-querystring's Values(v interface{}))
		}
		d.rank(e)
		out = append(out, e)
	}
	scope := p.Types.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		switch obj := obj.(type) {
		case *types.Func:
			if isNative(obj) {
				out = append(out, &Entry{ID: p.PkgPath + "." + obj.Name(), Kind: KindNative, Pkg: p.PkgPath, PkgName: p.Name, Dir: rel, Name: obj.Name(),
					Target: obj.Name(), Package: "./" + rel, Score: 100, Why: []string{"an existing native fuzz target"}})
				continue
			}
			add(obj, nil, false, nil)
		case *types.TypeName:
			named, ok := obj.Type().(*types.Named)
			if !ok || obj.IsAlias() || named.TypeParams() != nil {
				continue
			}
			if _, iface := named.Underlying().(*types.Interface); iface {
				continue
			}
			recv, ok := d.ctorFor(named, 0)
			zero := !ok
			if zero {
				recv = value{kind: "zero", typ: named}
			}
			var chain []setupCall
			if !zero {
				chain = d.configurers(named)
			}
			for i := 0; i < named.NumMethods(); i++ {
				m := named.Method(i)
				if !m.Exported() {
					continue
				}
				add(m, &recv, zero, nil)
				// Construct, configure, parse: the same entry after the
				// type's configuring methods, whose settings may open
				// code the plain call never reaches.
				if len(chain) > 0 && parses(m.Name()) && !slices.ContainsFunc(chain, func(c setupCall) bool { return c.fn == m }) {
					add(m, &recv, zero, chain)
				}
			}
		}
	}
	return out
}

// isNative reports a func FuzzXxx(*testing.F) in a non-test file.
func isNative(fn *types.Func) bool {
	sig := fn.Type().(*types.Signature)
	if !strings.HasPrefix(fn.Name(), "Fuzz") || sig.Params().Len() != 1 {
		return false
	}
	return types.TypeString(sig.Params().At(0).Type(), nil) == "*testing.F"
}

// isGoFuzz reports a go-fuzz style func Fuzz(data []byte) int.
func isGoFuzz(fn *types.Func) bool {
	sig := fn.Type().(*types.Signature)
	if !strings.HasPrefix(fn.Name(), "Fuzz") || sig.Recv() != nil || sig.Params().Len() != 1 || sig.Results().Len() != 1 {
		return false
	}
	return types.TypeString(sig.Params().At(0).Type(), nil) == "[]byte" && types.TypeString(sig.Results().At(0).Type(), nil) == "int"
}

func recvName(sig *types.Signature) string {
	t := sig.Recv().Type()
	if p, ok := t.(*types.Pointer); ok {
		return "(*" + p.Elem().(*types.Named).Obj().Name() + ")"
	}
	return t.(*types.Named).Obj().Name()
}

// docComments maps the package's functions and methods to their doc comments.
func docComments(p *packages.Package) map[string]string {
	out := map[string]string{}
	for _, f := range p.Syntax {
		for _, decl := range f.Decls {
			if fd, ok := decl.(*ast.FuncDecl); ok && fd.Doc != nil {
				if obj, ok := p.TypesInfo.Defs[fd.Name].(*types.Func); ok {
					out[obj.FullName()] = fd.Doc.Text()
				}
			}
		}
	}
	return out
}

// leafOf returns the fuzz argument type a leaf type is fuzzed as.
func leafOf(t types.Type) (string, bool) {
	switch u := t.Underlying().(type) {
	case *types.Basic:
		k, ok := leafKinds[u.Kind()]
		return k, ok
	case *types.Slice:
		if b, ok := u.Elem().Underlying().(*types.Basic); ok && b.Kind() == types.Uint8 {
			return "[]byte", true
		}
	}
	return "", false
}

// readerMethods are *bytes.Reader's: an interface made of some of them
// takes one.
var readerMethods = map[string]bool{"Read": true, "ReadAt": true, "ReadByte": true, "UnreadByte": true, "ReadRune": true,
	"UnreadRune": true, "Seek": true, "WriteTo": true, "Len": true, "Size": true}

// valueOf says how to build a value of t from fuzz arguments; depth 1
// values (a constructor's arguments) take no constructor of their own.
func (d *discovery) valueOf(t types.Type, depth int) (value, bool) {
	if l, ok := leafOf(t); ok {
		return value{kind: "leaf", typ: t, leaf: l}, true
	}
	switch u := t.Underlying().(type) {
	case *types.Interface:
		if u.Empty() && depth == 0 {
			// An empty interface is a destination (Decode(data, v any),
			// Unmarshal): a pointer to an empty interface takes anything.
			return value{kind: "dest", typ: t}, true
		}
		if u.NumMethods() > 0 && u.NumEmbeddeds() <= 1 {
			all := true
			for i := 0; i < u.NumMethods(); i++ {
				all = all && readerMethods[u.Method(i).Name()]
			}
			if all {
				return value{kind: "reader", typ: t, leaf: "[]byte"}, true
			}
		}
	case *types.Slice:
		if l, ok := leafOf(u.Elem()); ok {
			return value{kind: "slice", typ: t, leaf: l}, true
		}
	case *types.Struct:
		if v, ok := d.structOf(t, false); ok {
			return v, true
		}
	case *types.Pointer:
		if _, ok := u.Elem().Underlying().(*types.Struct); ok {
			if depth == 0 {
				if v, ok := d.ctorFor(t, depth); ok {
					return v, true
				}
			}
			if v, ok := d.structOf(u.Elem(), true); ok {
				return v, true
			}
		}
	}
	if depth == 0 {
		if _, named := t.(*types.Named); named {
			return d.ctorFor(t, depth)
		}
		if _, ok := t.Underlying().(*types.Interface); ok {
			return d.ctorFor(t, depth)
		}
	}
	return value{}, false
}

// structOf builds a struct of the module from its exported leaf fields;
// one with unexported fields only is not built (its zero value would be a
// skipped constructor).
func (d *discovery) structOf(t types.Type, ptr bool) (value, bool) {
	named, ok := t.(*types.Named)
	if !ok || named.Obj().Pkg() == nil || !within(named.Obj().Pkg().Path(), d.mod) {
		return value{}, false
	}
	st := named.Underlying().(*types.Struct)
	v := value{kind: "struct", typ: t, ptr: ptr}
	unexported := 0
	for i := 0; i < st.NumFields(); i++ {
		f := st.Field(i)
		if !f.Exported() {
			unexported++
			v.partial = v.partial || nilable(f.Type())
			continue
		}
		if l, ok := leafOf(f.Type()); ok && len(v.fields) < maxFields {
			v.fields = append(v.fields, field{name: f.Name(), v: value{kind: "leaf", typ: f.Type(), leaf: l}})
		} else {
			v.partial = v.partial || nilable(f.Type())
		}
	}
	if len(v.fields) == 0 && (unexported > 0 || st.NumFields() == 0) {
		return value{}, false
	}
	return v, true
}

// nilable reports a type whose zero value is nil and that a method
// dereferences or calls: pointer, map, interface, func, channel.
func nilable(t types.Type) bool {
	switch t.Underlying().(type) {
	case *types.Pointer, *types.Map, *types.Interface, *types.Signature, *types.Chan:
		return true
	}
	return false
}

// ctorFor finds a constructor of the module for t: an exported function
// whose first result is assignable to t (the second, if any, an error)
// and whose arguments are built from leaves. The name New* is preferred,
// then fewer arguments.
func (d *discovery) ctorFor(t types.Type, depth int) (value, bool) {
	var best *value
	bestScore := -1 << 30
	errType := types.Universe.Lookup("error").Type()
	for _, fn := range d.ctors {
		sig := fn.Type().(*types.Signature)
		r := sig.Results()
		if sig.TypeParams() != nil || r.Len() == 0 || r.Len() > 2 || isGoFuzz(fn) || touchesOutside(fn.Name()) || takesOutside(sig) {
			continue // a constructor that reads a file or dials makes no receiver from the input
		}
		if r.Len() == 2 && !types.Identical(r.At(1).Type(), errType) {
			continue
		}
		rt := r.At(0).Type()
		if !types.AssignableTo(rt, t) {
			if p, ok := t.(*types.Pointer); !ok || !types.AssignableTo(rt, p.Elem()) {
				// a constructor of T serves *T receivers too (the value is addressable)
				if _, ok := t.(*types.Named); !ok || !types.AssignableTo(rt, types.NewPointer(t)) {
					continue
				}
			}
		}
		if _, ok := rt.Underlying().(*types.Interface); ok && !types.Identical(rt, t) {
			continue // an interface result says nothing of what it holds
		}
		v := value{kind: "ctor", typ: rt, ctor: fn, err: r.Len() == 2}
		switch rt.Underlying().(type) {
		case *types.Pointer, *types.Interface, *types.Map, *types.Slice, *types.Signature:
			v.nilchk = true
		}
		ok := true
		for i := 0; i < sig.Params().Len() && ok; i++ {
			pt := sig.Params().At(i).Type()
			if sig.Variadic() && i == sig.Params().Len()-1 {
				continue // variadic options: none given
			}
			var a value
			a, ok = d.valueOf(pt, depth+1)
			v.args = append(v.args, a)
		}
		if !ok {
			continue
		}
		score := -len(v.args)
		if strings.HasPrefix(fn.Name(), "New") {
			score += 10
		}
		if score > bestScore {
			bestScore, best = score, &v
		}
	}
	if best == nil {
		return value{}, false
	}
	return *best, true
}

// Name words that parse outside input, and their weight.
var parseWords = []struct {
	word string
	w    float64
}{
	{"Unmarshal", 6}, {"Parse", 6}, {"Decode", 6}, {"FromBytes", 6}, {"FromString", 5}, {"Unescape", 5}, {"Unquote", 5},
	{"Load", 4}, {"Read", 4}, {"Lex", 4}, {"Scan", 4}, {"Tokenize", 4}, {"Compile", 4}, {"Validate", 4}, {"Valid", 3},
	{"Render", 3}, {"ToHTML", 4}, {"Run", 2}, {"Get", 3}, {"Set", 2}, {"Delete", 2}, {"Each", 2}, {"Convert", 3},
	{"Format", 2}, {"Eval", 3}, {"Match", 3}, {"Query", 3}, {"Extract", 3}, {"Split", 2}, {"Process", 2},
}

// rank scores an entry and says why.
func (d *discovery) rank(e *Entry) {
	full := e.fn.FullName()
	e.Reach = d.reach(full)
	e.Tested = d.tested[full]
	e.seeds = d.seeds[full]
	var why []string
	score := 0.0
	if e.Kind == KindGoFuzz {
		score += 20
		why = append(why, "a go-fuzz Fuzz function the authors wrote for fuzzing")
	}
	for _, w := range parseWords {
		if strings.Contains(e.fn.Name(), w.word) {
			score += w.w
			why = append(why, fmt.Sprintf("its name says it parses (%s)", w.word))
			break
		}
	}
	bytesLike := 0
	for _, p := range e.params {
		if p.leaf == "string" || p.leaf == "[]byte" || p.kind == "reader" {
			if p.kind != "slice" {
				bytesLike++
			}
		}
	}
	if bytesLike > 0 {
		score += 4
		why = append(why, fmt.Sprintf("%d text or byte argument(s)", bytesLike))
	} else {
		score -= 4
		why = append(why, "no text or byte argument")
	}
	if e.Reach > 0 {
		r := e.Reach
		if r > 200 {
			r = 200
		}
		score += 3 * log2(float64(r)+1)
		why = append(why, fmt.Sprintf("reaches %d of the module's functions", e.Reach))
	}
	if e.Tested > 0 {
		score += 3
		why = append(why, fmt.Sprintf("the tests call it %d time(s)", e.Tested))
	}
	if e.ZeroRecv {
		score -= 3
		why = append(why, "its receiver is a zero value (no constructor)")
	} else if e.recv != nil && e.recv.kind == "ctor" {
		why = append(why, "receiver from "+e.recv.ctor.Name())
	}
	if e.ZeroArg {
		score -= 2
		why = append(why, "an argument is a struct literal with nil fields its constructor would set")
	}
	if strings.Contains(e.Pkg, "/internal/") || strings.HasSuffix(e.Pkg, "/internal") {
		score -= 1
	}
	if len(e.Chain) > 0 {
		score -= 0.5 // after the plain call, which the chain repeats
		why = append(why, "configured first by "+strings.Join(e.Chain, ", "))
	}
	e.Score = float64(int(score*10)) / 10
	e.Why = why
}

func log2(x float64) float64 {
	n := 0.0
	for x >= 2 {
		x /= 2
		n++
	}
	return n + (x - 1)
}

// reach counts the module functions reachable from a function.
func (d *discovery) reach(full string) int {
	seen := map[string]bool{full: true}
	stack := []string{full}
	for len(stack) > 0 && len(seen) < 5000 {
		f := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, c := range d.callees[f] {
			if !seen[c] {
				seen[c] = true
				stack = append(stack, c)
			}
		}
	}
	return len(seen) - 1
}

// enableGoFuzz drops the gofuzz build constraint from the copy's go-fuzz
// files (a file whose only constraint is gofuzz and that declares a Fuzz
// function), so their Fuzz functions are entries. The copy is scratch.
func enableGoFuzz(dir string) {
	_, _ = fuzzing.RaiseGoDirective(dir, minGo) // the scratch copy keeps it
	_ = filepath.WalkDir(dir, func(p string, de os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if de.IsDir() {
			if n := de.Name(); p != dir && (n == "vendor" || n == "testdata" || strings.HasPrefix(n, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(b), "func Fuzz") {
			return nil
		}
		lines := strings.Split(string(b), "\n")
		changed := false
		for i, l := range lines {
			t := strings.TrimSpace(l)
			if t == "//go:build gofuzz" || t == "// +build gofuzz" {
				lines[i], changed = "", true
			}
			if strings.HasPrefix(t, "package ") {
				break
			}
		}
		if changed {
			_ = os.WriteFile(p, []byte(strings.Join(lines, "\n")), 0o644)
		}
		return nil
	})
}

// errNoEntries is returned by Generate when every entry was dropped.
var errNoEntries = errors.New("no entry point left to generate")

// extraSeeds are a package's test string literals and its testdata files
// (at most 16, each at most maxSeed bytes... files up to 64 KiB).
func (d *discovery) extraSeeds(pkg, dir string) [][]byte {
	var out [][]byte
	for _, l := range d.lits[pkg] {
		out = append(out, []byte(l))
	}
	files := 0
	_ = filepath.WalkDir(filepath.Join(dir, "testdata"), func(p string, de os.DirEntry, err error) error {
		if err != nil || de.IsDir() || files >= 16 {
			return nil
		}
		if info, err := de.Info(); err == nil && info.Mode().IsRegular() && info.Size() > 0 && info.Size() <= 64<<10 {
			if b, err := os.ReadFile(p); err == nil {
				out = append(out, b)
				files++
			}
		}
		return nil
	})
	return out
}

// minGo is the lowest language version a module copy is built at:
// native fuzzing arrived in 1.18 (and the libFuzzer stand-in needs 1.13,
// fuzzing.StandInGo). An older go directive is raised in the copy
// (fuzzing.RaiseGoDirective; the go command then completes the module
// graph itself, -mod=mod).
const minGo = 18

// outsideWords name functions that reach outside the process (files,
// directories, processes, the network): fuzzing them would feed the input
// to the file system, not to a parser.
var outsideWords = []string{"File", "Dir", "FS", "Path", "Open", "Exec", "Remove", "Dial", "Listen", "Serve", "URL", "Env"}

// outsideParams are parameter name words (camel case split, lower case)
// that say an argument is a file's name, a file system, a network address
// or a command line: a function taking one (go-org's
// blorg.ReadConfig(configFile string); toml's internal toml-test
// NewCommandParser(fsys fs.FS, cmd []string), whose parser runs cmd)
// reaches the file system, the network or other programs, whatever its
// own name says. "path" is not one: gjson's Get(json, path string) takes
// a query.
var outsideParams = map[string]bool{"file": true, "filename": true, "filepath": true, "dir": true, "dirname": true,
	"directory": true, "fsys": true, "url": true, "addr": true, "address": true, "host": true, "cmd": true, "command": true, "argv": true}

// takesOutside reports whether one of sig's parameters is named as a file
// or an address (outsideParams).
func takesOutside(sig *types.Signature) bool {
	for i := 0; i < sig.Params().Len(); i++ {
		for _, w := range nameWords(sig.Params().At(i).Name()) {
			if outsideParams[w] {
				return true
			}
		}
	}
	return false
}

// nameWords splits an identifier at case changes and underscores, in
// lower case: "configFile" is config, file; "URLPath" url, path.
func nameWords(name string) []string {
	var words []string
	rs := []rune(name)
	start := 0
	for i := 1; i <= len(rs); i++ {
		split := i == len(rs) || rs[i] == '_' ||
			unicode.IsUpper(rs[i]) && (unicode.IsLower(rs[i-1]) || i+1 < len(rs) && unicode.IsLower(rs[i+1]) && unicode.IsUpper(rs[i-1]))
		if !split {
			continue
		}
		if w := strings.Trim(string(rs[start:i]), "_"); w != "" {
			words = append(words, strings.ToLower(w))
		}
		start = i
	}
	return words
}

// touchesOutside reports whether a function's name says it reaches outside.
func touchesOutside(name string) bool {
	for _, w := range outsideWords {
		if strings.Contains(name, w) {
			return true
		}
	}
	return false
}
