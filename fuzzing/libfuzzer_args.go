package fuzzing

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// argSize is the bytes a scalar argument takes in a libFuzzer input.
var argSize = map[string]int{"bool": 1, "int8": 1, "uint8": 1, "int16": 2, "uint16": 2, "int32": 4, "uint32": 4,
	"float32": 4, "int": 8, "int64": 8, "uint": 8, "uint64": 8, "uintptr": 8, "float64": 8}

// argType normalizes a `go test fuzz v1` type name to the harness's kind
// names (byte is uint8, rune int32).
func argType(t string) string {
	switch t {
	case "byte":
		return "uint8"
	case "rune":
		return "int32"
	}
	return t
}

// checkArgTypes reports a type the harness cannot lay out.
func checkArgTypes(types []string) error {
	if len(types) == 0 {
		return fmt.Errorf("the fuzz function takes no arguments")
	}
	for _, t := range types {
		if t != "[]byte" && t != "string" && argSize[t] == 0 {
			return fmt.Errorf("unsupported fuzz argument type %q", t)
		}
	}
	return nil
}

// takeArg returns n bytes from the front of data (zero-padded when short)
// and the rest.
func takeArg(data []byte, n int) ([]byte, []byte) {
	b := make([]byte, 8)
	k := copy(b[:n], data)
	return b[:n], data[k:]
}

// decodeArgs reads a libFuzzer input as the generated harness does (see
// libfuzzer_harness.go) and returns the values as `go test fuzz v1` values,
// so FormatGoCorpus writes the input the go engine and ReplayGo take.
func decodeArgs(data []byte, types []string) []GoValue {
	out := make([]GoValue, 0, len(types))
	for i, t := range types {
		last := i == len(types)-1
		v := GoValue{Type: t}
		switch t {
		case "[]byte", "string":
			var b []byte
			if last {
				b, data = data, nil
			} else {
				var l []byte
				l, data = takeArg(data, 4)
				n := int(binary.LittleEndian.Uint32(l))
				if n < 0 || n > len(data) {
					n = len(data)
				}
				b, data = data[:n], data[n:]
			}
			v.Bytes = append([]byte{}, b...)
		case "bool":
			var b []byte
			b, data = takeArg(data, 1)
			v.Text = strconv.FormatBool(b[0]&1 == 1)
		case "float32":
			var b []byte
			b, data = takeArg(data, 4)
			v.Text = floatText(float64(math.Float32frombits(binary.LittleEndian.Uint32(b))), 32)
		case "float64":
			var b []byte
			b, data = takeArg(data, 8)
			v.Text = floatText(math.Float64frombits(binary.LittleEndian.Uint64(b)), 64)
		default:
			size := argSize[t]
			var b []byte
			b, data = takeArg(data, size)
			full := make([]byte, 8)
			copy(full, b)
			u := binary.LittleEndian.Uint64(full)
			if strings.HasPrefix(t, "int") {
				var s int64
				switch size {
				case 1:
					s = int64(int8(u))
				case 2:
					s = int64(int16(u))
				case 4:
					s = int64(int32(u))
				default:
					s = int64(u)
				}
				v.Text = strconv.FormatInt(s, 10)
			} else {
				v.Text = strconv.FormatUint(u, 10)
			}
		}
		out = append(out, v)
	}
	return out
}

// floatText writes a float as go test does (%v: +Inf, -Inf and NaN for
// the special values).
func floatText(f float64, bits int) string {
	return strconv.FormatFloat(f, 'g', -1, bits)
}

// encodeArgs lays out `go test fuzz v1` values as a libFuzzer input for a
// fuzz function taking types: the inverse of decodeArgs. The values must
// match the types in number and kind.
func encodeArgs(vs []GoValue, types []string) ([]byte, error) {
	if len(vs) != len(types) {
		return nil, fmt.Errorf("the input has %d values, the fuzz function takes %d", len(vs), len(types))
	}
	var out []byte
	for i, t := range types {
		v := vs[i]
		got := argType(v.Type)
		if got != t {
			return nil, fmt.Errorf("value %d is %s, the fuzz function takes %s", i+1, v.Type, t)
		}
		switch t {
		case "[]byte", "string":
			if i < len(types)-1 {
				out = binary.LittleEndian.AppendUint32(out, uint32(len(v.Bytes)))
			}
			out = append(out, v.Bytes...)
		case "bool":
			b := byte(0)
			if v.Text == "true" {
				b = 1
			}
			out = append(out, b)
		case "float32", "float64":
			f, err := parseFloatText(v.Text)
			if err != nil {
				return nil, fmt.Errorf("value %d: %w", i+1, err)
			}
			if t == "float32" {
				out = binary.LittleEndian.AppendUint32(out, math.Float32bits(float32(f)))
			} else {
				out = binary.LittleEndian.AppendUint64(out, math.Float64bits(f))
			}
		default:
			u, err := parseIntText(v.Text, strings.HasPrefix(t, "int"))
			if err != nil {
				return nil, fmt.Errorf("value %d: %w", i+1, err)
			}
			b := binary.LittleEndian.AppendUint64(nil, u)
			out = append(out, b[:argSize[t]]...)
		}
	}
	return out, nil
}

func parseIntText(s string, signed bool) (uint64, error) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "'") {
		r, _, _, err := strconv.UnquoteChar(strings.TrimSuffix(s[1:], "'"), '\'')
		if err != nil {
			return 0, fmt.Errorf("bad character literal %s", s)
		}
		return uint64(r), nil
	}
	if signed {
		n, err := strconv.ParseInt(s, 0, 64)
		return uint64(n), err
	}
	return strconv.ParseUint(s, 0, 64)
}

func parseFloatText(s string) (float64, error) {
	s = strings.ReplaceAll(strings.TrimSpace(s), " ", "")
	switch s {
	case "math.NaN()":
		return math.NaN(), nil
	case "math.Inf(1)", "math.Inf(+1)":
		return math.Inf(1), nil
	case "-math.Inf(1)", "math.Inf(-1)":
		return math.Inf(-1), nil
	}
	return strconv.ParseFloat(s, 64) // also +Inf, -Inf and NaN, as go test writes them
}

// GoInput is a libFuzzer input as a `go test fuzz v1` file for a fuzz
// function taking types (nil types: a single []byte).
func GoInput(raw []byte, types []string) []byte {
	if len(types) == 0 {
		types = []string{"[]byte"}
	}
	return FormatGoCorpus(decodeArgs(raw, types)...)
}

// RawInput is a `go test fuzz v1` file as the libFuzzer input of a fuzz
// function taking types. Errors say what does not parse or match.
func RawInput(goInput []byte, types []string) ([]byte, error) {
	vs, err := ParseGoCorpus(goInput)
	if err != nil {
		return nil, err
	}
	if len(types) == 0 {
		types = []string{"[]byte"}
	}
	return encodeArgs(vs, types)
}
