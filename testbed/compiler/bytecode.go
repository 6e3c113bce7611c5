package compiler

import (
	"encoding/binary"
)

// Magic starts every module; Version follows it as a little-endian uint32.
const (
	Magic   = "\x00tlb"
	Version = 1
)

// Section ids, in the order they appear in a module.
const (
	sectionConstants = 1
	sectionEnums     = 2
	sectionFunctions = 3
	sectionGlobals   = 4
	sectionCode      = 5
)

// Opcodes. An operand written "u" is a uvarint; jump targets are
// little-endian uint32 offsets into the function's own code.
const (
	opHalt        byte = 0x00
	opConst       byte = 0x01 // u: constant index
	opGetGlobal   byte = 0x02 // u: slot
	opSetGlobal   byte = 0x03 // u: slot
	opGetLocal    byte = 0x04 // u: slot
	opSetLocal    byte = 0x05 // u: slot
	opPop         byte = 0x06
	opDup         byte = 0x07
	opAdd         byte = 0x10
	opSub         byte = 0x11
	opMul         byte = 0x12
	opDiv         byte = 0x13
	opMod         byte = 0x14
	opEq          byte = 0x15
	opNe          byte = 0x16
	opLt          byte = 0x17
	opLe          byte = 0x18
	opGt          byte = 0x19
	opGe          byte = 0x1a
	opNeg         byte = 0x1b
	opNot         byte = 0x1c
	opJump        byte = 0x20 // target
	opJumpIfFalse byte = 0x21 // target; pops
	opJumpIfTrue  byte = 0x22 // target; pops
	opCall        byte = 0x30 // u: function index; arguments on the stack
	opRet         byte = 0x31
	opRetNil      byte = 0x32
	opPrint       byte = 0x40
)

var unaryOps = map[string]byte{"-": opNeg, "!": opNot}

var binaryOps = map[string]byte{
	"+": opAdd, "-": opSub, "*": opMul, "/": opDiv, "%": opMod,
	"==": opEq, "!=": opNe, "<": opLt, "<=": opLe, ">": opGt, ">=": opGe,
}

// Constant tags.
const (
	tagInt    byte = 0
	tagString byte = 1
	tagBool   byte = 2
)

// value is a constant in the pool; comparable so the pool can dedupe.
type value struct {
	tag byte
	i   int64
	s   string
	b   bool
}

type enumInfo struct {
	name     string
	variants []string
	zero     string // the variant enum-typed slots start as
}

type function struct {
	name   string
	params int
	locals int // including params
	code   []byte
}

// module is a compiled program before encoding.
type module struct {
	consts  []value
	index   map[value]int
	enums   []enumInfo
	fns     []function
	globals int
	main    []byte
}

func newModule() *module { return &module{index: map[value]int{}} }

// constant returns the pool index of v, adding it if new.
func (m *module) constant(v value) int {
	if i, ok := m.index[v]; ok {
		return i
	}
	m.index[v] = len(m.consts)
	m.consts = append(m.consts, v)
	return len(m.consts) - 1
}

// encode lays the module out as described in the package documentation.
func (m *module) encode() []byte {
	out := []byte(Magic)
	out = binary.LittleEndian.AppendUint32(out, Version)
	section := func(id byte, payload []byte) {
		out = append(out, id)
		out = binary.AppendUvarint(out, uint64(len(payload)))
		out = append(out, payload...)
	}

	var p []byte
	p = binary.AppendUvarint(p, uint64(len(m.consts)))
	for _, v := range m.consts {
		p = append(p, v.tag)
		switch v.tag {
		case tagInt:
			p = binary.AppendVarint(p, v.i)
		case tagString:
			p = appendString(p, v.s)
		case tagBool:
			b := byte(0)
			if v.b {
				b = 1
			}
			p = append(p, b)
		}
	}
	section(sectionConstants, p)

	p = binary.AppendUvarint(nil, uint64(len(m.enums)))
	for _, e := range m.enums {
		p = appendString(p, e.name)
		p = binary.AppendUvarint(p, uint64(len(e.variants)))
		for _, v := range e.variants {
			p = appendString(p, v)
		}
		p = appendString(p, e.zero)
	}
	section(sectionEnums, p)

	// Function code follows the main program in the code section.
	p = binary.AppendUvarint(nil, uint64(len(m.fns)))
	offset := len(m.main)
	for _, f := range m.fns {
		p = appendString(p, f.name)
		p = binary.AppendUvarint(p, uint64(f.params))
		p = binary.AppendUvarint(p, uint64(f.locals))
		p = binary.AppendUvarint(p, uint64(offset))
		p = binary.AppendUvarint(p, uint64(len(f.code)))
		offset += len(f.code)
	}
	section(sectionFunctions, p)

	section(sectionGlobals, binary.AppendUvarint(nil, uint64(m.globals)))

	p = append([]byte(nil), m.main...)
	for _, f := range m.fns {
		p = append(p, f.code...)
	}
	section(sectionCode, p)
	return out
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// emitter accumulates one function's code.
type emitter struct {
	buf []byte
}

func (e *emitter) op(op byte) { e.buf = append(e.buf, op) }

func (e *emitter) opArg(op byte, arg int) {
	e.buf = append(e.buf, op)
	e.buf = binary.AppendUvarint(e.buf, uint64(arg))
}

// jump emits a jump with a target to patch later and returns where the target is.
func (e *emitter) jump(op byte) int {
	e.buf = append(e.buf, op, 0, 0, 0, 0)
	return len(e.buf) - 4
}

// jumpTo emits a jump to a known target.
func (e *emitter) jumpTo(op byte, target int) {
	e.buf = append(e.buf, op)
	e.buf = binary.LittleEndian.AppendUint32(e.buf, uint32(target))
}

// patch points the jump whose target is at at to the current end of code.
func (e *emitter) patch(at int) {
	binary.LittleEndian.PutUint32(e.buf[at:], uint32(len(e.buf)))
}
