package inject

import "sort"

// jsState is where a JavaScript lexer is: in code, or inside a literal or
// comment whose content is data.
type jsState uint8

// The lexer states.
const (
	jsCode         jsState = iota // code: an identifier here runs
	jsDQ                          // a "double-quoted" string
	jsSQ                          // a 'single-quoted' string
	jsTemplate                    // a `template` literal's text (its ${...} is code)
	jsLineComment                 // a // comment (or <!-- in a script)
	jsBlockComment                // a /* comment */
	jsRegex                       // a /regular expression/ literal
)

func (s jsState) String() string {
	return [...]string{"code", "double-quoted string", "single-quoted string", "template literal", "line comment", "block comment", "regular expression"}[s]
}

// jsSeg is a run of source in one state: from Start to the next segment's.
type jsSeg struct {
	Start int
	State jsState
}

// lexJS splits JavaScript source into runs of lexer state. It is an
// approximation of the language's lexical grammar good enough to tell data
// from code: strings with escapes, template literals with nested ${...},
// comments (including the HTML-like <!-- of scripts), and regular
// expression literals told from division by the token before the slash. It
// never fails: unterminated literals end at the end of the line (strings,
// regular expressions) or of the source.
func lexJS(src string) []jsSeg {
	segs := []jsSeg{{0, jsCode}}
	set := func(i int, st jsState) {
		last := &segs[len(segs)-1]
		switch {
		case last.State == st:
		case last.Start == i:
			last.State = st
			if len(segs) > 1 && segs[len(segs)-2].State == st {
				segs = segs[:len(segs)-1]
			}
		default:
			segs = append(segs, jsSeg{i, st})
		}
	}
	n := len(src)
	state := jsCode
	var templates []int // brace depth of each ${ ... } we are inside
	var lastSig byte    // last significant character of code: 'a' for a word or literal
	lastWord := ""
	lineStart := true // only whitespace since the last newline (for -->)
	inClass := false  // inside [...] of a regular expression
	for i := 0; i < n; {
		c := src[i]
		switch state {
		case jsCode:
			switch {
			case c == '\n' || c == '\r':
				lineStart = true
				i++
				continue
			case c == ' ' || c == '\t' || c == '\f' || c == '\v':
				i++
				continue
			case c == '"' || c == '\'' || c == '`':
				state = map[byte]jsState{'"': jsDQ, '\'': jsSQ, '`': jsTemplate}[c]
				set(i, state)
				i++
			case c == '/' && i+1 < n && src[i+1] == '/':
				state = jsLineComment
				set(i, state)
				i += 2
			case c == '/' && i+1 < n && src[i+1] == '*':
				state = jsBlockComment
				set(i, state)
				i += 2
			case c == '/' && regexAllowed(lastSig, lastWord):
				state, inClass = jsRegex, false
				set(i, state)
				i++
			case c == '<' && hasAt(src, i, "<!--"), c == '-' && lineStart && hasAt(src, i, "-->"):
				state = jsLineComment
				set(i, state)
				i += 3
			case c == '{':
				if len(templates) > 0 {
					templates[len(templates)-1]++
				}
				lastSig, lastWord = c, ""
				i++
			case c == '}' && len(templates) > 0 && templates[len(templates)-1] == 0:
				templates = templates[:len(templates)-1]
				state = jsTemplate
				set(i, state)
				i++
			case c == '}':
				if len(templates) > 0 {
					templates[len(templates)-1]--
				}
				lastSig, lastWord = c, ""
				i++
			case isWordByte(c):
				j := i
				for j < n && isWordByte(src[j]) {
					j++
				}
				lastSig, lastWord = 'a', src[i:j]
				i = j
			default:
				lastSig, lastWord = c, ""
				i++
			}
			lineStart = false
		case jsDQ, jsSQ:
			q := byte('"')
			if state == jsSQ {
				q = '\''
			}
			switch {
			case c == '\\':
				i += 2
			case c == q:
				state, lastSig, lastWord = jsCode, 'a', ""
				i++
				set(i, state)
			case c == '\n' || c == '\r': // unterminated
				state = jsCode
				set(i, state)
			default:
				i++
			}
		case jsTemplate:
			switch {
			case c == '\\':
				i += 2
			case c == '`':
				state, lastSig, lastWord = jsCode, 'a', ""
				i++
				set(i, state)
			case c == '$' && i+1 < n && src[i+1] == '{':
				templates = append(templates, 0)
				state, lastSig, lastWord = jsCode, '(', ""
				i += 2
				set(i, state)
			default:
				i++
			}
		case jsLineComment:
			if c == '\n' || c == '\r' {
				state = jsCode
				set(i, state)
				continue
			}
			i++
		case jsBlockComment:
			if c == '*' && i+1 < n && src[i+1] == '/' {
				state = jsCode
				i += 2
				set(i, state)
				continue
			}
			i++
		case jsRegex:
			switch {
			case c == '\\':
				i += 2
			case c == '[':
				inClass = true
				i++
			case c == ']':
				inClass = false
				i++
			case c == '/' && !inClass:
				state, lastSig, lastWord = jsCode, 'a', ""
				i++
				set(i, state)
			case c == '\n' || c == '\r':
				state = jsCode
				set(i, state)
			default:
				i++
			}
		}
	}
	return segs
}

func hasAt(s string, i int, sub string) bool { return len(s)-i >= len(sub) && s[i:i+len(sub)] == sub }

func isWordByte(c byte) bool {
	return c == '_' || c == '$' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// regexKeywords precede an expression, so a slash after them starts a
// regular expression.
var regexKeywords = map[string]bool{
	"return": true, "typeof": true, "case": true, "do": true, "else": true, "in": true, "of": true,
	"new": true, "delete": true, "void": true, "throw": true, "yield": true, "await": true, "instanceof": true,
}

// regexAllowed reports whether a slash after lastSig (and lastWord) starts
// a regular expression rather than a division.
func regexAllowed(lastSig byte, lastWord string) bool {
	if lastSig == 'a' {
		return regexKeywords[lastWord]
	}
	return lastSig != ')' && lastSig != ']'
}

// jsStateAt is the state at byte off.
func jsStateAt(segs []jsSeg, off int) jsState {
	i := sort.Search(len(segs), func(i int) bool { return segs[i].Start > off })
	if i == 0 {
		return jsCode
	}
	return segs[i-1].State
}
