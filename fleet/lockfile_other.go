//go:build !unix

package fleet

import (
	"context"
	"fmt"
	"os"
)

// LockFile creates path and returns a no-op unlock: without flock, processes
// sharing a data dir are not serialized on this system.
func LockFile(ctx context.Context, path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}
