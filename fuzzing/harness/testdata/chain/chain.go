// Package chain is the generator's test library for method chains: its
// bug is reachable only after a configuring call (construct, configure,
// parse).
package chain

import "errors"

// Lexer counts nesting in its source.
type Lexer struct {
	src      []byte
	maxDepth int
	strict   bool
	stack    []int
}

// NewLexer returns a lexer of src.
func NewLexer(src []byte) *Lexer { return &Lexer{src: src} }

// SetMaxDepth limits nesting; 0 is no limit.
func (l *Lexer) SetMaxDepth(n int) error {
	if n < 0 {
		return errors.New("chain: negative depth")
	}
	l.maxDepth = n
	l.stack = make([]int, n)
	return nil
}

// SetStrict refuses unbalanced input.
func (l *Lexer) SetStrict(on bool) { l.strict = on }

// Parse returns the deepest nesting.
func (l *Lexer) Parse() (int, error) {
	depth, deepest := 0, 0
	for i, c := range l.src {
		switch c {
		case '(':
			if l.maxDepth > 0 {
				l.stack[depth] = i // the bug: depth == maxDepth is out of range
			}
			depth++
			deepest = max(deepest, depth)
		case ')':
			if depth == 0 {
				if l.strict {
					return 0, errors.New("chain: unbalanced")
				}
				continue
			}
			depth--
		}
	}
	return deepest, nil
}
