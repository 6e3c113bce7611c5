package fuzzing

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
)

// goCorpusHeader starts every file of a Go fuzz corpus (testdata/fuzz/FuzzX/*).
const goCorpusHeader = "go test fuzz v1"

// GoValue is one argument of a Go fuzz corpus entry: its type as written
// ([]byte, string, int, uint8, float64, bool, rune, byte, ...) and its
// value: the bytes of a []byte or string, else the literal's text.
type GoValue struct {
	Type  string
	Bytes []byte // []byte and string values
	Text  string // the literal as written, for every type
}

// ParseGoCorpus reads a file in the `go test fuzz v1` format: the header
// line, then one Go call expression per line, T(literal), where T is []byte,
// string, a sized integer or float type, bool, rune or byte, and the
// literal is a (possibly negative) basic literal, a quoted string, or for
// floats math.Inf/NaN spelled as Go writes them. Errors name the line and
// what was wrong. It never panics on any input (fuzzed).
func ParseGoCorpus(b []byte) ([]GoValue, error) {
	text := strings.ReplaceAll(string(b), "\r\n", "\n")
	lines := strings.Split(text, "\n")
	if len(lines) == 0 || strings.TrimSpace(lines[0]) != goCorpusHeader {
		return nil, fmt.Errorf("go fuzz corpus: line 1: want %q", goCorpusHeader)
	}
	var out []GoValue
	for i, l := range lines[1:] {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		v, err := parseGoValue(l)
		if err != nil {
			return nil, fmt.Errorf("go fuzz corpus: line %d: %w", i+2, err)
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, errors.New("go fuzz corpus: no values")
	}
	return out, nil
}

var goIntBits = map[string]int{"int": 64, "int8": 8, "int16": 16, "int32": 32, "int64": 64, "rune": 32,
	"uint": 64, "uint8": 8, "uint16": 16, "uint32": 32, "uint64": 64, "byte": 8}

func parseGoValue(l string) (GoValue, error) {
	if len(l) > 1<<20 {
		return GoValue{}, errors.New("value longer than 1 MiB")
	}
	e, err := parser.ParseExpr(l)
	if err != nil {
		return GoValue{}, fmt.Errorf("not a Go expression: %v", err)
	}
	call, ok := e.(*ast.CallExpr)
	if !ok || len(call.Args) != 1 || call.Ellipsis.IsValid() {
		return GoValue{}, errors.New("want T(value)")
	}
	typ := ""
	switch f := call.Fun.(type) {
	case *ast.Ident:
		typ = f.Name
	case *ast.ArrayType:
		if id, ok := f.Elt.(*ast.Ident); ok && f.Len == nil && (id.Name == "byte" || id.Name == "uint8") {
			typ = "[]byte"
		}
	case *ast.ParenExpr:
		if at, ok := f.X.(*ast.ArrayType); ok && at.Len == nil {
			if id, ok := at.Elt.(*ast.Ident); ok && id.Name == "byte" {
				typ = "[]byte"
			}
		}
	}
	arg := call.Args[0]
	lit := l[int(arg.Pos())-1 : int(arg.End())-1]
	v := GoValue{Type: typ, Text: lit}
	switch {
	case typ == "[]byte" || typ == "string":
		bl, ok := arg.(*ast.BasicLit)
		if !ok || bl.Kind != token.STRING {
			return GoValue{}, fmt.Errorf("%s wants a quoted string", typ)
		}
		s, err := strconv.Unquote(bl.Value)
		if err != nil {
			return GoValue{}, fmt.Errorf("bad string literal: %v", err)
		}
		v.Bytes = []byte(s)
	case typ == "bool":
		id, ok := arg.(*ast.Ident)
		if !ok || id.Name != "true" && id.Name != "false" {
			return GoValue{}, errors.New("bool wants true or false")
		}
	case goIntBits[typ] > 0:
		if err := checkNumber(arg, typ); err != nil {
			return GoValue{}, err
		}
	case typ == "float32" || typ == "float64":
		if !floatLiteral(arg) {
			return GoValue{}, fmt.Errorf("%s wants a number", typ)
		}
	default:
		return GoValue{}, fmt.Errorf("unsupported type %q", typ)
	}
	return v, nil
}

// checkNumber accepts an integer literal, a negated one, or a character
// literal (rune and byte values), within the type's range.
func checkNumber(arg ast.Expr, typ string) error {
	neg := false
	if u, ok := arg.(*ast.UnaryExpr); ok && u.Op == token.SUB {
		neg, arg = true, u.X
	}
	bl, ok := arg.(*ast.BasicLit)
	if !ok {
		return fmt.Errorf("%s wants a number", typ)
	}
	switch bl.Kind {
	case token.CHAR:
		if _, _, _, err := strconv.UnquoteChar(strings.Trim(bl.Value, "'"), '\''); err != nil {
			return fmt.Errorf("bad character literal: %v", err)
		}
		return nil
	case token.INT:
		s := bl.Value
		if neg {
			s = "-" + s
		}
		bits := goIntBits[typ]
		var err error
		if strings.HasPrefix(typ, "uint") || typ == "byte" {
			if neg {
				return fmt.Errorf("%s cannot be negative", typ)
			}
			_, err = strconv.ParseUint(s, 0, bits)
		} else {
			_, err = strconv.ParseInt(s, 0, bits)
		}
		if err != nil {
			return fmt.Errorf("%s out of range or malformed: %v", typ, err)
		}
		return nil
	}
	return fmt.Errorf("%s wants a number", typ)
}

// floatLiteral accepts a number, a negated one, Go's own +Inf, -Inf and
// NaN, or math.Inf(±1) / math.NaN().
func floatLiteral(arg ast.Expr) bool {
	if u, ok := arg.(*ast.UnaryExpr); ok && (u.Op == token.SUB || u.Op == token.ADD) {
		if id, ok := u.X.(*ast.Ident); ok {
			return id.Name == "Inf"
		}
		if u.Op == token.ADD {
			return false
		}
		arg = u.X
	}
	switch a := arg.(type) {
	case *ast.Ident:
		return a.Name == "NaN"
	case *ast.BasicLit:
		return a.Kind == token.INT || a.Kind == token.FLOAT
	case *ast.CallExpr:
		sel, ok := a.Fun.(*ast.SelectorExpr)
		if !ok {
			return false
		}
		pkg, ok := sel.X.(*ast.Ident)
		return ok && pkg.Name == "math" && (sel.Sel.Name == "Inf" || sel.Sel.Name == "NaN")
	}
	return false
}

// FormatGoCorpus writes values ([]byte or string each, the common fuzz
// target shapes) as a `go test fuzz v1` file.
func FormatGoCorpus(values ...GoValue) []byte {
	var b strings.Builder
	b.WriteString(goCorpusHeader + "\n")
	for _, v := range values {
		switch v.Type {
		case "[]byte", "string":
			fmt.Fprintf(&b, "%s(%s)\n", v.Type, strconv.Quote(string(v.Bytes)))
		default:
			fmt.Fprintf(&b, "%s(%s)\n", v.Type, v.Text)
		}
	}
	return []byte(b.String())
}
