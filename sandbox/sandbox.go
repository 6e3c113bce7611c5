// Package sandbox is the per-run jail of DESIGN.md §4: a directory
// <base>/<run-id>/ holding keys/ (throwaway keys, 0600), ledger.json (every
// name the run mints, written before the mint is sent), fs/ (the only place
// tools read and write files, opened with os.OpenRoot) and, once the run has
// cleaned up, a closed marker. A directory without the marker after a restart
// is a crashed run; Crashed lists them for reconciliation.
//
// The package also meters a run's budget and runs external programs (the
// target's compiler) with a timeout, an output cap, a scrubbed environment,
// rlimits and a process-group kill. It holds no chain or crypto code: callers
// create keys into KeysDir and do the on-chain part of cleanup.
package sandbox

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/qafleet/fleetd/fleet"
)

// Sandbox is one run's jail. Methods are safe for concurrent use.
type Sandbox struct {
	RunID string
	dir   string
	root  *os.Root
	lock  *os.File // flock held while the run lives; the kernel drops it if the process dies
	*Ledger
}

const closedMarker = "closed"

var runIDRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// ValidRunID reports whether id can name a run: lowercase letters, digits
// and dashes, so it is safe in paths and in minted names.
func ValidRunID(id string) bool { return runIDRE.MatchString(id) }

// NewRunID returns a fresh run id: r-<utc time>-<6 random hex digits>.
func NewRunID(now time.Time) string {
	var b [3]byte
	rand.Read(b[:])
	return fmt.Sprintf("r-%s-%x", now.UTC().Format("20060102-150405"), b)
}

