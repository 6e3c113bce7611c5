package faultnet

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// Tmpfs mounts a tmpfs of size bytes on a fresh directory and returns it,
// unmounted at the test's end: a disk that fills up for real (ENOSPC from
// the kernel, not a fake error), for tests of what fleetd writes. Mounting
// needs root (CI runs as root): elsewhere the test is skipped with the
// reason, and under CI (the env var CI set) a failed mount fails the test,
// since there it is a broken setup.
func Tmpfs(tb testing.TB, size int64) string {
	tb.Helper()
	dir := tb.TempDir()
	skip := func(why string) {
		tb.Helper()
		if os.Getenv("CI") != "" {
			tb.Fatal(why)
		}
		tb.Skip(why)
	}
	if os.Geteuid() != 0 {
		skip("a size-limited tmpfs needs root to mount (CI runs as root)")
	}
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d,mode=0700", size), "tmpfs", dir).CombinedOutput()
	if err != nil {
		skip(fmt.Sprintf("mount a tmpfs: %v: %s", err, out))
	}
	tb.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			tb.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// Fill writes a file in dir until the disk is full, and returns it: remove
// it to free the space. It fails the test unless the disk ends full
// (ENOSPC).
func Fill(tb testing.TB, dir string) string {
	tb.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 4096)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				tb.Fatalf("fill %s: %v, want ENOSPC", dir, err)
			}
			break
		}
	}
	// The last partial page: byte by byte until nothing fits.
	for {
		if _, err := f.Write(chunk[:1]); err != nil {
			break
		}
	}
	return path
}
