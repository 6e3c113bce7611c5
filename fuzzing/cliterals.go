package fuzzing

import (
	"encoding/binary"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// cSourceExts are the files CLiterals reads.
var cSourceExts = map[string]bool{".c": true, ".h": true, ".cc": true, ".cpp": true, ".cxx": true, ".hh": true, ".hpp": true, ".hxx": true}

// CLiterals returns the string and character literals, the byte arrays
// written as brace lists of small integer and character literals (a magic
// number checked a byte at a time: {0xe1, 0xc2, 0x3f, 0x7a}) and the hex
// integer constants over one byte, as the little-endian bytes of their
// width (a magic compared as a word), of the C and C++ files under root
// (hidden, vendor-like and build directories skipped; at most 2000 files of
// at most 1 MiB). Most frequent first; at most max (default 512), each 1 to
// maxDictToken bytes.
//
// It is the dictionary afl-clang-lto's autodictionary would give the
// target: Debian's AFL++ has no working LTO mode (no lld), its
// AFL_LLVM_DICT2FILE keeps only string comparisons, and CmpLog does not
// log one-byte comparisons, so a signature checked byte by byte is found
// only through a dictionary entry (measured on testdata/cmagic: see
// BENCHMARKS.md).
func CLiterals(root string, max int) []string {
	if max <= 0 {
		max = maxLiteralTokens
	}
	count := map[string]int{}
	files := 0
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "vendor" || name == "third_party" || name == "build") {
				return filepath.SkipDir
			}
			return nil
		}
		if files >= maxLiteralFiles {
			return filepath.SkipAll
		}
		if !d.Type().IsRegular() || !cSourceExts[strings.ToLower(filepath.Ext(name))] {
			return nil
		}
		if info, err := d.Info(); err != nil || info.Size() > maxLiteralFile {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		files++
		for _, t := range ScanCLiterals(b) {
			count[t]++
		}
		return nil
	})
	out := top(count)
	if len(out) > max {
		out = out[:max]
	}
	return out
}

