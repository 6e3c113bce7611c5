//go:build unix

package fleet

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"
)

func TestLockFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	unlock, err := LockFile(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	// A second holder (flock locks belong to open files, so this stands for
	// another process) waits, and gives up when its context ends.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := LockFile(ctx, path); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second lock while held: %v, want deadline exceeded", err)
	}
	got := make(chan error, 1)
	go func() {
		u, err := LockFile(context.Background(), path)
		if err == nil {
			u()
		}
		got <- err
	}()
	time.Sleep(20 * time.Millisecond)
	unlock()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter did not get the lock after it was released")
	}
}
