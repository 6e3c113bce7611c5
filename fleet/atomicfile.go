package fleet

import (
	"errors"
	"os"
	"path/filepath"
)

// WriteFileAtomic replaces path with b so that a reader, or a crash, sees the
// old content or the new, never a mix: it writes a temporary file in the same
// directory (creating the directory, 0700, if needed), sets mode, fsyncs it,
// renames it over path and fsyncs the directory so the rename survives a
// power loss. The temporary file is removed on every error path.
func WriteFileAtomic(path string, b []byte, mode os.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // fails harmlessly after the rename
	_, werr := tmp.Write(b)
	if werr == nil {
		werr = tmp.Chmod(mode)
	}
	if werr == nil {
		werr = tmp.Sync()
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return werr
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	return SyncDir(dir)
}

// SyncDir fsyncs a directory, making renames and creations in it durable.
// Filesystems that cannot fsync a directory (os.ErrInvalid) are not an error.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return err
	}
	return nil
}