// ScanCLiterals returns the literals of one C or C++ source text, in the
// order they appear (see CLiterals): comments and #include lines are
// skipped, escapes are decoded, and anything it does not understand (a
// raw string, an unterminated literal) is passed over. It never panics
// (fuzzed).
func ScanCLiterals(src []byte) []string {
	var out []string
	add := func(s string) {
		if len(s) > 0 && len(s) <= maxDictToken {
			out = append(out, s)
		}
	}
	// list collects a brace list of byte values; nil outside one or once
	// it holds anything else.
	var list []byte
	inList := false
	lineStart := true
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '\n':
			lineStart = true
			i++
			continue
		case c == ' ' || c == '\t' || c == '\r':
			i++
			continue
		case c == '#' && lineStart:
			// A preprocessor line: #include's file name is no token; other
			// directives' literals are (#define MAGIC "..." ).
			j := i + 1
			for j < len(src) && (src[j] == ' ' || src[j] == '\t') {
				j++
			}
			if strings.HasPrefix(string(src[j:min(len(src), j+7)]), "include") {
				for i < len(src) && src[i] != '\n' {
					i++
				}
				continue
			}
			i = j
			lineStart = false
			continue
		}
		lineStart = false
		switch {
		case c == '/' && i+1 < len(src) && src[i+1] == '/':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(src) && src[i+1] == '*':
			end := strings.Index(string(src[i+2:]), "*/")
			if end < 0 {
				return out
			}
			i += 2 + end + 2
		case c == '"' || c == '\'':
			s, n := cQuoted(src[i:])
			if n == 0 {
				i++ // unterminated: step over the quote
				inList = false
				continue
			}
			i += n
			if c == '\'' {
				if inList && len(s) == 1 {
					list = append(list, s[0])
					continue
				}
				inList = false
			}
			add(s)
		case c == '{':
			inList, list = true, list[:0]
			i++
		case c == '}':
			if inList && len(list) > 1 {
				add(string(list))
			}
			inList = false
			i++
		case c == ',':
			i++
		case c >= '0' && c <= '9':
			j := i
			for j < len(src) && (isIdentByte(src[j]) || src[j] == '\'') {
				j++
			}
			tok := string(src[i:j])
			i = j
			v, width, hex, ok := cInt(tok)
			switch {
			case !ok:
				inList = false
			case inList && v <= 0xff:
				list = append(list, byte(v))
			default:
				inList = false
				if hex && width > 1 {
					var b [8]byte
					binary.LittleEndian.PutUint64(b[:], v)
					add(string(b[:width]))
				}
			}
		case isIdentByte(c):
			j := i
			for j < len(src) && isIdentByte(src[j]) {
				j++
			}
			// A raw or prefixed string (R"(...)", u8"...", L'x') is passed
			// over as an identifier followed by a literal: its quotes
			// are scanned next, which is fine for the prefixed ones.
			i = j
			inList = false
		default:
			inList = false
			i++
		}
	}
	return out
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// cQuoted decodes the string or character literal at the start of src
// (src[0] is its quote) and returns its bytes and the length it took; n is
// 0 when it is not terminated on its line.
func cQuoted(src []byte) (string, int) {
	q := src[0]
	var b strings.Builder
	for i := 1; i < len(src); {
		c := src[i]
		switch {
		case c == q:
			return b.String(), i + 1
		case c == '\n':
			return "", 0
		case c != '\\':
			b.WriteByte(c)
			i++
			continue
		}
		// An escape.
		if i+1 >= len(src) {
			return "", 0
		}
		e := src[i+1]
		i += 2
		switch e {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case '0', '1', '2', '3', '4', '5', '6', '7':
			v, j := int(e-'0'), 0
			for j < 2 && i < len(src) && src[i] >= '0' && src[i] <= '7' {
				v = v*8 + int(src[i]-'0')
				i++
				j++
			}
			b.WriteByte(byte(v))
		case 'x':
			v, j := 0, 0
			for i < len(src) && j < 2 && strings.IndexByte("0123456789abcdefABCDEF", src[i]) >= 0 {
				d, _ := strconv.ParseUint(string(src[i]), 16, 8)
				v = v*16 + int(d)
				i++
				j++
			}
			if j == 0 {
				return "", 0
			}
			b.WriteByte(byte(v))
		case 'a':
			b.WriteByte(7)
		case 'b':
			b.WriteByte(8)
		case 'f':
			b.WriteByte(12)
		case 'v':
			b.WriteByte(11)
		case '\n':
			// a line continuation
		default:
			b.WriteByte(e) // \\ \" \' \? and unknown escapes
		}
	}
	return "", 0
}

// cInt reads a C integer literal (decimal, hex, octal or binary, with
// digit separators and u/l suffixes): its value, the width in bytes its
// hex digits give (1, 2, 4 or 8), whether it is hex, and ok.
func cInt(tok string) (v uint64, width int, hex, ok bool) {
	tok = strings.ReplaceAll(tok, "'", "")
	tok = strings.TrimRight(tok, "uUlLzZ")
	if tok == "" {
		return 0, 0, false, false
	}
	base, digits := 10, tok
	switch {
	case len(tok) > 2 && (tok[:2] == "0x" || tok[:2] == "0X"):
		base, digits, hex = 16, tok[2:], true
	case len(tok) > 2 && (tok[:2] == "0b" || tok[:2] == "0B"):
		base, digits = 2, tok[2:]
	case len(tok) > 1 && tok[0] == '0':
		base, digits = 8, tok[1:]
	}
	v, err := strconv.ParseUint(digits, base, 64)
	if err != nil {
		return 0, 0, false, false
	}
	switch {
	case v <= 0xff:
		width = 1
	case v <= 0xffff:
		width = 2
	case v <= 0xffffffff:
		width = 4
	default:
		width = 8
	}
	if hex {
		// The written width counts: 0x0000beef is a 32-bit magic.
		switch n := len(digits); {
		case n > 8:
			width = 8
		case n > 4:
			width = max(width, 4)
		case n > 2:
			width = max(width, 2)
		}
	}
	return v, width, hex, true
}
