package fuzzing

import (
	"testing"
	"time"

	"github.com/qafleet/fleetd/sandbox"
)

func TestClassify(t *testing.T) {
	goPanic := []byte("panic: runtime error: index out of range [0] with length 0\n\ngoroutine 1 [running]:\nmain.main()\n\t/m.go:1 +0x1\nexit status 2\n")
	tests := []struct {
		name string
		res  sandbox.ExecResult
		want string
	}{
		{"exit 0", sandbox.ExecResult{}, Compiled},
		{"clean error", sandbox.ExecResult{ExitCode: 1, Stderr: []byte("a.tl:1:5: expected expression\n")}, Rejected},
		{"go panic, exit 2", sandbox.ExecResult{ExitCode: 2, Stderr: goPanic}, Crashed},
		{"segfault", sandbox.ExecResult{ExitCode: -1, Signal: "segmentation fault"}, Crashed},
		{"abort without output", sandbox.ExecResult{ExitCode: -1, Signal: "aborted"}, Crashed},
		{"shell-reported signal", sandbox.ExecResult{ExitCode: 139}, Crashed},
		{"killed at the timeout", sandbox.ExecResult{ExitCode: -1, Signal: "killed", TimedOut: true}, TimedOut},
		// The testbed's hang used to be posted as a crash "signal killed,
		// exit -1": a Go program spinning with GC workers burns CPU faster
		// than wall time and meets RLIMIT_CPU before the timeout.
		{"SIGKILL at the hard CPU limit", sandbox.ExecResult{ExitCode: -1, Signal: "killed", CPULimited: true, CPUTime: 6 * time.Second}, TimedOut},
		{"SIGXCPU", sandbox.ExecResult{ExitCode: -1, Signal: "CPU time limit exceeded", CPULimited: true}, TimedOut},
		{"go out of memory", sandbox.ExecResult{ExitCode: 2, Stderr: []byte("fatal error: runtime: out of memory\n\nruntime stack:\nruntime.throw()\n")}, Resource},
		{"go cannot allocate", sandbox.ExecResult{ExitCode: 2, Stderr: []byte("runtime: out of memory: cannot allocate 4294967296-byte block (3997696 in use)\nfatal error: out of memory\n")}, Resource},
		{"c++ bad_alloc aborts", sandbox.ExecResult{ExitCode: -1, Signal: "aborted", Stderr: []byte("terminate called after throwing an instance of 'std::bad_alloc'\n  what():  std::bad_alloc\n")}, Resource},
		{"rust allocation failure", sandbox.ExecResult{ExitCode: -1, Signal: "aborted", Stderr: []byte("memory allocation of 8589934592 bytes failed\n")}, Resource},
		{"python MemoryError", sandbox.ExecResult{ExitCode: 1, Stderr: []byte("Traceback (most recent call last):\n  File \"c.py\", line 1, in <module>\nMemoryError\n")}, Resource},
		{"SIGKILL nobody here sent: the OOM killer", sandbox.ExecResult{ExitCode: -1, Signal: "killed"}, Resource},
		{"a stack overflow is a crash, not exhaustion", sandbox.ExecResult{ExitCode: 2, Stderr: []byte("runtime: goroutine stack exceeds 1000000000-byte limit\nfatal error: stack overflow\n")}, Crashed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Classify(&tt.res); got != tt.want {
				t.Errorf("Classify = %s, want %s", got, tt.want)
			}
		})
	}
}