// Open creates the run's sandbox under base. It refuses an existing run dir,
// so two runs never share a jail or a ledger.
func Open(base, runID string) (*Sandbox, error) {
	if !ValidRunID(runID) {
		return nil, fmt.Errorf("sandbox: invalid run id %q", runID)
	}
	if err := os.MkdirAll(base, 0o700); err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	// The sandbox is made and locked under a hidden name, then renamed
	// into place: a reconciler (FindCrashed, in another process) never
	// sees it unlocked. Made in place and locked after, it was taken for a
	// crashed run in between, and the run could not lock it.
	dir := filepath.Join(base, runID)
	if _, err := os.Lstat(dir); err == nil {
		return nil, fmt.Errorf("sandbox %s: run directory already exists", runID)
	}
	stage, err := os.MkdirTemp(base, "."+runID+".new")
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	lock, ok, err := tryLock(stage)
	if err == nil && !ok {
		err = errors.New("another process holds its lock")
	}
	if err != nil {
		os.RemoveAll(stage)
		return nil, fmt.Errorf("sandbox %s: cannot lock its new directory: %w", runID, err)
	}
	for _, sub := range []string{"keys", "fs"} {
		if err == nil {
			err = os.Mkdir(filepath.Join(stage, sub), 0o700)
		}
	}
	if err == nil {
		err = os.Chmod(stage, 0o700)
	}
	if err == nil {
		err = os.Rename(stage, dir)
	}
	if err != nil {
		lock.Close()
		os.RemoveAll(stage)
		return nil, fmt.Errorf("sandbox %s: %w", runID, err)
	}
	root, err := os.OpenRoot(filepath.Join(dir, "fs"))
	if err != nil {
		lock.Close()
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	l, err := openLedger(filepath.Join(dir, "ledger.json"), runID)
	if err == nil {
		err = l.save() // an empty ledger exists from the start
	}
	if err != nil {
		root.Close()
		lock.Close()
		return nil, err
	}
	return &Sandbox{RunID: runID, dir: dir, root: root, lock: lock, Ledger: l}, nil
}

// Dir is the run's sandbox directory.
func (s *Sandbox) Dir() string { return s.dir }

// KeysDir is where the run's throwaway keys live (0700).
func (s *Sandbox) KeysDir() string { return filepath.Join(s.dir, "keys") }

// JailDir is the absolute path of the jail, for programs run inside it.
func (s *Sandbox) JailDir() string { return filepath.Join(s.dir, "fs") }

// Root is the jail. Every file a tool touches goes through it: paths with
// "..", absolute paths and symlinks leading outside are refused by os.Root.
func (s *Sandbox) Root() *os.Root { return s.root }

// MaxFileBytes caps what WriteFile and ReadFile move, so a tool cannot fill
// the disk or memory through the jail.
const MaxFileBytes = 4 << 20

// ErrTooLarge is returned for files over MaxFileBytes.
var ErrTooLarge = errors.New("file too large for the jail")

// WriteFile writes data to name inside the jail, creating parent dirs.
func (s *Sandbox) WriteFile(name string, data []byte) error {
	if len(data) > MaxFileBytes {
		return fmt.Errorf("jail write %s: %w (%d bytes, max %d)", name, ErrTooLarge, len(data), MaxFileBytes)
	}
	// No O_TRUNC: ext4 flushes a file truncated to zero when it is closed
	// (auto_da_alloc); writing over it and trimming to length avoids that.
	f, err := s.root.OpenFile(name, os.O_WRONLY|os.O_CREATE, 0o600)
	if errors.Is(err, fs.ErrNotExist) && filepath.Dir(name) != "." {
		// Create parents only when missing: a failing mkdir on every write
		// costs more than the write itself.
		if err := s.root.MkdirAll(filepath.Dir(name), 0o700); err != nil {
			return fmt.Errorf("jail write %s: %w", name, err)
		}
		f, err = s.root.OpenFile(name, os.O_WRONLY|os.O_CREATE, 0o600)
	}
	if err != nil {
		return fmt.Errorf("jail write %s: %w", name, err)
	}
	_, werr := f.Write(data)
	if werr == nil {
		werr = f.Truncate(int64(len(data)))
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("jail write %s: %w", name, werr)
	}
	return nil
}

// ReadFile reads name from inside the jail, refusing files over MaxFileBytes.
func (s *Sandbox) ReadFile(name string) ([]byte, error) {
	f, err := s.root.Open(name)
	if err != nil {
		return nil, fmt.Errorf("jail read %s: %w", name, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("jail read %s: %w", name, err)
	}
	if fi.Size() > MaxFileBytes {
		return nil, fmt.Errorf("jail read %s: %w", name, ErrTooLarge)
	}
	b := make([]byte, fi.Size())
	if _, err := f.ReadAt(b, 0); err != nil && fi.Size() > 0 {
		return nil, fmt.Errorf("jail read %s: %w", name, err)
	}
	return b, nil
}

// Close marks the run as cleanly finished. Call it only after the run's
// names are released and its funds swept: a sandbox without the marker is
// treated as crashed and reconciled on the next start.
func (s *Sandbox) Close() error {
	s.root.Close()
	err := MarkClosed(s.dir)
	s.lock.Close()
	return err
}

// Discard closes the sandbox of a run that never started (nothing minted
// or funded, no record naming it) and removes it. Abandoning it instead
// would leave an empty sandbox without its marker that no record names, so
// nothing would know to reconcile it until the next start.
func (s *Sandbox) Discard() {
	s.Close()
	os.RemoveAll(s.dir)
}

// Abandon closes the jail without the marker (the run could not clean up;
// reconciliation will finish the job).
func (s *Sandbox) Abandon() {
	s.root.Close()
	s.lock.Close()
}

// sameLock reports whether dir's lock file is still the one lock holds: a
// sandbox moved or removed after it was locked is not there any more.
func sameLock(dir string, lock *os.File) bool {
	held, err := lock.Stat()
	if err != nil {
		return false
	}
	now, err := os.Stat(filepath.Join(dir, ".lock"))
	return err == nil && os.SameFile(held, now)
}

// tryLock takes an exclusive flock on dir/.lock without blocking. ok is false
// when another live process holds it.
func tryLock(dir string) (f *os.File, ok bool, err error) {
	f, err = os.OpenFile(filepath.Join(dir, ".lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, false, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, false, nil
		}
		return nil, false, err
	}
	return f, true, nil
}

// MarkClosed writes the closed marker into a sandbox directory, durably.
func MarkClosed(dir string) error {
	f, err := os.OpenFile(filepath.Join(dir, closedMarker), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("sandbox close: %w", err)
	}
	_, werr := f.WriteString(time.Now().UTC().Format(time.RFC3339) + "\n")
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("sandbox close: %w", werr)
	}
	return fleet.SyncDir(dir)
}

// Crashed is a sandbox left without its closed marker by a process that is
// gone. FindCrashed holds its lock until Release, so two reconcilers never
// work on the same run.
type Crashed struct {
	RunID    string
	Dir      string
	Names    []LedgerEntry // every name the ledger records, in mint order
	KeyFiles []string      // absolute paths of the run's throwaway keys
	lock     *os.File
}

// Ledger opens the crashed run's ledger, for recording what its
// reconciliation did (call it while holding the lock FindCrashed took).
func (c Crashed) Ledger() (*Ledger, error) {
	return openLedger(filepath.Join(c.Dir, "ledger.json"), c.RunID)
}

// Release drops the lock FindCrashed took.
func (c Crashed) Release() {
	if c.lock != nil {
		c.lock.Close()
	}
}

// FindCrashed lists the sandboxes under base that have no closed marker and
// whose run is not alive (its lock is free), and locks each one; call
// Release on every result. A ledger that cannot be read is reported as an
// error for that run; the others are still returned.
func FindCrashed(base string) ([]Crashed, error) {
	ents, err := os.ReadDir(base)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("find crashed runs: %w", err)
	}
	var out []Crashed
	var errs []error
	for _, e := range ents {
		if !e.IsDir() || !ValidRunID(e.Name()) {
			continue
		}
		dir := filepath.Join(base, e.Name())
		if _, err := os.Stat(filepath.Join(dir, closedMarker)); err == nil {
			continue
		}
		lock, ok, err := tryLock(dir)
		if err != nil {
			errs = append(errs, fmt.Errorf("lock %s: %w", dir, err))
			continue
		}
		if !ok {
			continue // a live run
		}
		if _, err := os.Stat(filepath.Join(dir, closedMarker)); err == nil || !sameLock(dir, lock) {
			// Closed between the look and the lock (its run ended well),
			// or moved or removed meanwhile (a discarded run's).
			lock.Close()
			continue
		}
		c := Crashed{RunID: e.Name(), Dir: dir, lock: lock}
		l, err := openLedger(filepath.Join(dir, "ledger.json"), e.Name())
		if err != nil {
			errs = append(errs, err)
		} else {
			c.Names = l.Entries()
		}
		keys, _ := filepath.Glob(filepath.Join(dir, "keys", "*"))
		slices.Sort(keys)
		for _, k := range keys {
			if !strings.HasPrefix(filepath.Base(k), ".") {
				c.KeyFiles = append(c.KeyFiles, k)
			}
		}
		out = append(out, c)
	}
	return out, errors.Join(errs...)
}

// Closed reports whether run runID's sandbox under base has its closed
// marker: the run cleaned up, or reconciliation finished it. A sandbox that
// is missing or abandoned (Abandon) is not closed.
func Closed(base, runID string) bool {
	if !ValidRunID(runID) {
		return false
	}
	_, err := os.Stat(filepath.Join(base, runID, closedMarker))
	return err == nil
}

// Live reports whether run runID under base is running in some process
// (its sandbox lock is held). A missing sandbox is not live.
func Live(base, runID string) bool {
	if !ValidRunID(runID) {
		return false
	}
	dir := filepath.Join(base, runID)
	if _, err := os.Stat(dir); err != nil {
		return false
	}
	f, ok, err := tryLock(dir)
	if err != nil {
		return false
	}
	if ok {
		f.Close()
		return false
	}
	return true
}
