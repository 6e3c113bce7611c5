package fleet

import "testing"

func TestKind(t *testing.T) {
	tests := []struct {
		k         Kind
		known     bool
		orDefault Kind
	}{
		{"", true, KindFinding},
		{KindFinding, true, KindFinding},
		{KindResolution, true, KindResolution},
		{KindFalsePositive, true, KindFalsePositive},
		{KindDuplicateOf, true, KindDuplicateOf},
		{KindNeedsRepro, true, KindNeedsRepro},
		{KindMeta, true, KindMeta},
		{KindUnmerge, true, KindUnmerge},
		{KindAcceptedRisk, true, KindAcceptedRisk},
		{KindCause, true, KindCause},
		{"Resolution", false, "Resolution"},
		{"reopened", false, "reopened"},
	}
	for _, tt := range tests {
		t.Run(string(tt.k), func(t *testing.T) {
			if got := tt.k.Known(); got != tt.known {
				t.Errorf("Known() = %v, want %v", got, tt.known)
			}
			if got := tt.k.OrDefault(); got != tt.orDefault {
				t.Errorf("OrDefault() = %q, want %q", got, tt.orDefault)
			}
		})
	}
}
