package compiler

// maxNesting bounds how deeply blocks, parentheses and calls may nest, so a
// source of a million "(" is a clean error rather than a stack overflow.
const maxNesting = 200

// maxHeight bounds the height of an expression tree (a long chain like
// 1+1+...+1 is a tree as tall as it is long), for the same reason.
const maxHeight = 1000

// Expressions.
type (
	expr interface{ at() Pos }

	intLit struct {
		pos Pos
		v   int64
	}
	strLit struct {
		pos Pos
		v   string
	}
	boolLit struct {
		pos Pos
		v   bool
	}
	ident struct {
		pos  Pos
		name string
	}
	member struct { // E.Variant
		pos           Pos
		enum, variant string
	}
	callExpr struct {
		pos  Pos
		name string
		args []expr
		h    int // height of the tree
	}
	unaryExpr struct {
		pos Pos
		op  string
		x   expr
		h   int
	}
	binaryExpr struct {
		pos  Pos
		op   string
		x, y expr
		h    int
	}
)

// height is the height of an expression tree; a leaf has height 0.
func height(e expr) int {
	switch e := e.(type) {
	case *callExpr:
		return e.h
	case *unaryExpr:
		return e.h
	case *binaryExpr:
		return e.h
	}
	return 0
}

func (e *intLit) at() Pos     { return e.pos }
func (e *strLit) at() Pos     { return e.pos }
func (e *boolLit) at() Pos    { return e.pos }
func (e *ident) at() Pos      { return e.pos }
func (e *member) at() Pos     { return e.pos }
func (e *callExpr) at() Pos   { return e.pos }
func (e *unaryExpr) at() Pos  { return e.pos }
func (e *binaryExpr) at() Pos { return e.pos }

// Statements.
type (
	stmt interface{ at() Pos }

	letStmt struct {
		pos  Pos
		name string
		x    expr
	}
	assignStmt struct {
		pos  Pos
		name string
		x    expr
	}
	printStmt struct {
		pos Pos
		x   expr
	}
	exprStmt struct {
		pos Pos
		x   expr
	}
	ifStmt struct {
		pos  Pos
		cond expr
		then *block
		els  stmt // nil, *block or *ifStmt
	}
	whileStmt struct {
		pos  Pos
		cond expr
		body *block
	}
	returnStmt struct {
		pos Pos
		x   expr // may be nil
	}
	branchStmt struct {
		pos Pos
		tok string // "break" or "continue"
	}
	block struct {
		pos   Pos
		stmts []stmt
	}
	fnDecl struct {
		pos    Pos
		name   string
		params []*ident
		body   *block
	}
	enumDecl struct {
		pos      Pos
		name     string
		variants []*ident
	}
)

func (s *letStmt) at() Pos    { return s.pos }
func (s *assignStmt) at() Pos { return s.pos }
func (s *printStmt) at() Pos  { return s.pos }
func (s *exprStmt) at() Pos   { return s.pos }
func (s *ifStmt) at() Pos     { return s.pos }
func (s *whileStmt) at() Pos  { return s.pos }
func (s *returnStmt) at() Pos { return s.pos }
func (s *branchStmt) at() Pos { return s.pos }
func (s *block) at() Pos      { return s.pos }
func (s *fnDecl) at() Pos     { return s.pos }
func (s *enumDecl) at() Pos   { return s.pos }

// parser is a recursive-descent parser over the token slice. Errors are
// reported by panicking with a *Error that parse recovers; nothing else is
// recovered.
type parser struct {
	toks  []token
	i     int
	depth int
}

// parse returns the top-level statements of the program.
func parse(toks []token) (prog []stmt, err error) {
	p := &parser{toks: toks}
	defer func() {
		if r := recover(); r != nil {
			e, ok := r.(*Error)
			if !ok {
				panic(r)
			}
			err = e
		}
	}()
	for p.peek().kind != tEOF {
		prog = append(prog, p.stmt(true))
	}
	return prog, nil
}

func (p *parser) peek() token { return p.toks[p.i] }

func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tEOF {
		p.i++
	}
	return t
}

func (p *parser) fail(t token, format string, args ...any) {
	panic(errorf(t.pos, format, args...))
}

// is reports whether the next token is the operator or keyword s.
func (p *parser) is(s string) bool {
	t := p.peek()
	return (t.kind == tOp || t.kind == tKeyword) && t.text == s
}

func (p *parser) expect(s string) token {
	t := p.next()
	if (t.kind != tOp && t.kind != tKeyword) || t.text != s {
		p.fail(t, "expected %q, found %s", s, t)
	}
	return t
}

func (p *parser) identifier() *ident {
	t := p.next()
	if t.kind != tIdent {
		p.fail(t, "expected identifier, found %s", t)
	}
	return &ident{pos: t.pos, name: t.text}
}

func (p *parser) enter(t token) {
	p.depth++
	if p.depth > maxNesting {
		p.fail(t, "nesting deeper than %d", maxNesting)
	}
}

func (p *parser) leave() { p.depth-- }

func (p *parser) checkHeight(t token, x expr) {
	if height(x) > maxHeight {
		p.fail(t, "expression longer than %d operations", maxHeight)
	}
}

