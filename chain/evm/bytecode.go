package evm

import (
	"errors"
	"fmt"
	"slices"
)

// MaxCode is the largest code Selectors reads: twice EIP-7907's proposed
// 48 KiB limit, well above any deployable contract.
const MaxCode = 96 << 10

// ErrNoCode means the address holds no code: an externally owned account,
// a contract not deployed yet, or one that destroyed itself.
var ErrNoCode = errors.New("no code at the address (an account, not a contract)")

// ErrNoDispatcher means the code is not a contract with a function
// dispatcher: it never reads its calldata, or compares no 4-byte value
// with it.
var ErrNoDispatcher = errors.New("no function dispatcher in the code")

// dispatcherSpan is how many instructions from a PUSH4 selector a short
// selector push may be (solc's dispatcher compares one selector in about
// five instructions, in blocks of a few; binary-search splits sit between).
const dispatcherSpan = 48

// Opcodes the dispatcher reading needs.
const (
	opEQ           = 0x14
	opXOR          = 0x18
	opSUB          = 0x03
	opCALLDATALOAD = 0x35
	opJUMPI        = 0x57
	opPUSH1        = 0x60
	opPUSH4        = 0x63
	opPUSH32       = 0x7f
	opDUP1         = 0x80
	opSWAP16       = 0x9f
)

// Code is what Selectors read from runtime bytecode.
type Code struct {
	Selectors [][4]byte // in the order the dispatcher compares them, each once
	Size      int       // bytes of code, metadata included
	Metadata  int       // bytes of the compiler's CBOR metadata trailer (0: none found)
}

// instr is one instruction: its offset, opcode and push data.
type instr struct {
	op  byte
	arg []byte
}

// Selectors reads the function selectors of runtime bytecode: every 4-byte
// value the code pushes and then compares for equality (EQ, or XOR/SUB as
// some compilers do) before a conditional jump, the shape of solc's and
// Vyper's dispatchers. PUSH data is skipped as data, never read as
// instructions, and the compiler's metadata trailer (CBOR, its length in
// the last two bytes) is not read as code. Binary-search pivots (GT/LT
// against a pushed selector) are not selectors and are not returned.
//
// The error wraps ErrNoCode for empty code, ErrNoDispatcher for code that
// never loads calldata or compares no selector, and names the size for
// code larger than MaxCode.
func Selectors(code []byte) (Code, error) {
	out := Code{Size: len(code)}
	switch {
	case len(code) == 0:
		return out, ErrNoCode
	case len(code) > MaxCode:
		return out, fmt.Errorf("code of %d bytes is larger than %d: not runtime bytecode", len(code), MaxCode)
	}
	body := code
	if n := metadataLen(code); n > 0 {
		out.Metadata = n
		body = code[:len(code)-n]
	}
	ins := decode(body)
	loads := false
	var at []int // instruction indexes of the PUSH4 selectors
	for i, in := range ins {
		if in.op == opCALLDATALOAD {
			loads = true
		}
		if in.op == opPUSH4 && len(in.arg) == 4 && comparedThenJumps(ins[i+1:]) {
			at = append(at, i)
		}
	}
	// A selector with leading zero bytes is pushed shorter (solc's
	// optimizer: PUSH3 0x1f91ce for 0x001f91ce). A short push counts only
	// in solc's own shape, DUP1 PUSHn v EQ ... JUMPI, and next to a PUSH4
	// selector: small constants are compared everywhere else in code.
	near := func(i int) bool {
		for _, j := range at {
			if j-i <= dispatcherSpan && i-j <= dispatcherSpan {
				return true
			}
		}
		return false
	}
	var short []int
	for i, in := range ins {
		if in.op >= opPUSH1 && in.op < opPUSH4 && i > 0 && ins[i-1].op == opDUP1 && len(in.arg) == int(in.op-opPUSH1)+1 &&
			in.arg[0] != 0 && i+1 < len(ins) && ins[i+1].op == opEQ && comparedThenJumps(ins[i+1:]) && near(i) {
			short = append(short, i)
		}
	}
	seen := map[[4]byte]bool{}
	for i := range ins {
		if !slices.Contains(at, i) && !slices.Contains(short, i) {
			continue
		}
		var s [4]byte
		copy(s[4-len(ins[i].arg):], ins[i].arg)
		if !seen[s] {
			seen[s] = true
			out.Selectors = append(out.Selectors, s)
		}
	}
	switch {
	case !loads:
		return out, fmt.Errorf("%w: the code never loads its calldata (%d bytes)", ErrNoDispatcher, len(code))
	case len(out.Selectors) == 0:
		return out, fmt.Errorf("%w: no 4-byte value is compared with the calldata (%d bytes)", ErrNoDispatcher, len(code))
	}
	return out, nil
}

// comparedThenJumps reports whether the instructions after a PUSH4 compare
// it (after at most two DUP/SWAP) and then jump conditionally within three
// more instructions.
func comparedThenJumps(next []instr) bool {
	i := 0
	for i < len(next) && i < 2 && next[i].op >= opDUP1 && next[i].op <= opSWAP16 {
		i++
	}
	if i >= len(next) {
		return false
	}
	switch next[i].op {
	case opEQ, opXOR, opSUB:
	default:
		return false
	}
	for j := i + 1; j < len(next) && j <= i+3; j++ {
		if next[j].op == opJUMPI {
			return true
		}
	}
	return false
}

// decode splits code into instructions, PUSH data attached to its PUSH. A
// PUSH cut short by the end of the code keeps what is there.
func decode(code []byte) []instr {
	out := make([]instr, 0, len(code)/2)
	for i := 0; i < len(code); {
		op := code[i]
		in := instr{op: op}
		i++
		if op >= opPUSH1 && op <= opPUSH32 {
			n := int(op-opPUSH1) + 1
			end := min(i+n, len(code))
			in.arg = code[i:end]
			i = end
		}
		out = append(out, in)
	}
	return out
}

// metadataLen returns the length of solc's or Vyper's CBOR metadata
// trailer, its two length bytes included, or 0 when the code does not end
// in one: the last two bytes give the CBOR length, and the CBOR must start
// with a map header (0xa1..0xb7, or 0xbf for an indefinite map).
func metadataLen(code []byte) int {
	if len(code) < 3 {
		return 0
	}
	n := int(code[len(code)-2])<<8 | int(code[len(code)-1])
	if n == 0 || n+2 > len(code) {
		return 0
	}
	h := code[len(code)-2-n]
	if (h < 0xa1 || h > 0xb7) && h != 0xbf {
		return 0
	}
	return n + 2
}
