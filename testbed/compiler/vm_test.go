package compiler

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// This file is a reference interpreter for compiled modules, used only by
// tests to check that the bytecode means what the source says.

// decoded is a module read back from its encoding.
type decoded struct {
	consts  []any
	enums   []enumInfo
	fns     []function // code sliced out of the code section
	globals int
	main    []byte
}

type reader struct {
	b   []byte
	err error
}

func (r *reader) uvarint() int {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errors.New("bad uvarint")
		return 0
	}
	r.b = r.b[n:]
	return int(v)
}

func (r *reader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err = errors.New("bad varint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) bytes(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.err = errors.New("short read")
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) str() string { return string(r.bytes(r.uvarint())) }

// decode parses a module and checks its layout.
func decode(b []byte) (*decoded, error) {
	if !strings.HasPrefix(string(b), Magic) || len(b) < 8 {
		return nil, errors.New("bad magic")
	}
	if v := binary.LittleEndian.Uint32(b[4:]); v != Version {
		return nil, fmt.Errorf("version %d", v)
	}
	r := &reader{b: b[8:]}
	m := &decoded{}
	var code []byte
	type span struct{ off, n int }
	var spans []span
	for want := byte(sectionConstants); want <= sectionCode; want++ {
		id := r.bytes(1)
		if r.err != nil || id[0] != want {
			return nil, fmt.Errorf("want section %d", want)
		}
		s := &reader{b: r.bytes(r.uvarint())}
		switch want {
		case sectionConstants:
			for n := s.uvarint(); n > 0 && s.err == nil; n-- {
				switch tag := s.bytes(1); {
				case s.err != nil:
				case tag[0] == tagInt:
					m.consts = append(m.consts, s.varint())
				case tag[0] == tagString:
					m.consts = append(m.consts, s.str())
				case tag[0] == tagBool:
					m.consts = append(m.consts, s.bytes(1)[0] == 1)
				default:
					return nil, fmt.Errorf("bad constant tag %d", tag[0])
				}
			}
		case sectionEnums:
			for n := s.uvarint(); n > 0 && s.err == nil; n-- {
				e := enumInfo{name: s.str()}
				for k := s.uvarint(); k > 0 && s.err == nil; k-- {
					e.variants = append(e.variants, s.str())
				}
				e.zero = s.str()
				m.enums = append(m.enums, e)
			}
		case sectionFunctions:
			for n := s.uvarint(); n > 0 && s.err == nil; n-- {
				f := function{name: s.str(), params: s.uvarint(), locals: s.uvarint()}
				spans = append(spans, span{s.uvarint(), s.uvarint()})
				m.fns = append(m.fns, f)
			}
		case sectionGlobals:
			m.globals = s.uvarint()
		case sectionCode:
			code = s.b
		}
		if s.err != nil {
			return nil, fmt.Errorf("section %d: %w", want, s.err)
		}
	}
	if r.err != nil || len(r.b) != 0 {
		return nil, errors.New("trailing bytes or short module")
	}
	mainEnd := len(code)
	if len(spans) > 0 {
		mainEnd = spans[0].off
	}
	if mainEnd > len(code) {
		return nil, errors.New("function offset past code")
	}
	m.main = code[:mainEnd]
	for i, s := range spans {
		if s.off+s.n > len(code) {
			return nil, errors.New("function code past end")
		}
		m.fns[i].code = code[s.off : s.off+s.n]
	}
	return m, nil
}

// run interprets m and returns what it printed, one line per print. It stops
// with an error after steps instructions.
func run(m *decoded, steps int) (string, error) {
	var out strings.Builder
	globals := make([]any, m.globals)
	var exec func(code []byte, locals []any, depth int) (any, error)
	exec = func(code []byte, locals []any, depth int) (any, error) {
		if depth > 200 {
			return nil, errors.New("call depth")
		}
		var stack []any
		pop := func() any {
			v := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			return v
		}
		for pc := 0; pc < len(code); {
			if steps--; steps < 0 {
				return nil, errors.New("step budget exhausted")
			}
			op := code[pc]
			pc++
			arg := func() int {
				v, n := binary.Uvarint(code[pc:])
				pc += n
				return int(v)
			}
			target := func() int {
				t := int(binary.LittleEndian.Uint32(code[pc:]))
				pc += 4
				return t
			}
			switch op {
			case opHalt:
				return nil, nil
			case opConst:
				stack = append(stack, m.consts[arg()])
			case opGetGlobal:
				stack = append(stack, globals[arg()])
			case opSetGlobal:
				globals[arg()] = pop()
			case opGetLocal:
				stack = append(stack, locals[arg()])
			case opSetLocal:
				locals[arg()] = pop()
			case opPop:
				pop()
			case opDup:
				stack = append(stack, stack[len(stack)-1])
			case opNeg:
				stack = append(stack, -pop().(int64))
			case opNot:
				stack = append(stack, !truthy(pop()))
			case opJump:
				pc = target()
			case opJumpIfFalse, opJumpIfTrue:
				t := target()
				if truthy(pop()) == (op == opJumpIfTrue) {
					pc = t
				}
			case opCall:
				f := m.fns[arg()]
				fl := make([]any, f.locals)
				copy(fl, stack[len(stack)-f.params:])
				stack = stack[:len(stack)-f.params]
				v, err := exec(f.code, fl, depth+1)
				if err != nil {
					return nil, err
				}
				stack = append(stack, v)
			case opRet:
				return pop(), nil
			case opRetNil:
				return nil, nil
			case opPrint:
				out.WriteString(show(pop()) + "\n")
			default:
				y, x := pop(), pop()
				v, err := binop(op, x, y)
				if err != nil {
					return nil, err
				}
				stack = append(stack, v)
			}
		}
		return nil, errors.New("ran off the end of the code")
	}
	_, err := exec(m.main, nil, 0)
	return out.String(), err
}

func truthy(v any) bool {
	switch v := v.(type) {
	case int64:
		return v != 0
	case string:
		return v != ""
	case bool:
		return v
	}
	return false
}

func show(v any) string {
	switch v := v.(type) {
	case nil:
		return "nil"
	case string:
		return v
	case int64:
		return strconv.FormatInt(v, 10)
	}
	return fmt.Sprint(v)
}

func binop(op byte, x, y any) (any, error) {
	switch op {
	case opEq:
		return x == y, nil
	case opNe:
		return x != y, nil
	}
	switch a := x.(type) {
	case int64:
		b, ok := y.(int64)
		if !ok {
			break
		}
		switch op {
		case opAdd:
			return a + b, nil
		case opSub:
			return a - b, nil
		case opMul:
			return a * b, nil
		case opDiv, opMod:
			if b == 0 {
				return nil, errors.New("division by zero")
			}
			if op == opDiv {
				return a / b, nil
			}
			return a % b, nil
		case opLt:
			return a < b, nil
		case opLe:
			return a <= b, nil
		case opGt:
			return a > b, nil
		case opGe:
			return a >= b, nil
		}
	case string:
		b, ok := y.(string)
		if !ok {
			break
		}
		switch op {
		case opAdd:
			return a + b, nil
		case opLt:
			return a < b, nil
		case opLe:
			return a <= b, nil
		case opGt:
			return a > b, nil
		case opGe:
			return a >= b, nil
		}
	}
	return nil, fmt.Errorf("op %#x on %T and %T", op, x, y)
}
