package fuzzstage

import (
	"strings"
	"testing"

	"github.com/qafleet/fleetd/fleet"
)

func TestCrashSignature(t *testing.T) {
	a := crashSignature(fleet.Result{"stderr_tail": "panic: runtime error: index out of range [0] with length 0\n\ngoroutine 1 [running]:\nmain.f()\n\t/x/y.go:12 +0x1d\n"})
	b := crashSignature(fleet.Result{"stderr_tail": "panic: runtime error: index out of range [3] with length 2\n\ngoroutine 9 [running]:\n"})
	if a != b || !strings.HasPrefix(a, "panic: runtime error: index out of range") {
		t.Errorf("signatures %q and %q", a, b)
	}
	if got := crashSignature(fleet.Result{"signal": "SIGSEGV", "stderr_tail": ""}); got != "signal SIGSEGV" {
		t.Errorf("signal: %q", got)
	}
	if got := crashSignature(fleet.Result{"exit_code": 134, "stderr_tail": "bye"}); got != "exit 134" {
		t.Errorf("exit: %q", got)
	}
}

func TestPlateauNote(t *testing.T) {
	for _, tt := range []struct {
		r    fleet.Result
		want string
	}{
		{fleet.Result{"new_coverage": true, "plateau_sessions": 0}, ", new coverage"},
		{fleet.Result{"new_coverage": false, "plateau_sessions": 2}, ", no new coverage in 2 session(s)"},
		{fleet.Result{"new_coverage": false, "plateau_sessions": 4}, ", on a plateau: no new coverage in 4 sessions"},
		{fleet.Result{"engine": "builtin"}, ""}, // no data dir: no statistics
	} {
		if got := plateau(tt.r); got != tt.want {
			t.Errorf("plateau(%v) = %q, want %q", tt.r, got, tt.want)
		}
	}
}