func (p *parser) stmt(top bool) stmt {
	t := p.peek()
	if t.kind == tKeyword {
		switch t.text {
		case "let":
			p.next()
			name := p.identifier()
			p.expect("=")
			x := p.expr()
			p.expect(";")
			return &letStmt{pos: t.pos, name: name.name, x: x}
		case "fn":
			if !top {
				p.fail(t, "functions must be declared at top level")
			}
			return p.fnDecl()
		case "enum":
			if !top {
				p.fail(t, "enums must be declared at top level")
			}
			return p.enumDecl()
		case "print":
			p.next()
			x := p.expr()
			p.expect(";")
			return &printStmt{pos: t.pos, x: x}
		case "if":
			return p.ifStmt()
		case "while":
			p.next()
			cond := p.expr()
			return &whileStmt{pos: t.pos, cond: cond, body: p.block()}
		case "return":
			p.next()
			var x expr
			if !p.is(";") {
				x = p.expr()
			}
			p.expect(";")
			return &returnStmt{pos: t.pos, x: x}
		case "break", "continue":
			p.next()
			p.expect(";")
			return &branchStmt{pos: t.pos, tok: t.text}
		}
	}
	if p.is("{") {
		return p.block()
	}
	if t.kind == tIdent && p.toks[p.i+1].kind == tOp && p.toks[p.i+1].text == "=" {
		p.next()
		p.next()
		x := p.expr()
		p.expect(";")
		return &assignStmt{pos: t.pos, name: t.text, x: x}
	}
	x := p.expr()
	p.expect(";")
	return &exprStmt{pos: t.pos, x: x}
}

func (p *parser) block() *block {
	open := p.expect("{")
	p.enter(open)
	defer p.leave()
	b := &block{pos: open.pos}
	for !p.is("}") {
		if p.peek().kind == tEOF {
			p.fail(p.peek(), "expected \"}\", found end of file")
		}
		b.stmts = append(b.stmts, p.stmt(false))
	}
	p.next()
	return b
}

func (p *parser) ifStmt() stmt {
	t := p.expect("if")
	p.enter(t) // else-if chains nest like blocks
	defer p.leave()
	s := &ifStmt{pos: t.pos, cond: p.expr(), then: p.block()}
	if p.is("else") {
		p.next()
		if p.is("if") {
			s.els = p.ifStmt()
		} else {
			s.els = p.block()
		}
	}
	return s
}

func (p *parser) fnDecl() stmt {
	t := p.expect("fn")
	d := &fnDecl{pos: t.pos, name: p.identifier().name}
	p.expect("(")
	if !p.is(")") {
		d.params = append(d.params, p.identifier())
		for p.is(",") {
			p.next()
			d.params = append(d.params, p.identifier())
		}
	}
	p.expect(")")
	d.body = p.block()
	return d
}

func (p *parser) enumDecl() stmt {
	t := p.expect("enum")
	d := &enumDecl{pos: t.pos, name: p.identifier().name}
	p.expect("{")
	for !p.is("}") {
		d.variants = append(d.variants, p.identifier())
		if !p.is(",") {
			break
		}
		p.next()
	}
	p.expect("}")
	return d
}

// precedence of binary operators; higher binds tighter.
var precedence = map[string]int{
	"||": 1, "&&": 2,
	"==": 3, "!=": 3, "<": 3, "<=": 3, ">": 3, ">=": 3,
	"+": 4, "-": 4,
	"*": 5, "/": 5, "%": 5,
}

func (p *parser) expr() expr { return p.binary(1) }

// binary parses operators of precedence at least min, left-associatively.
func (p *parser) binary(min int) expr {
	x := p.unary()
	for {
		t := p.peek()
		prec, ok := precedence[t.text]
		if t.kind != tOp || !ok || prec < min {
			return x
		}
		p.next()
		p.enter(t)
		y := p.binary(prec + 1)
		p.leave()
		x = &binaryExpr{pos: t.pos, op: t.text, x: x, y: y, h: 1 + max(height(x), height(y))}
		p.checkHeight(t, x)
	}
}

func (p *parser) unary() expr {
	t := p.peek()
	if t.kind == tOp && (t.text == "-" || t.text == "!") {
		p.next()
		p.enter(t)
		defer p.leave()
		x := p.unary()
		u := &unaryExpr{pos: t.pos, op: t.text, x: x, h: 1 + height(x)}
		p.checkHeight(t, u)
		return u
	}
	return p.primary()
}

func (p *parser) primary() expr {
	t := p.next()
	switch t.kind {
	case tInt:
		return &intLit{pos: t.pos, v: t.num}
	case tString:
		return &strLit{pos: t.pos, v: t.text}
	case tKeyword:
		if t.text == "true" || t.text == "false" {
			return &boolLit{pos: t.pos, v: t.text == "true"}
		}
	case tIdent:
		switch {
		case p.is("("):
			p.next()
			c := &callExpr{pos: t.pos, name: t.text}
			if !p.is(")") {
				p.enter(t)
				c.args = append(c.args, p.expr())
				for p.is(",") {
					p.next()
					c.args = append(c.args, p.expr())
				}
				p.leave()
			}
			p.expect(")")
			for _, a := range c.args {
				c.h = max(c.h, 1+height(a))
			}
			p.checkHeight(t, c)
			return c
		case p.is("."):
			p.next()
			return &member{pos: t.pos, enum: t.text, variant: p.identifier().name}
		}
		return &ident{pos: t.pos, name: t.text}
	case tOp:
		if t.text == "(" {
			p.enter(t)
			x := p.expr()
			p.leave()
			p.expect(")")
			return x
		}
	}
	p.fail(t, "expected expression, found %s", t)
	return nil
}
