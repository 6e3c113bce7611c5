package fleet

import (
	"fmt"
	"strconv"
	"strings"
)

// Dial is the autonomy dial (DESIGN.md §3): the highest rung of action the
// fleet may take. Rungs are ordered, so a tool that needs Exercise is allowed
// at Exercise and Propose. The zero value is Observe, so a missing or
// unreadable setting fails safe.
type Dial int

// The rungs, lowest first.
const (
	Observe  Dial = iota // read-only tools and qa_report
	Exercise             // + writes against throwaway names, within budget
	Propose              // + the fix stage may push a branch and open a PR
)

var dialNames = [...]string{Observe: "observe", Exercise: "exercise", Propose: "propose"}

// ParseDial returns the rung named by s, ignoring case and surrounding space
// (the autonomy file is written by hand as often as by fleetd). The error names
// s and the rungs.
func ParseDial(s string) (Dial, error) {
	t := strings.TrimSpace(s)
	for d, name := range dialNames {
		if strings.EqualFold(t, name) {
			return Dial(d), nil
		}
	}
	return Observe, fmt.Errorf("invalid dial %q: want observe, exercise or propose", s)
}

// Valid reports whether d is one of the defined rungs.
func (d Dial) Valid() bool { return d >= Observe && d <= Propose }

// String returns the rung's name, or "dial(N)" for an undefined value.
func (d Dial) String() string {
	if !d.Valid() {
		return "dial(" + strconv.Itoa(int(d)) + ")"
	}
	return dialNames[d]
}

// Allows reports whether a tool that needs the rung need may run at d.
func (d Dial) Allows(need Dial) bool { return d >= need }

// MarshalText encodes d as its rung name. It fails for an undefined value
// rather than writing something ParseDial would refuse to read back.
func (d Dial) MarshalText() ([]byte, error) {
	if !d.Valid() {
		return nil, fmt.Errorf("marshal dial: undefined value %d", int(d))
	}
	return []byte(dialNames[d]), nil
}

// UnmarshalText decodes a rung name as ParseDial does; on error d is unchanged.
func (d *Dial) UnmarshalText(b []byte) error {
	v, err := ParseDial(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}
