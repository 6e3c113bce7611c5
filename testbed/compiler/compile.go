package compiler

import (
	"fmt"
)

// Compile compiles a TinyLang source into a bytecode module. It returns a
// *Error ("line:col: msg") for a source the language rejects; the same source
// always yields the same bytes.
func Compile(src []byte) ([]byte, error) {
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	prog, err := parse(toks)
	if err != nil {
		return nil, err
	}
	c := newCompiler()
	if err := c.program(prog); err != nil {
		return nil, err
	}
	return c.mod.encode(), nil
}

type symKind int

const (
	symVar symKind = iota
	symFn
	symEnum
)

func (k symKind) String() string {
	return [...]string{"variable", "function", "enum"}[k]
}

// symbol is one declared name.
type symbol struct {
	name   string
	kind   symKind
	depth  int // block depth it was declared at; 0 is the top level
	global bool
	slot   int // variable slot, function index or enum index
	pos    Pos
}

// symtab holds every name in scope, innermost last.
type symtab struct {
	syms  []symbol
	depth int
}

// declare adds a symbol at the current depth; a name may be declared once per block.
//
// PLANTED FLAW P1 (testbed/README.md): the duplicate check scans every symbol
// in scope, so a program with n top-level declarations compiles in O(n²).
func (s *symtab) declare(sym symbol) *Error {
	sym.depth = s.depth
	for i := range s.syms {
		if o := &s.syms[i]; o.name == sym.name && o.depth == sym.depth {
			return errorf(sym.pos, "%s redeclared in this block (previous declaration at %s)", sym.name, o.pos)
		}
	}
	s.syms = append(s.syms, sym)
	return nil
}

// lookup finds the innermost symbol called name.
func (s *symtab) lookup(name string) (symbol, bool) {
	for i := len(s.syms) - 1; i >= 0; i-- {
		if s.syms[i].name == name {
			return s.syms[i], true
		}
	}
	return symbol{}, false
}

func (s *symtab) open() { s.depth++ }

// close drops the symbols of the innermost block.
func (s *symtab) close() {
	n := len(s.syms)
	for n > 0 && s.syms[n-1].depth == s.depth {
		n--
	}
	s.syms = s.syms[:n]
	s.depth--
}

// compiler turns a checked program into a module.
type compiler struct {
	mod    *module
	syms   symtab
	fns    []*fnDecl
	code   *emitter // the function being compiled (the main program is one)
	fn     *fnDecl  // nil in the main program
	locals int      // next local slot of fn
	loops  []*loop
}

// loop tracks the jumps of an enclosing while.
type loop struct {
	start  int
	breaks []int
}

func newCompiler() *compiler {
	return &compiler{mod: newModule()}
}

func (c *compiler) program(prog []stmt) (err error) {
	defer func() {
		if r := recover(); r != nil {
			e, ok := r.(*Error)
			if !ok {
				panic(r)
			}
			err = e
		}
	}()
	// Hoist functions and enums so they may be used before their declaration.
	for _, s := range prog {
		switch d := s.(type) {
		case *fnDecl:
			c.check(c.syms.declare(symbol{name: d.name, kind: symFn, global: true, slot: len(c.fns), pos: d.pos}))
			c.fns = append(c.fns, d)
			c.mod.fns = append(c.mod.fns, function{name: d.name, params: len(d.params)})
		case *enumDecl:
			c.enum(d)
		}
	}
	c.code = &emitter{}
	for _, s := range prog {
		c.stmt(s)
	}
	c.code.op(opHalt)
	c.mod.main = c.code.buf
	for i, d := range c.fns {
		c.function(i, d)
	}
	return nil
}

func (c *compiler) check(err *Error) {
	if err != nil {
		panic(err)
	}
}

func (c *compiler) fail(p Pos, format string, args ...any) {
	panic(errorf(p, format, args...))
}

