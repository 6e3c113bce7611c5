//go:build unix

package compiler

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time this process has used, which, unlike wall time,
// does not grow when other processes compete for the machine.
func cpuTime() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
