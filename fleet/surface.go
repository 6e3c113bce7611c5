package fleet

import (
	"fmt"
	"strings"
)

// Surface names the part of the platform a finding is about. It is a
// lowercase token matching [a-z0-9][a-z0-9._-]{0,31}; the well-known surfaces
// are constants, and any other valid token is allowed so that a new specialist
// can report on a new surface without a code change.
type Surface string

// Well-known surfaces.
const (
	SurfaceChain    Surface = "chain"
	SurfaceRegistry Surface = "registry"
	SurfaceCompiler Surface = "compiler"
	SurfaceFace     Surface = "face"
	SurfaceCall     Surface = "call"
	SurfaceDocs     Surface = "docs"
	SurfaceFeedback Surface = "feedback"
	SurfaceFleet    Surface = "fleet"
)

// maxTokenLen bounds surfaces, sources and header keys.
const maxTokenLen = 32

// ParseSurface lowercases s and returns it as a Surface. The error names s and
// the grammar when the result is not a valid token.
func ParseSurface(s string) (Surface, error) {
	l := strings.ToLower(s) // no allocation when s is already lowercase
	if !isToken(l) {
		return "", fmt.Errorf("invalid surface %q: want a token [a-z0-9][a-z0-9._-]{0,31}", s)
	}
	return Surface(l), nil
}

// Valid reports whether s is a valid token (lowercase, as ParseSurface returns).
func (s Surface) Valid() bool { return isToken(string(s)) }

// isToken reports whether s matches [a-z0-9][a-z0-9._-]{0,31}.
func isToken(s string) bool {
	if !tokenShape(s) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isTokenByte(s[i]) {
			return false
		}
	}
	return true
}

func isLowerAlnum(c byte) bool { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' }
