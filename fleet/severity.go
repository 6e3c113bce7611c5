package fleet

import (
	"fmt"
	"strings"
)

// Severity is how bad a finding is. The qa/v1 envelope carries one of
// critical, high, medium, low, info or meta; SeverityUnknown marks free-form
// entries, whose writer said nothing machine-readable about severity.
type Severity string

// The severities, from most to least severe.
const (
	SeverityCritical Severity = "critical"
	SeverityHigh     Severity = "high"
	SeverityMedium   Severity = "medium"
	SeverityLow      Severity = "low"
	SeverityInfo     Severity = "info"
	SeverityMeta     Severity = "meta"
	SeverityUnknown  Severity = "unknown"
)

var severities = [...]Severity{
	SeverityCritical, SeverityHigh, SeverityMedium, SeverityLow,
	SeverityInfo, SeverityMeta, SeverityUnknown,
}

// ParseSeverity returns the Severity named by s, ignoring case (surrounding
// space is not ignored: envelopes never contain it). The error names s and
// the allowed values.
func ParseSeverity(s string) (Severity, error) {
	if v := Severity(s); v.Valid() {
		return v, nil // the common, already-canonical case
	}
	for _, v := range severities {
		if strings.EqualFold(s, string(v)) {
			return v, nil
		}
	}
	return "", fmt.Errorf("invalid severity %q: want one of critical, high, medium, low, info, meta, unknown", s)
}

// Valid reports whether s is one of the defined severities (exact, lowercase).
func (s Severity) Valid() bool { return s.Rank() >= 0 }

// Rank orders severities for sorting: critical is 6, high 5, medium 4, low 3,
// info 2, meta 1 and unknown 0. Meta ranks below info because it describes
// the fleet itself, not the platform; an invalid Severity ranks -1, below
// everything, so garbage never outranks a real finding.
func (s Severity) Rank() int {
	switch s {
	case SeverityCritical:
		return 6
	case SeverityHigh:
		return 5
	case SeverityMedium:
		return 4
	case SeverityLow:
		return 3
	case SeverityInfo:
		return 2
	case SeverityMeta:
		return 1
	case SeverityUnknown:
		return 0
	}
	return -1
}
