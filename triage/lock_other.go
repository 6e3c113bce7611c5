//go:build !unix

package triage

import "os"

// lockDir opens the lock file; without flock there is no cross-process
// exclusion on this platform (fleetd's targets are unix).
func lockDir(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
}