func (c *compiler) enum(d *enumDecl) {
	c.check(c.syms.declare(symbol{name: d.name, kind: symEnum, global: true, slot: len(c.mod.enums), pos: d.pos}))
	e := enumInfo{name: d.name}
	for i, v := range d.variants {
		for _, w := range d.variants[:i] {
			if w.name == v.name {
				c.fail(v.pos, "variant %s.%s declared twice (previous declaration at %s)", d.name, v.name, w.pos)
			}
		}
		e.variants = append(e.variants, v.name)
	}
	// An enum's zero value is its first variant; the runtime initialises
	// enum-typed slots with it.
	//
	// PLANTED FLAW F1 (testbed/README.md): an enum without variants indexes
	// out of range here.
	e.zero = d.variants[0].name
	c.mod.enums = append(c.mod.enums, e)
}

func (c *compiler) function(i int, d *fnDecl) {
	c.fn, c.code, c.locals = d, &emitter{}, 0
	c.syms.open()
	for _, p := range d.params {
		c.check(c.syms.declare(symbol{name: p.name, kind: symVar, slot: c.locals, pos: p.pos}))
		c.locals++
	}
	c.blockBody(d.body)
	c.code.op(opRetNil)
	c.syms.close()
	c.mod.fns[i].locals = c.locals
	c.mod.fns[i].code = c.code.buf
	c.fn = nil
}

func (c *compiler) blockBody(b *block) {
	for _, s := range b.stmts {
		c.stmt(s)
	}
}

func (c *compiler) stmt(s stmt) {
	switch s := s.(type) {
	case *letStmt:
		c.expr(s.x) // before declaring: `let x = x;` refers to an outer x
		sym := symbol{name: s.name, kind: symVar, pos: s.pos}
		if c.fn == nil {
			sym.global, sym.slot = true, c.mod.globals
			c.mod.globals++
		} else {
			sym.slot = c.locals
			c.locals++
		}
		c.check(c.syms.declare(sym))
		c.store(sym)
	case *assignStmt:
		sym, ok := c.syms.lookup(s.name)
		if !ok {
			c.fail(s.pos, "undefined: %s", s.name)
		}
		if sym.kind != symVar {
			c.fail(s.pos, "cannot assign to %s %s", sym.kind, s.name)
		}
		c.expr(s.x)
		c.store(sym)
	case *printStmt:
		c.expr(s.x)
		c.code.op(opPrint)
	case *exprStmt:
		c.expr(s.x)
		c.code.op(opPop)
	case *block:
		c.syms.open()
		c.blockBody(s)
		c.syms.close()
	case *ifStmt:
		c.expr(s.cond)
		jz := c.code.jump(opJumpIfFalse)
		c.stmt(s.then)
		if s.els == nil {
			c.code.patch(jz)
			return
		}
		jmp := c.code.jump(opJump)
		c.code.patch(jz)
		c.stmt(s.els)
		c.code.patch(jmp)
	case *whileStmt:
		c.while(s)
	case *returnStmt:
		if c.fn == nil {
			c.fail(s.pos, "return outside a function")
		}
		if s.x == nil {
			c.code.op(opRetNil)
			return
		}
		c.expr(s.x)
		c.code.op(opRet)
	case *branchStmt:
		if len(c.loops) == 0 {
			c.fail(s.pos, "%s outside a loop", s.tok)
		}
		l := c.loops[len(c.loops)-1]
		if s.tok == "continue" {
			c.code.jumpTo(opJump, l.start)
			return
		}
		l.breaks = append(l.breaks, c.code.jump(opJump))
	case *fnDecl:
		// Hoisted; compiled after the main program.
	case *enumDecl:
		// Hoisted.
	default:
		panic(fmt.Sprintf("compiler: unknown statement %T", s))
	}
}

func (c *compiler) while(s *whileStmt) {
	cond := c.fold(s.cond)
	if len(s.body.stmts) == 0 {
		if k, ok := cond.(constant); ok {
			// A loop without a body has no effect but time, and with a
			// constant condition the compiler can settle it now: re-evaluate
			// until it turns false and emit nothing.
			//
			// PLANTED FLAW F2 (testbed/README.md): a condition that is
			// constantly true never turns false, so the compiler spins.
			for k.truthy() {
				k = c.fold(s.cond).(constant)
			}
			return
		}
	}
	l := &loop{start: len(c.code.buf)}
	c.loops = append(c.loops, l)
	c.expr(s.cond)
	exit := c.code.jump(opJumpIfFalse)
	c.stmt(s.body)
	c.code.jumpTo(opJump, l.start)
	c.code.patch(exit)
	for _, b := range l.breaks {
		c.code.patch(b)
	}
	c.loops = c.loops[:len(c.loops)-1]
}

