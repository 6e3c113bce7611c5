package evm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/qafleet/fleetd/clip"
	"golang.org/x/crypto/sha3"
)

// Keccak256 is Ethereum's keccak-256 (the legacy padding, not SHA3-256).
func Keccak256(data ...[]byte) [32]byte {
	h := sha3.NewLegacyKeccak256()
	for _, d := range data {
		h.Write(d)
	}
	return [32]byte(h.Sum(nil))
}

// Selector is the 4-byte selector of a canonical signature ("f(uint256)").
func Selector(signature string) [4]byte {
	k := Keccak256([]byte(signature))
	return [4]byte(k[:4])
}

// Function is one function of an ABI.
type Function struct {
	Signature  string // canonical: name(type,...)
	Mutability string // "view", "pure", "payable", "nonpayable"; "" when unknown (a signature from prose)
}

// Selector is the function's 4-byte selector.
func (f Function) Selector() [4]byte { return Selector(f.Signature) }

// ReadOnly reports whether the ABI says the function cannot change state.
func (f Function) ReadOnly() bool { return f.Mutability == "view" || f.Mutability == "pure" }

// Name is the function's name, without its parameters.
func (f Function) Name() string { n, _, _ := strings.Cut(f.Signature, "("); return n }

// Params are the signature's parameter types.
func (f Function) Params() []string { return splitParams(f.Signature) }

// maxABI bounds the ABI JSON ParseABI reads, and maxFunctions the
// functions it returns.
const (
	maxABI       = 4 << 20
	maxFunctions = 1024
	maxTupleNest = 8
)

type abiParam struct {
	Type       string     `json:"type"`
	Components []abiParam `json:"components"`
}

type abiEntry struct {
	Type            string     `json:"type"`
	Name            string     `json:"name"`
	Inputs          []abiParam `json:"inputs"`
	StateMutability string     `json:"stateMutability"`
	Constant        bool       `json:"constant"`
	Payable         bool       `json:"payable"`
}

// ParseABI reads the functions of a contract ABI in JSON: the array solc
// writes, or an object holding it under "abi" (Hardhat and Foundry
// artifacts). Entries that are not functions are skipped; a function whose
// name or a parameter type is not valid is an error naming the entry.
func ParseABI(data []byte) ([]Function, error) {
	if len(data) > maxABI {
		return nil, fmt.Errorf("abi: %d bytes is more than %d", len(data), maxABI)
	}
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '{' {
		var wrap struct {
			ABI json.RawMessage `json:"abi"`
		}
		if err := json.Unmarshal(data, &wrap); err != nil {
			return nil, fmt.Errorf("abi: %w", err)
		}
		if len(wrap.ABI) == 0 {
			return nil, fmt.Errorf("abi: a JSON object without an \"abi\" array")
		}
		data = wrap.ABI
	}
	var entries []abiEntry
	if err := json.Unmarshal(data, &entries); err != nil {
		return nil, fmt.Errorf("abi: want a JSON array of entries: %w", err)
	}
	var out []Function
	for i, e := range entries {
		if e.Type != "function" && e.Type != "" { // "" is a function in old ABIs
			continue
		}
		if !identifier.MatchString(e.Name) {
			return nil, fmt.Errorf("abi entry %d: function name %q is not an identifier", i, short(e.Name))
		}
		types := make([]string, len(e.Inputs))
		for j, p := range e.Inputs {
			t, err := canonicalParam(p, 0)
			if err != nil {
				return nil, fmt.Errorf("abi entry %d (%s) input %d: %w", i, e.Name, j, err)
			}
			types[j] = t
		}
		m := e.StateMutability
		switch {
		case m != "":
		case e.Constant:
			m = "view"
		case e.Payable:
			m = "payable"
		default:
			m = "nonpayable"
		}
		if len(out) == maxFunctions {
			return out, fmt.Errorf("abi: more than %d functions", maxFunctions)
		}
		out = append(out, Function{Signature: e.Name + "(" + strings.Join(types, ",") + ")", Mutability: m})
	}
	return out, nil
}

func canonicalParam(p abiParam, depth int) (string, error) {
	if !strings.HasPrefix(p.Type, "tuple") {
		return CanonicalType(p.Type)
	}
	if depth >= maxTupleNest {
		return "", fmt.Errorf("tuples nested more than %d deep", maxTupleNest)
	}
	suffix := p.Type[len("tuple"):]
	if suffix != "" && !arraySuffix.MatchString(suffix) {
		return "", fmt.Errorf("type %q is not a tuple or an array of tuples", short(p.Type))
	}
	parts := make([]string, len(p.Components))
	for i, c := range p.Components {
		t, err := canonicalParam(c, depth+1)
		if err != nil {
			return "", err
		}
		parts[i] = t
	}
	return "(" + strings.Join(parts, ",") + ")" + suffix, nil
}

