package sandbox

import (
	"syscall"
	"unsafe"
)

// setRlimits applies address-space, CPU, file-size and core limits to a
// started child with prlimit(2). Best effort: the timeout and group kill are
// the hard fences; rlimits stop a runaway before it hurts the host.
func setRlimits(pid int, spec ExecSpec) {
	cpu := uint64(spec.Timeout.Seconds()) + 1
	for _, l := range []struct {
		res int
		val uint64
	}{
		{syscall.RLIMIT_AS, spec.MemoryBytes},
		{syscall.RLIMIT_CPU, cpu},
		{syscall.RLIMIT_FSIZE, 64 << 20},
		{syscall.RLIMIT_CORE, 0},
	} {
		lim := syscall.Rlimit{Cur: l.val, Max: l.val}
		syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), uintptr(l.res), uintptr(unsafe.Pointer(&lim)), 0, 0, 0)
	}
}