func (c *compiler) store(sym symbol) {
	if sym.global {
		c.code.opArg(opSetGlobal, sym.slot)
	} else {
		c.code.opArg(opSetLocal, sym.slot)
	}
}

// expr emits code leaving the value of x on the stack.
func (c *compiler) expr(x expr) { c.emit(c.fold(x)) }

// emit emits code for an expression fold has already simplified.
func (c *compiler) emit(x expr) {
	switch x := x.(type) {
	case constant:
		c.code.opArg(opConst, c.mod.constant(x.value()))
	case *ident:
		sym, ok := c.syms.lookup(x.name)
		if !ok {
			c.fail(x.pos, "undefined: %s", x.name)
		}
		if sym.kind != symVar {
			c.fail(x.pos, "%s %s is not a value", sym.kind, x.name)
		}
		if sym.global {
			c.code.opArg(opGetGlobal, sym.slot)
		} else {
			c.code.opArg(opGetLocal, sym.slot)
		}
	case *callExpr:
		sym, ok := c.syms.lookup(x.name)
		if !ok {
			c.fail(x.pos, "undefined: %s", x.name)
		}
		if sym.kind != symFn {
			c.fail(x.pos, "cannot call %s %s", sym.kind, x.name)
		}
		if want := len(c.fns[sym.slot].params); len(x.args) != want {
			c.fail(x.pos, "%s takes %d argument(s), got %d", x.name, want, len(x.args))
		}
		for _, a := range x.args {
			c.emit(a)
		}
		c.code.opArg(opCall, sym.slot)
	case *unaryExpr:
		c.emit(x.x)
		c.code.op(unaryOps[x.op])
	case *binaryExpr:
		switch x.op {
		case "&&", "||":
			// Short-circuit: leave the left value if it decides the result.
			c.emit(x.x)
			c.code.op(opDup)
			op := opJumpIfFalse
			if x.op == "||" {
				op = opJumpIfTrue
			}
			j := c.code.jump(op)
			c.code.op(opPop)
			c.emit(x.y)
			c.code.patch(j)
		default:
			c.emit(x.x)
			c.emit(x.y)
			c.code.op(binaryOps[x.op])
		}
	default:
		panic(fmt.Sprintf("compiler: unknown expression %T", x))
	}
}

// fold evaluates the constant parts of x. Enum members become integer
// constants; operators on constants are computed, with type errors and
// division by a constant zero reported at compile time.
func (c *compiler) fold(x expr) expr {
	switch x := x.(type) {
	case *intLit:
		return intConst{x.pos, x.v}
	case *strLit:
		return strConst{x.pos, x.v}
	case *boolLit:
		return boolConst{x.pos, x.v}
	case constant:
		return x
	case *member:
		sym, ok := c.syms.lookup(x.enum)
		if !ok {
			c.fail(x.pos, "undefined: %s", x.enum)
		}
		if sym.kind != symEnum {
			c.fail(x.pos, "%s %s has no members", sym.kind, x.enum)
		}
		for i, v := range c.mod.enums[sym.slot].variants {
			if v == x.variant {
				return intConst{x.pos, int64(i)}
			}
		}
		c.fail(x.pos, "%s has no variant %s", x.enum, x.variant)
	case *callExpr:
		args := make([]expr, len(x.args))
		for i, a := range x.args {
			args[i] = c.fold(a)
		}
		return &callExpr{pos: x.pos, name: x.name, args: args, h: x.h}
	case *unaryExpr:
		y := c.fold(x.x)
		k, ok := y.(constant)
		if !ok {
			return &unaryExpr{pos: x.pos, op: x.op, x: y, h: x.h}
		}
		return c.foldUnary(x, k)
	case *binaryExpr:
		l, r := c.fold(x.x), c.fold(x.y)
		lk, lok := l.(constant)
		rk, rok := r.(constant)
		if !lok || !rok {
			if rok && (x.op == "/" || x.op == "%") {
				if n, ok := rk.(intConst); ok && n.v == 0 {
					c.fail(x.pos, "division by zero")
				}
			}
			return &binaryExpr{pos: x.pos, op: x.op, x: l, y: r, h: x.h}
		}
		return c.foldBinary(x, lk, rk)
	}
	return x
}

