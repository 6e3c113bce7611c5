package evm

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
)

// Fill chooses the argument values Calldata encodes for a signature: the
// zero value of every type, or values a probe derives from the type (the
// caller's address, a small number, a short text, true).
type Fill struct {
	Zero   bool     // every argument its zero value; the fields below are ignored
	Caller [20]byte // for address parameters
	Word   uint64   // for integers (and array lengths are 1)
	Text   string   // for string and bytes parameters, and the left of bytesN
}

// maxArgBytes bounds the calldata Calldata builds (a fixed array of a
// million elements is a valid type).
const maxArgBytes = 64 << 10

// Calldata encodes a call of the canonical signature sig with arguments
// chosen by fill, in the contract ABI's encoding. Tuple parameters are not
// supported: the error says so, as it names any type it cannot read.
func Calldata(sig string, fill Fill) ([]byte, error) {
	f := Function{Signature: sig}
	if !identifier.MatchString(f.Name()) || !strings.HasSuffix(sig, ")") {
		return nil, fmt.Errorf("signature %q: want name(type,...)", clip(sig))
	}
	var types []abiType
	for _, p := range f.Params() {
		t, err := parseType(p)
		if err != nil {
			return nil, fmt.Errorf("signature %q: %w", clip(sig), err)
		}
		types = append(types, t)
	}
	enc := encoder{fill: fill}
	args := enc.tuple(types)
	if enc.err != nil {
		return nil, fmt.Errorf("signature %q: %w", clip(sig), enc.err)
	}
	sel := Selector(sig)
	return append(sel[:], args...), nil
}

// abiType is a parsed parameter type.
type abiType struct {
	base string   // "uint", "int", "address", "bool", "bytes", "string", "fixedbytes"
	size int      // bits of an integer, bytes of fixedbytes
	dims []int    // array dimensions, innermost first; -1 for dynamic
	elem *abiType // the element type of an array (dims[len-1] is this array's)
}

func parseType(s string) (abiType, error) {
	if strings.HasPrefix(s, "(") {
		return abiType{}, fmt.Errorf("tuple parameter %q is not supported", clip(s))
	}
	c, err := CanonicalType(s)
	if err != nil {
		return abiType{}, err
	}
	if i := strings.LastIndexByte(c, '['); i >= 0 {
		elem, err := parseType(c[:i])
		if err != nil {
			return abiType{}, err
		}
		n := -1
		if inner := c[i+1 : len(c)-1]; inner != "" {
			if n, err = strconv.Atoi(inner); err != nil || n == 0 {
				return abiType{}, fmt.Errorf("type %q: bad array size", clip(s))
			}
		}
		return abiType{base: "array", size: n, elem: &elem}, nil
	}
	switch {
	case c == "address" || c == "bool" || c == "string" || c == "bytes":
		return abiType{base: c}, nil
	case strings.HasPrefix(c, "uint"):
		n, _ := strconv.Atoi(c[4:])
		return abiType{base: "uint", size: n}, nil
	case strings.HasPrefix(c, "int"):
		n, _ := strconv.Atoi(c[3:])
		return abiType{base: "int", size: n}, nil
	case strings.HasPrefix(c, "bytes"):
		n, _ := strconv.Atoi(c[5:])
		return abiType{base: "fixedbytes", size: n}, nil
	}
	return abiType{}, fmt.Errorf("type %q is not supported", clip(s))
}

func (t abiType) dynamic() bool {
	switch t.base {
	case "string", "bytes":
		return true
	case "array":
		return t.size < 0 || t.elem.dynamic()
	}
	return false
}

type encoder struct {
	fill Fill
	n    int // bytes produced so far, to stop at maxArgBytes
	err  error
}

func (e *encoder) grow(n int) bool {
	e.n += n
	if e.n > maxArgBytes && e.err == nil {
		e.err = fmt.Errorf("arguments longer than %d bytes", maxArgBytes)
	}
	return e.err == nil
}

// tuple encodes values of types as the ABI encodes a tuple: heads (static
// values in place, offsets of dynamic ones), then the dynamic tails.
func (e *encoder) tuple(types []abiType) []byte {
	heads := make([][]byte, len(types))
	tails := make([][]byte, len(types))
	headLen := 0
	for i, t := range types {
		if e.err != nil {
			return nil
		}
		v := e.value(t)
		if t.dynamic() {
			tails[i] = v
			headLen += 32
		} else {
			heads[i] = v
			headLen += len(v)
		}
	}
	out := make([]byte, 0, headLen)
	off := headLen
	for i, t := range types {
		if t.dynamic() {
			out = append(out, word(uint64(off))...)
			off += len(tails[i])
		} else {
			out = append(out, heads[i]...)
		}
	}
	for _, tl := range tails {
		out = append(out, tl...)
	}
	return out
}

// value encodes one value of t.
func (e *encoder) value(t abiType) []byte {
	if !e.grow(32) {
		return nil
	}
	f := e.fill
	switch t.base {
	case "uint", "int":
		if f.Zero {
			return word(0)
		}
		return word(f.Word)
	case "address":
		w := make([]byte, 32)
		if !f.Zero {
			copy(w[12:], f.Caller[:])
		}
		return w
	case "bool":
		if f.Zero {
			return word(0)
		}
		return word(1)
	case "fixedbytes":
		w := make([]byte, 32)
		if !f.Zero {
			copy(w[:t.size], f.Text)
		}
		return w
	case "string", "bytes":
		if f.Zero {
			return word(0)
		}
		if !e.grow(len(f.Text) + 32) {
			return nil
		}
		out := word(uint64(len(f.Text)))
		data := make([]byte, (len(f.Text)+31)/32*32)
		copy(data, f.Text)
		return append(out, data...)
	case "array":
		n := t.size
		if n < 0 {
			n = 1
			if f.Zero {
				n = 0
			}
		}
		if !e.grow(n) { // at least a byte per element: stops a huge fixed array early
			return nil
		}
		elems := make([]abiType, n)
		for i := range elems {
			elems[i] = *t.elem
		}
		body := e.tuple(elems)
		if t.size < 0 {
			return append(word(uint64(n)), body...)
		}
		return body
	}
	e.err = fmt.Errorf("type %s is not supported", t.base)
	return nil
}

// word is n as a 32-byte big-endian word.
func word(n uint64) []byte {
	w := make([]byte, 32)
	binary.BigEndian.PutUint64(w[24:], n)
	return w
}
