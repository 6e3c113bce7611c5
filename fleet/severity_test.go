package fleet

import (
	"slices"
	"testing"
)

func TestParseSeverity(t *testing.T) {
	tests := []struct {
		in      string
		want    Severity
		wantErr string
	}{
		{in: "critical", want: SeverityCritical},
		{in: "HIGH", want: SeverityHigh},
		{in: "Medium", want: SeverityMedium},
		{in: "low", want: SeverityLow},
		{in: "info", want: SeverityInfo},
		{in: "meta", want: SeverityMeta},
		{in: "unknown", want: SeverityUnknown},
		{in: "", wantErr: `invalid severity "": want one of critical, high, medium, low, info, meta, unknown`},
		{in: " high", wantErr: `invalid severity " high": want one of critical, high, medium, low, info, meta, unknown`},
		{in: "severe", wantErr: `invalid severity "severe": want one of critical, high, medium, low, info, meta, unknown`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseSeverity(tt.in)
			if gotErr := errString(err); gotErr != tt.wantErr {
				t.Fatalf("ParseSeverity(%q) error = %q, want %q", tt.in, gotErr, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("ParseSeverity(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestSeverityRank(t *testing.T) {
	order := []Severity{SeverityUnknown, SeverityMeta, SeverityInfo, SeverityLow, SeverityMedium, SeverityHigh, SeverityCritical}
	if !slices.IsSortedFunc(order, func(a, b Severity) int { return a.Rank() - b.Rank() }) {
		t.Errorf("ranks not ascending: %v", order)
	}
	for i, s := range order {
		if s.Rank() != i {
			t.Errorf("%q.Rank() = %d, want %d", s, s.Rank(), i)
		}
		if !s.Valid() {
			t.Errorf("%q.Valid() = false", s)
		}
	}
	for _, s := range []Severity{"", "High", "bogus"} {
		if s.Valid() || s.Rank() != -1 {
			t.Errorf("%q: Valid() = %v, Rank() = %d; want false, -1", s, s.Valid(), s.Rank())
		}
	}
}

// errString returns err's message, or "" for nil, so tables can compare it.
func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
