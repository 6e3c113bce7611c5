package compiler

import (
	"fmt"
	"strconv"
	"strings"
)

// Pos is a 1-based line and column (in bytes) in the source.
type Pos struct {
	Line, Col int
}

func (p Pos) String() string { return fmt.Sprintf("%d:%d", p.Line, p.Col) }

// Error is a source the language rejects. Its message is "line:col: msg".
type Error struct {
	Pos Pos
	Msg string
}

func (e *Error) Error() string { return e.Pos.String() + ": " + e.Msg }

func errorf(p Pos, format string, args ...any) *Error {
	return &Error{Pos: p, Msg: fmt.Sprintf(format, args...)}
}

type tokKind int

const (
	tEOF tokKind = iota
	tIdent
	tInt
	tString
	tKeyword
	tOp // operators and punctuation
)

var keywords = map[string]bool{
	"let": true, "fn": true, "enum": true, "print": true, "if": true, "else": true,
	"while": true, "return": true, "break": true, "continue": true, "true": true, "false": true,
}

// twoByteOps are the operators lexed greedily before single bytes.
var twoByteOps = []string{"==", "!=", "<=", ">=", "&&", "||"}

const oneByteOps = "+-*/%<>!=(){},;."

type token struct {
	kind tokKind
	text string // identifier, keyword, operator, or the decoded string literal
	num  int64
	pos  Pos
}

func (t token) String() string {
	switch t.kind {
	case tEOF:
		return "end of file"
	case tString:
		return strconv.Quote(t.text)
	case tInt:
		return strconv.FormatInt(t.num, 10)
	}
	return strconv.Quote(t.text)
}

// lex splits src into tokens, ending with a tEOF token.
func lex(src []byte) ([]token, error) {
	var toks []token
	line, lineStart := 1, 0
	i := 0
	for {
		// Skip whitespace and comments.
		for i < len(src) {
			c := src[i]
			if c == '\n' {
				line++
				lineStart = i + 1
				i++
			} else if c == ' ' || c == '\t' || c == '\r' {
				i++
			} else if c == '/' && i+1 < len(src) && src[i+1] == '/' {
				for i < len(src) && src[i] != '\n' {
					i++
				}
			} else {
				break
			}
		}
		pos := Pos{line, i - lineStart + 1}
		if i >= len(src) {
			return append(toks, token{kind: tEOF, pos: pos}), nil
		}
		c := src[i]
		switch {
		case isLetter(c):
			j := i
			for j < len(src) && (isLetter(src[j]) || isDigit(src[j])) {
				j++
			}
			word := string(src[i:j])
			kind := tIdent
			if keywords[word] {
				kind = tKeyword
			}
			toks = append(toks, token{kind: kind, text: word, pos: pos})
			i = j
		case isDigit(c):
			j := i
			for j < len(src) && isDigit(src[j]) {
				j++
			}
			n, err := strconv.ParseInt(string(src[i:j]), 10, 64)
			if err != nil {
				return nil, errorf(pos, "integer literal %s out of range", src[i:j])
			}
			toks = append(toks, token{kind: tInt, num: n, pos: pos})
			i = j
		case c == '"':
			s, n, err := lexString(src[i:], pos)
			if err != nil {
				return nil, err
			}
			toks = append(toks, token{kind: tString, text: s, pos: pos})
			i += n
		default:
			op := ""
			for _, two := range twoByteOps {
				if i+1 < len(src) && string(src[i:i+2]) == two {
					op = two
					break
				}
			}
			if op == "" && strings.IndexByte(oneByteOps, c) >= 0 {
				op = string(c)
			}
			if op == "" {
				return nil, errorf(pos, "unexpected character %q", rune(c))
			}
			toks = append(toks, token{kind: tOp, text: op, pos: pos})
			i += len(op)
		}
	}
}

// lexString decodes the string literal at the start of s and returns its
// value and its length in bytes including both quotes.
func lexString(s []byte, pos Pos) (string, int, error) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			return b.String(), i + 1, nil
		case '\n':
			return "", 0, errorf(pos, "unterminated string")
		case '\\':
			if i+1 >= len(s) {
				return "", 0, errorf(pos, "unterminated string")
			}
			i++
			switch e := s[i]; e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case '\\', '"':
				b.WriteByte(e)
			default:
				return "", 0, errorf(Pos{pos.Line, pos.Col + i - 1}, "unknown escape sequence %q", string([]byte{'\\', e}))
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, errorf(pos, "unterminated string")
}

func isLetter(c byte) bool { return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isDigit(c byte) bool  { return '0' <= c && c <= '9' }
