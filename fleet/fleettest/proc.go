package fleettest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// StartWait bounds a test's wait for a process it started to become ready
// (a node or server to answer) on a machine other tests may starve: a slow
// start is not a failure, a stuck one is. Within Wall the wait goes on; past
// it, it goes on (up to Starved in all) only while the process has used
// under CPU of CPU time. A process that exits or logs a fatal error should
// end the wait at once; that is the caller's check, as only it knows the
// process's log. At load 40, niced, Gitea had one CPU-second in 3.5
// minutes; a geth --dev restart had under one in 30 s.
type StartWait struct {
	Wall, Starved, CPU time.Duration
}

// Over reports whether a wait since start for process pid should end, and
// if so a phrase for the failure saying how long it waited and how much CPU
// the process had ("within 31s, having had 2.1s of CPU time").
func (w StartWait) Over(pid int, start time.Time) (bool, string) {
	return w.OverFrom(pid, start, 0)
}

// OverFrom is Over for a wait that began when the process had already
// used cpu0 of CPU time (a wait for it to stop): only the CPU time since
// counts.
func (w StartWait) OverFrom(pid int, start time.Time, cpu0 time.Duration) (bool, string) {
	waited := time.Since(start)
	if waited <= w.Wall {
		return false, ""
	}
	cpu, err := ProcessCPU(pid)
	cpu -= cpu0
	if err == nil && cpu < w.CPU && waited <= w.Starved {
		return false, ""
	}
	why := fmt.Sprintf("within %s, having had %s of CPU time", waited.Round(time.Second), cpu)
	if err != nil {
		why += fmt.Sprintf(" (%v)", err)
	}
	return true, why
}

// Until polls cond every 50 ms until it holds, or until the wait is over
// for process pid (OverFrom, counting only the CPU time pid has used since
// the wait began: a daemon asked to stop, the test process hosting an
// in-process daemon), and then returns an error saying how long it waited
// and how much CPU pid had. It is for a wait on the progress of a process
// the machine may starve: a starved process costs time, a stuck one a
// failure. cond should also notice pid's exit, which only the caller sees.
func (w StartWait) Until(pid int, cond func() bool) error {
	start := time.Now()
	cpu0, _ := ProcessCPU(pid)
	for !cond() {
		if over, why := w.OverFrom(pid, start, cpu0); over {
			return errors.New(why)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

// ProcessCPU is the CPU time (user and system) process pid has used, from
// /proc/<pid>/stat.
func ProcessCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	cpu, err := statCPU(b)
	if err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return cpu, nil
}

// statCPU reads utime and stime from a /proc/<pid>/stat line (clock ticks
// of 1/100 s, Linux's USER_HZ); an error names the field that is wrong.
func statCPU(b []byte) (time.Duration, error) {
	// The fields after the command name, which may hold spaces and ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("no command name in parentheses")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("%d fields after the command name, want 13 or more", len(f))
	}
	var ticks int64
	for _, k := range []struct {
		name string
		v    string
	}{{"utime", f[11]}, {"stime", f[12]}} {
		n, err := strconv.ParseInt(k.v, 10, 64)
		if err != nil || n < 0 || n > 1<<40 {
			return 0, fmt.Errorf("%s %q is not a tick count", k.name, k.v)
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond, nil
}