var (
	identifier  = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$]{0,63}$`)
	arraySuffix = regexp.MustCompile(`^(\[[0-9]{0,6}\])+$`)
	elementary  = regexp.MustCompile(`^(address|bool|string|bytes|function|u?int[0-9]{0,3}|bytes[0-9]{1,2})((?:\[[0-9]{0,6}\])*)$`)
)

// CanonicalType returns the canonical form of an elementary ABI type, its
// arrays included: "uint" is "uint256", "int" is "int256". Tuples are not
// elementary; sizes out of range are errors naming the type.
func CanonicalType(t string) (string, error) {
	m := elementary.FindStringSubmatch(t)
	if m == nil {
		return "", fmt.Errorf("type %q is not an elementary ABI type", short(t))
	}
	base := m[1]
	switch {
	case base == "uint" || base == "int":
		base += "256"
	case strings.HasPrefix(base, "uint") || strings.HasPrefix(base, "int"):
		n, _ := strconv.Atoi(strings.TrimLeft(base, "uint"))
		if n < 8 || n > 256 || n%8 != 0 {
			return "", fmt.Errorf("type %q: integer size must be a multiple of 8 from 8 to 256", short(t))
		}
	case strings.HasPrefix(base, "bytes") && base != "bytes":
		n, _ := strconv.Atoi(base[len("bytes"):])
		if n < 1 || n > 32 {
			return "", fmt.Errorf("type %q: fixed bytes size must be 1 to 32", short(t))
		}
	case base == "function":
		base = "bytes24"
	}
	return base + m[2], nil
}

// proseSig finds function-like text: a name, then parameters that are
// types, each optionally followed by a location and a parameter name.
var proseSig = regexp.MustCompile(`\b([A-Za-z_$][A-Za-z0-9_$]{0,63})\(([A-Za-z0-9_\[\], ]{0,400})\)`)

// maxProse bounds the signatures SignaturesIn returns.
const maxProse = 256

// SignaturesIn returns the canonical signatures of the function-like
// mentions in text ("transferOwnership(address newOwner)",
// "function setFee(uint fee) external", "pause()"), each once, in order of
// appearance. A mention whose parameters are not ABI types ("f(x, y)") is
// not a signature. Their mutability is unknown.
func SignaturesIn(text string) []Function {
	var out []Function
	seen := map[string]bool{}
	for _, m := range proseSig.FindAllStringSubmatch(text, -1) {
		if len(out) == maxProse {
			break
		}
		sig, ok := proseSignature(m[1], m[2])
		if !ok || seen[sig] {
			continue
		}
		seen[sig] = true
		out = append(out, Function{Signature: sig})
	}
	return out
}

var locations = map[string]bool{"memory": true, "calldata": true, "storage": true, "payable": true, "indexed": true}

func proseSignature(name, params string) (string, bool) {
	switch name {
	case "if", "for", "while", "return", "returns", "require", "assert", "emit", "revert", "function", "event", "error", "modifier", "keccak256", "abi", "mapping":
		return "", false
	}
	if strings.TrimSpace(params) == "" {
		return name + "()", true
	}
	var types []string
	for _, p := range strings.Split(params, ",") {
		words := strings.Fields(p)
		if len(words) == 0 || len(words) > 3 {
			return "", false
		}
		t, err := CanonicalType(words[0])
		if err != nil {
			return "", false
		}
		for _, w := range words[1:] {
			if !locations[w] && !identifier.MatchString(w) {
				return "", false
			}
		}
		types = append(types, t)
	}
	return name + "(" + strings.Join(types, ",") + ")", true
}

// splitParams splits a canonical signature's parameter list at its top
// level commas.
func splitParams(sig string) []string {
	open := strings.IndexByte(sig, '(')
	if open < 0 || !strings.HasSuffix(sig, ")") {
		return nil
	}
	inner := sig[open+1 : len(sig)-1]
	if inner == "" {
		return nil
	}
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(inner); i++ {
		switch inner[i] {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, inner[start:i])
				start = i + 1
			}
		}
	}
	return append(out, inner[start:])
}

// short shortens s for a message (clip.Text at 48 bytes).
func short(s string) string { return clip.Text(s, 48) }
