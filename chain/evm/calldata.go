package evm

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/big"
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
		return nil, fmt.Errorf("signature %q: want name(type,...)", short(sig))
	}
	var types []abiType
	for _, p := range f.Params() {
		t, err := parseType(p)
		if err != nil {
			return nil, fmt.Errorf("signature %q: %w", short(sig), err)
		}
		types = append(types, t)
	}
	enc := encoder{fill: fill}
	args := enc.tuple(types)
	if enc.err != nil {
		return nil, fmt.Errorf("signature %q: %w", short(sig), enc.err)
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
		return abiType{}, fmt.Errorf("tuple parameter %q is not supported", short(s))
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
				return abiType{}, fmt.Errorf("type %q: bad array size", short(s))
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
	return abiType{}, fmt.Errorf("type %q is not supported", short(s))
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

// EncodeArgs encodes a call of the canonical signature sig with the given
// argument texts, one per parameter: an address as 0x and 40 hex digits, an
// integer in decimal (negative for intN), a bool as true or false, a
// string as itself, bytes as the text's UTF-8 bytes or, given as 0x and
// hex, those bytes, and bytes32 (any bytesN) as 0x and hex or, for other
// text, keccak256 of the text (how registries key metadata by field name).
// Arrays and tuples are not supported; the error names the parameter.
func EncodeArgs(sig string, args []string) ([]byte, error) {
	f := Function{Signature: sig}
	params := f.Params()
	if !identifier.MatchString(f.Name()) || !strings.HasSuffix(sig, ")") {
		return nil, fmt.Errorf("signature %q: want name(type,...)", short(sig))
	}
	if len(params) != len(args) {
		return nil, fmt.Errorf("signature %q takes %d arguments, got %d", short(sig), len(params), len(args))
	}
	heads := make([][]byte, len(params))
	tails := make([][]byte, len(params))
	for i, p := range params {
		t, err := parseType(p)
		if err != nil {
			return nil, fmt.Errorf("signature %q: %w", short(sig), err)
		}
		if t.base == "array" {
			return nil, fmt.Errorf("signature %q argument %d: arrays are not supported", short(sig), i+1)
		}
		w, dyn, err := encodeText(t, args[i])
		if err != nil {
			return nil, fmt.Errorf("signature %q argument %d (%s): %w", short(sig), i+1, p, err)
		}
		if dyn {
			tails[i] = w
		} else {
			heads[i] = w
		}
	}
	sel := Selector(sig)
	out := append([]byte{}, sel[:]...)
	off := 32 * len(params)
	for i := range params {
		if tails[i] != nil {
			out = append(out, word(uint64(off))...)
			off += len(tails[i])
		} else {
			out = append(out, heads[i]...)
		}
	}
	for _, tl := range tails {
		out = append(out, tl...)
	}
	return out, nil
}

// encodeText encodes one argument text of elementary type t.
func encodeText(t abiType, s string) ([]byte, bool, error) {
	w := make([]byte, 32)
	switch t.base {
	case "address":
		b, err := hexArg(s)
		if err != nil || len(b) != 20 {
			return nil, false, fmt.Errorf("want 0x and 40 hex digits, got %q", short(s))
		}
		copy(w[12:], b)
	case "bool":
		switch s {
		case "true":
			w[31] = 1
		case "false":
		default:
			return nil, false, fmt.Errorf("want true or false, got %q", short(s))
		}
	case "uint", "int":
		n, ok := new(big.Int).SetString(s, 10)
		if !ok || t.base == "uint" && n.Sign() < 0 || n.BitLen() > t.size {
			return nil, false, fmt.Errorf("want a %s%d in decimal, got %q", t.base, t.size, short(s))
		}
		if n.Sign() < 0 {
			n.Add(n, new(big.Int).Lsh(big.NewInt(1), 256)) // two's complement
		}
		n.FillBytes(w)
	case "fixedbytes":
		b, err := hexArg(s)
		switch {
		case err == nil && len(b) <= t.size:
			copy(w, b)
		case t.size == 32:
			k := Keccak256([]byte(s))
			copy(w, k[:])
		default:
			return nil, false, fmt.Errorf("want 0x and at most %d bytes of hex, got %q", t.size, short(s))
		}
	case "string", "bytes":
		b := []byte(s)
		if t.base == "bytes" {
			if h, err := hexArg(s); err == nil {
				b = h
			}
		}
		out := word(uint64(len(b)))
		data := make([]byte, (len(b)+31)/32*32)
		copy(data, b)
		return append(out, data...), true, nil
	default:
		return nil, false, fmt.Errorf("type %s is not supported", t.base)
	}
	return w, false, nil
}

// hexArg reads 0x-prefixed hex.
func hexArg(s string) ([]byte, error) {
	if !strings.HasPrefix(s, "0x") || len(s)%2 != 0 {
		return nil, fmt.Errorf("not 0x hex")
	}
	return hex.DecodeString(s[2:])
}

// ReturnedBytes decodes return data holding one dynamic bytes or string
// value; the error says what is wrong with data that does not.
func ReturnedBytes(data []byte) ([]byte, error) {
	if len(data) < 64 {
		return nil, fmt.Errorf("return data of %d bytes: too short for bytes", len(data))
	}
	off := new(big.Int).SetBytes(data[:32])
	if !off.IsUint64() || off.Uint64() > uint64(len(data)-32) {
		return nil, fmt.Errorf("return data: offset out of range")
	}
	o := int(off.Uint64())
	n := new(big.Int).SetBytes(data[o : o+32])
	if !n.IsUint64() || n.Uint64() > uint64(len(data)-o-32) {
		return nil, fmt.Errorf("return data: length out of range")
	}
	return data[o+32 : o+32+int(n.Uint64())], nil
}