func (c *compiler) foldUnary(x *unaryExpr, k constant) expr {
	switch k := k.(type) {
	case intConst:
		if x.op == "-" {
			return intConst{x.pos, -k.v}
		}
	case boolConst:
		if x.op == "!" {
			return boolConst{x.pos, !k.v}
		}
	}
	c.fail(x.pos, "operator %s not defined on %s", x.op, k.typ())
	return nil
}

func (c *compiler) foldBinary(x *binaryExpr, l, r constant) expr {
	if l.typ() != r.typ() {
		switch x.op {
		case "==":
			return boolConst{x.pos, false}
		case "!=":
			return boolConst{x.pos, true}
		}
		c.fail(x.pos, "mismatched types %s and %s for %s", l.typ(), r.typ(), x.op)
	}
	switch l := l.(type) {
	case intConst:
		a, b := l.v, r.(intConst).v
		switch x.op {
		case "+":
			return intConst{x.pos, a + b}
		case "-":
			return intConst{x.pos, a - b}
		case "*":
			return intConst{x.pos, a * b}
		case "/", "%":
			if b == 0 {
				c.fail(x.pos, "division by zero")
			}
			if x.op == "/" {
				return intConst{x.pos, a / b}
			}
			return intConst{x.pos, a % b}
		case "<":
			return boolConst{x.pos, a < b}
		case "<=":
			return boolConst{x.pos, a <= b}
		case ">":
			return boolConst{x.pos, a > b}
		case ">=":
			return boolConst{x.pos, a >= b}
		case "==":
			return boolConst{x.pos, a == b}
		case "!=":
			return boolConst{x.pos, a != b}
		}
	case strConst:
		a, b := l.v, r.(strConst).v
		switch x.op {
		case "+":
			return strConst{x.pos, a + b}
		case "==":
			return boolConst{x.pos, a == b}
		case "!=":
			return boolConst{x.pos, a != b}
		case "<":
			return boolConst{x.pos, a < b}
		case "<=":
			return boolConst{x.pos, a <= b}
		case ">":
			return boolConst{x.pos, a > b}
		case ">=":
			return boolConst{x.pos, a >= b}
		}
	case boolConst:
		a, b := l.v, r.(boolConst).v
		switch x.op {
		case "&&":
			return boolConst{x.pos, a && b}
		case "||":
			return boolConst{x.pos, a || b}
		case "==":
			return boolConst{x.pos, a == b}
		case "!=":
			return boolConst{x.pos, a != b}
		}
	}
	c.fail(x.pos, "operator %s not defined on %s", x.op, l.typ())
	return nil
}

// constant is a folded value; it is also an expr.
type constant interface {
	expr
	typ() string
	truthy() bool
	value() value
}

type (
	intConst struct {
		pos Pos
		v   int64
	}
	strConst struct {
		pos Pos
		v   string
	}
	boolConst struct {
		pos Pos
		v   bool
	}
)

func (k intConst) at() Pos  { return k.pos }
func (k strConst) at() Pos  { return k.pos }
func (k boolConst) at() Pos { return k.pos }

func (intConst) typ() string  { return "int" }
func (strConst) typ() string  { return "string" }
func (boolConst) typ() string { return "bool" }

func (k intConst) truthy() bool  { return k.v != 0 }
func (k strConst) truthy() bool  { return k.v != "" }
func (k boolConst) truthy() bool { return k.v }

func (k intConst) value() value  { return value{tag: tagInt, i: k.v} }
func (k strConst) value() value  { return value{tag: tagString, s: k.v} }
func (k boolConst) value() value { return value{tag: tagBool, b: k.v} }
