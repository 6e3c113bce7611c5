package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"
)

// ExecSpec is one bounded run of an external program.
type ExecSpec struct {
	Argv      []string      // program and arguments; Argv[0] is looked up in PATH if not absolute
	Dir       string        // working directory (the jail)
	Stdin     []byte        // optional
	Timeout   time.Duration // default 10 s
	OutputCap int           // bytes kept per stream; default 64 KiB
	// Env is the complete environment (scrubbed: nothing is inherited).
	// Default: PATH=/usr/local/bin:/usr/bin:/bin, HOME=Dir, LANG=C.UTF-8.
	Env []string
	// MemoryBytes caps the address space (RLIMIT_AS); 0 = 2 GiB.
	MemoryBytes uint64
	// CPUSeconds caps the CPU time of the process (RLIMIT_CPU, soft; the
	// hard limit is one second more); 0 = the timeout plus one second. A
	// multi-threaded program (a Go runtime with its GC workers) can use more
	// CPU than wall time, so this limit may end a spinning program before the
	// timeout does: ExecResult.CPULimited says when it did.
	CPUSeconds uint64
	// FileBytes caps the size of any file the program writes
	// (RLIMIT_FSIZE); 0 = 64 MiB. (Go's fuzzer sizes a shared-memory file
	// past that.)
	FileBytes uint64
	// Stop, when closed, interrupts the program: SIGINT to its process
	// group, then SIGKILL after StopGrace (default 5 s). A program that
	// handles SIGINT (libFuzzer prints its final statistics) ends cleanly;
	// ExecResult.Stopped says it was stopped. nil = never.
	Stop      <-chan struct{}
	StopGrace time.Duration
}

// ExecResult is what happened. A program that ran and failed is not an error.
type ExecResult struct {
	ExitCode  int           `json:"exit_code"`
	Signal    string        `json:"signal,omitempty"`
	TimedOut  bool          `json:"timed_out"`
	Stdout    []byte        `json:"-"`
	Stderr    []byte        `json:"-"`
	Truncated bool          `json:"truncated"` // some output beyond OutputCap was dropped
	Duration  time.Duration `json:"-"`
	// CPUTime is the user plus system CPU time of the program (not of
	// children it did not wait for).
	CPUTime time.Duration `json:"-"`
	// CPULimited is set when the CPU rlimit ended the program: killed by
	// SIGXCPU, or by SIGKILL (the hard limit, or a runtime that ignores
	// SIGXCPU) after using at least the soft limit. Like TimedOut, it means
	// the program did not finish in its time, not that it crashed.
	CPULimited bool `json:"cpu_limited,omitempty"`
	// Stopped is set when ExecSpec.Stop interrupted the program.
	Stopped bool `json:"stopped,omitempty"`
}

// Exec runs spec to completion or timeout. The program runs in its own
// process group; on timeout or cancellation the whole group is killed with
// SIGKILL, so children it forked die with it (a child that starts its own
// session with setsid escapes the group: see docs/architecture.md). Errors
// are returned only when the program could not be started.
func Exec(ctx context.Context, spec ExecSpec) (*ExecResult, error) {
	if len(spec.Argv) == 0 {
		return nil, errors.New("exec: empty argv")
	}
	if spec.Timeout <= 0 {
		spec.Timeout = 10 * time.Second
	}
	if spec.OutputCap <= 0 {
		spec.OutputCap = 64 << 10
	}
	if spec.MemoryBytes == 0 {
		spec.MemoryBytes = 2 << 30
	}
	if spec.FileBytes == 0 {
		spec.FileBytes = 64 << 20
	}
	if spec.CPUSeconds == 0 {
		spec.CPUSeconds = uint64(spec.Timeout.Seconds()) + 1
	}
	if spec.Env == nil {
		spec.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + spec.Dir, "LANG=C.UTF-8", "TMPDIR=" + spec.Dir}
	}
	argv0 := spec.Argv[0]
	if !filepath.IsAbs(argv0) {
		p, err := exec.LookPath(argv0)
		if err != nil {
			return nil, fmt.Errorf("exec %s: %w", argv0, err)
		}
		argv0 = p
	}
	ctx, cancel := context.WithTimeout(ctx, spec.Timeout)
	defer cancel()

	cmd := exec.Command(argv0, spec.Argv[1:]...)
	cmd.Dir = spec.Dir
	cmd.Env = spec.Env
	stdout := &capWriter{max: spec.OutputCap}
	stderr := &capWriter{max: spec.OutputCap}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if spec.Stdin != nil {
		cmd.Stdin = bytes.NewReader(spec.Stdin)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("exec %s: %w", argv0, err)
	}
	setRlimits(cmd.Process.Pid, spec)
	pgid := cmd.Process.Pid
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()

	res := &ExecResult{}
	var werr error
	kill := func() {
		res.TimedOut = true
		syscall.Kill(-pgid, syscall.SIGKILL)
		werr = <-waited
	}
	select {
	case werr = <-waited:
	case <-ctx.Done():
		kill()
	case <-spec.Stop:
		res.Stopped = true
		syscall.Kill(-pgid, syscall.SIGINT)
		grace := spec.StopGrace
		if grace <= 0 {
			grace = 5 * time.Second
		}
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case werr = <-waited:
		case <-ctx.Done():
			kill()
		case <-t.C:
			kill()
		}
	}
	// Whatever the program left running in its group dies now too: a child
	// that outlives its parent must not outlive the sandbox.
	syscall.Kill(-pgid, syscall.SIGKILL)
	res.Duration = time.Since(start)
	res.Stdout, res.Stderr = stdout.Bytes(), stderr.Bytes()
	res.Truncated = stdout.dropped || stderr.dropped
	res.ExitCode = -1
	if ps := cmd.ProcessState; ps != nil {
		res.ExitCode = ps.ExitCode()
		res.CPUTime = ps.UserTime() + ps.SystemTime()
		if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.Signal = ws.Signal().String()
			// The kernel sends SIGXCPU at the soft CPU limit and SIGKILL at
			// the hard one; a SIGKILL we did not send (no timeout) after the
			// soft limit's worth of CPU is the rlimit's too.
			soft := time.Duration(spec.CPUSeconds) * time.Second
			switch ws.Signal() {
			case syscall.SIGXCPU:
				res.CPULimited = true
			case syscall.SIGKILL:
				// Accounting lags the limit's own tick by up to ~10%.
				res.CPULimited = !res.TimedOut && res.CPUTime >= soft*3/4
			}
		}
	}
	var ee *exec.ExitError
	if werr != nil && !errors.As(werr, &ee) && !res.TimedOut {
		return res, fmt.Errorf("exec %s: %w", argv0, werr)
	}
	return res, nil
}

// capWriter keeps the first max bytes and counts the rest.
type capWriter struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	max     int
	dropped bool
}

func (w *capWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	room := max(0, w.max-w.buf.Len())
	if len(p) > room {
		w.dropped = true
	}
	w.buf.Write(p[:min(room, len(p))])
	return len(p), nil
}

func (w *capWriter) Bytes() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return bytes.Clone(w.buf.Bytes())
}

// Text renders program output for a JSON result: invalid UTF-8 becomes
// U+FFFD and, when longer than max bytes, only the tail is kept (the end of
// a compiler's stderr says the most).
func Text(b []byte, max int) (s string, truncated bool) {
	if len(b) > max {
		b = b[len(b)-max:]
		for len(b) > 0 && !utf8.RuneStart(b[0]) {
			b = b[1:]
		}
		truncated = true
	}
	return strings.ToValidUTF8(string(b), "\uFFFD"), truncated
}
