// Package e2etest holds what fleetd's end-to-end tests share: the fleetd
// binary built once per test process, and background processes that stop
// with the test. The tests run the real binary, as a user would.
package e2etest

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	built     string
	buildErr  error
)

// Fleetd builds fleetd (go build ./cmd/fleetd from the module root) once per
// test process and returns the binary's path.
func Fleetd(tb testing.TB) string {
	tb.Helper()
	buildOnce.Do(func() {
		root, err := moduleRoot()
		if err != nil {
			buildErr = err
			return
		}
		dir, err := os.MkdirTemp("", "fleetd-e2e-")
		if err != nil {
			buildErr = err
			return
		}
		built = filepath.Join(dir, "fleetd")
		cmd := exec.Command("go", "build", "-o", built, "./cmd/fleetd")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/fleetd: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		tb.Fatal(buildErr)
	}
	return built
}

// moduleRoot walks up from the working directory to the go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}

// Background starts cmd, waits up to a minute for the first line it prints
// on stdout and returns it; the process is interrupted (then killed) when
// the test ends. Its stderr goes to stderr, which may be nil.
func Background(tb testing.TB, cmd *exec.Cmd, stderr *bytes.Buffer) string {
	tb.Helper()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if stderr != nil {
		cmd.Stderr = stderr
	}
	if err := cmd.Start(); err != nil {
		tb.Fatalf("%v: %v", cmd.Args, err)
	}
	tb.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGINT)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	first := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		if sc.Scan() {
			first <- sc.Text()
		}
		close(first)
		for sc.Scan() {
		}
	}()
	select {
	case line, ok := <-first:
		if !ok {
			tb.Fatalf("%v printed nothing and stopped", cmd.Args)
		}
		return line
	case <-time.After(time.Minute):
		tb.Fatalf("%v printed nothing in a minute", cmd.Args)
	}
	return ""
}
