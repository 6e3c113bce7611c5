package sandbox

import (
	"syscall"
	"unsafe"
)

// setRlimits applies address-space, CPU, file-size and core limits to a
// started child with prlimit(2). Best effort: the timeout and group kill are
// the hard fences; rlimits stop a runaway before it hurts the host.
//
// The CPU limit's hard value is one second above the soft one, so a program
// that handles nothing gets SIGXCPU (and a runtime that ignores it, as Go's
// does, SIGKILL a second later): both read as "ran out of CPU time".
func setRlimits(pid int, spec ExecSpec) {
	for _, l := range []struct {
		res      int
		cur, max uint64
	}{
		{syscall.RLIMIT_AS, spec.MemoryBytes, spec.MemoryBytes},
		{syscall.RLIMIT_CPU, spec.CPUSeconds, spec.CPUSeconds + 1},
		{syscall.RLIMIT_FSIZE, spec.FileBytes, spec.FileBytes},
		{syscall.RLIMIT_CORE, 0, 0},
	} {
		lim := syscall.Rlimit{Cur: l.cur, Max: l.max}
		syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), uintptr(l.res), uintptr(unsafe.Pointer(&lim)), 0, 0, 0)
	}
}
