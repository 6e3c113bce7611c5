//go:build unix

package triage

import (
	"errors"
	"os"
	"syscall"
)

// lockDir takes an exclusive, non-blocking flock on path. The lock is held
// until the returned file is closed (or the process dies, so a crash never
// leaves a stale lock behind).
func lockDir(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, ErrLocked
		}
		return nil, err
	}
	return f, nil
}
