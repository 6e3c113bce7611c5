//go:build !unix

package fixer

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// lockState takes the state dir's lock without waiting (an exclusive lock
// file; a crash leaves it behind, to be removed by hand).
func lockState(dir string) (func(), error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("fixer lock: %w", err)
	}
	p := filepath.Join(dir, "lock.excl")
	f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
	if errors.Is(err, os.ErrExist) {
		return nil, ErrBusy
	}
	if err != nil {
		return nil, fmt.Errorf("fixer lock: %w", err)
	}
	f.Close()
	return func() { os.Remove(p) }, nil
}
