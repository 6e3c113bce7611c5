package triage

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"time"
)

// Store persists what triage has read, in one directory (<data_dir>/triage):
//
//	entries.log       every entry read so far, append-only binary records
//	checkpoints.json  where each read ended: next index, block number, block hash
//	state.json        the meta summary state
//	lock              locked while a Store is open: one writer at a time
//
// entries.log starts with the 8-byte magic "FLTRIAG1"; each record is a
// little-endian uint32 payload length, the payload (uint64 index, 20-byte
// sender, int64 unix time, the text bytes exactly as read, valid UTF-8 or
// not) and a CRC-32C of the payload. Records are appended and synced
// before the checkpoint that covers them is written, so on open a record
// that is short or fails its CRC can only be a torn tail: it is moved to
// entries.log.damaged-<time> (nothing stored is thrown away) and the log
// is truncated to the last whole record. Entries past the last checkpoint
// were read at a block no checkpoint vouches for and are dropped, to be
// read again.
type Store struct {
	dir   string
	f     *os.File
	size  int64  // bytes of whole records, magic included
	count uint64 // entries in entries.log
	cps   []Checkpoint
	state StoreState
	lock  *os.File
}

// Checkpoint says that entries [0, Next) were read at block Block, whose hash
// was Hash. If that block is still canonical, so are those entries.
type Checkpoint struct {
	Next  uint64   `json:"next"`
	Block uint64   `json:"block"`
	Hash  [32]byte `json:"-"`
}

type checkpointJSON struct {
	Next  uint64 `json:"next"`
	Block uint64 `json:"block"`
	Hash  string `json:"hash"`
}

// MarshalJSON writes the hash as 0x-prefixed hex.
func (c Checkpoint) MarshalJSON() ([]byte, error) {
	return json.Marshal(checkpointJSON{Next: c.Next, Block: c.Block, Hash: "0x" + hex.EncodeToString(c.Hash[:])})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (c *Checkpoint) UnmarshalJSON(b []byte) error {
	var j checkpointJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	h, err := hex.DecodeString(trim0x(j.Hash))
	if err != nil || len(h) != 32 {
		return fmt.Errorf("checkpoint hash %q: want 0x and 64 hex digits", j.Hash)
	}
	c.Next, c.Block = j.Next, j.Block
	copy(c.Hash[:], h)
	return nil
}

func trim0x(s string) string {
	if len(s) >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
		return s[2:]
	}
	return s
}

// StoreState is what triage keeps between runs besides entries.
type StoreState struct {
	Meta MetaState `json:"meta"`
}

// maxCheckpoints bounds the checkpoints kept: enough to survive any reorg
// short of one that rewrites that many reads' worth of history, and then
// the log is simply read again from the start.
const maxCheckpoints = 64

// maxRecord bounds a record's payload on load: anything bigger is damage.
const maxRecord = 1 << 20

const (
	entriesFile     = "entries.log"
	checkpointsFile = "checkpoints.json"
	stateFile       = "state.json"
	lockFile        = "lock"
	storeMagic      = "FLTRIAG1"
	recordFixed     = 8 + 20 + 8
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// ErrLocked is returned by OpenStore when another process has the store open.
var ErrLocked = errors.New("triage store is in use by another process")

// ErrCorrupt is wrapped by OpenStore for files it will not touch because they
// are not what it wrote (a wrong magic, unreadable checkpoints).
var ErrCorrupt = errors.New("triage store is corrupt")

// OpenStore opens (creating if needed) the store in dir. It fails with
// ErrLocked when another process holds it, and with ErrCorrupt, leaving the
// files as they are, when they are not a store's.
func OpenStore(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("open triage store: %w", err)
	}
	lock, err := lockDir(filepath.Join(dir, lockFile))
	if err != nil {
		return nil, fmt.Errorf("open triage store %s: %w", dir, err)
	}
	s := &Store{dir: dir, lock: lock}
	if err := s.open(); err != nil {
		s.Close()
		return nil, fmt.Errorf("open triage store %s: %w", dir, err)
	}
	return s, nil
}

func (s *Store) open() error {
	if err := readJSON(filepath.Join(s.dir, checkpointsFile), &s.cps); err != nil {
		return err
	}
	if err := readJSON(filepath.Join(s.dir, stateFile), &s.state); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(s.dir, entriesFile), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	s.f = f
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if st.Size() == 0 {
		if _, err := f.Write([]byte(storeMagic)); err != nil {
			return err
		}
		if err := f.Sync(); err != nil {
			return err
		}
		s.size = int64(len(storeMagic))
	} else {
		valid, count, err := s.scan(nil, ^uint64(0))
		if err != nil {
			return err
		}
		if valid < st.Size() {
			if err := s.saveDamaged(valid, st.Size()); err != nil {
				return err
			}
			if err := s.truncateAt(valid, count); err != nil {
				return err
			}
		}
		s.size, s.count = valid, count
	}
	// Keep only checkpoints the cache can back, and drop cached entries no
	// checkpoint covers.
	for len(s.cps) > 0 && s.cps[len(s.cps)-1].Next > s.count {
		s.cps = s.cps[:len(s.cps)-1]
	}
	keep := uint64(0)
	if n := len(s.cps); n > 0 {
		keep = s.cps[n-1].Next
	}
	if keep < s.count {
		return s.Truncate(keep)
	}
	return nil
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w: %w", path, ErrCorrupt, err)
	}
	return nil
}

// scan reads records from the start, calling fn (if not nil) with batches of
// entries, and stops after limit entries. It returns the offset after the
// last whole record read and the number of entries.
func (s *Store) scan(fn func([]Entry) error, limit uint64) (int64, uint64, error) {
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		return 0, 0, err
	}
	r := bufio.NewReaderSize(s.f, 1<<20)
	magic := make([]byte, len(storeMagic))
	if _, err := io.ReadFull(r, magic); err != nil || string(magic) != storeMagic {
		return 0, 0, fmt.Errorf("%s: %w: no %s magic", entriesFile, ErrCorrupt, storeMagic)
	}
	off, count := int64(len(storeMagic)), uint64(0)
	var batch []Entry
	flush := func() error {
		if fn == nil || len(batch) == 0 {
			return nil
		}
		err := fn(batch)
		batch = batch[:0]
		return err
	}
	var hdr [4]byte
	buf := make([]byte, 0, 4096)
	for count < limit {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			break // end, or a torn length
		}
		n := binary.LittleEndian.Uint32(hdr[:])
		if n < recordFixed || n > maxRecord {
			break
		}
		if cap(buf) < int(n)+4 {
			buf = make([]byte, n+4)
		}
		buf = buf[:n+4]
		if _, err := io.ReadFull(r, buf); err != nil {
			break
		}
		payload := buf[:n]
		if crc32.Checksum(payload, crcTable) != binary.LittleEndian.Uint32(buf[n:]) {
			break
		}
		e := decodeRecord(payload)
		if e.Index != count {
			break // not the next entry: damage, not data
		}
		off += 4 + int64(n) + 4
		count++
		if fn != nil {
			batch = append(batch, e)
			if len(batch) == 4096 {
				if err := flush(); err != nil {
					return off, count, err
				}
			}
		}
	}
	return off, count, flush()
}

func decodeRecord(p []byte) Entry {
	var e Entry
	e.Index = binary.LittleEndian.Uint64(p)
	copy(e.Sender[:], p[8:28])
	e.Time = time.Unix(int64(binary.LittleEndian.Uint64(p[28:36])), 0).UTC()
	e.Text = string(p[recordFixed:])
	return e
}

func appendRecord(b []byte, e *Entry) []byte {
	n := recordFixed + len(e.Text)
	b = binary.LittleEndian.AppendUint32(b, uint32(n))
	start := len(b)
	b = binary.LittleEndian.AppendUint64(b, e.Index)
	b = append(b, e.Sender[:]...)
	b = binary.LittleEndian.AppendUint64(b, uint64(e.Time.Unix()))
	b = append(b, e.Text...)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b[start:], crcTable))
}

// saveDamaged copies bytes [from, to) of entries.log aside.
func (s *Store) saveDamaged(from, to int64) error {
	tail := make([]byte, to-from)
	if _, err := s.f.ReadAt(tail, from); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	name := filepath.Join(s.dir, fmt.Sprintf("%s.damaged-%s", entriesFile, time.Now().UTC().Format(historyLayout)))
	return writeFileAtomic(name, tail, 0o644)
}

func (s *Store) truncateAt(off int64, count uint64) error {
	if err := s.f.Truncate(off); err != nil {
		return err
	}
	if err := s.f.Sync(); err != nil {
		return err
	}
	s.size, s.count = off, count
	return nil
}

// Count returns the number of entries stored.
func (s *Store) Count() uint64 { return s.count }

// Load calls fn with every stored entry, in order, in batches.
func (s *Store) Load(fn func([]Entry) error) error {
	if _, _, err := s.scan(fn, s.count); err != nil {
		return fmt.Errorf("load triage store: %w", err)
	}
	return nil
}

// Append stores entries, which must continue the stored ones (the first
// index is Count()), and syncs them to disk.
func (s *Store) Append(entries []Entry) error {
	if len(entries) == 0 {
		return nil
	}
	var b []byte
	for i := range entries {
		if want := s.count + uint64(i); entries[i].Index != want {
			return fmt.Errorf("append to triage store: entry %d where %d was expected: %w", entries[i].Index, want, ErrOrder)
		}
		b = appendRecord(b, &entries[i])
	}
	if _, err := s.f.WriteAt(b, s.size); err != nil {
		return fmt.Errorf("append to triage store: %w", err)
	}
	if err := s.f.Sync(); err != nil {
		return fmt.Errorf("append to triage store: %w", err)
	}
	s.size += int64(len(b))
	s.count += uint64(len(entries))
	return nil
}

// Truncate drops every entry from index next on (after a reorg) and every
// checkpoint beyond it.
func (s *Store) Truncate(next uint64) error {
	if next >= s.count {
		return nil
	}
	off, count, err := s.scan(nil, next)
	if err != nil {
		return fmt.Errorf("truncate triage store: %w", err)
	}
	if err := s.truncateAt(off, count); err != nil {
		return fmt.Errorf("truncate triage store: %w", err)
	}
	for len(s.cps) > 0 && s.cps[len(s.cps)-1].Next > next {
		s.cps = s.cps[:len(s.cps)-1]
	}
	return s.writeCheckpoints()
}

// Checkpoints returns the checkpoints, oldest first.
func (s *Store) Checkpoints() []Checkpoint { return append([]Checkpoint(nil), s.cps...) }

// AddCheckpoint records that the stored entries, up to cp.Next, were read at
// cp.Block. A checkpoint that does not advance replaces none and is dropped.
func (s *Store) AddCheckpoint(cp Checkpoint) error {
	if cp.Next > s.count {
		return fmt.Errorf("add checkpoint at %d: only %d entries stored", cp.Next, s.count)
	}
	if n := len(s.cps); n > 0 && s.cps[n-1].Next >= cp.Next {
		return nil
	}
	s.cps = append(s.cps, cp)
	if len(s.cps) > maxCheckpoints {
		s.cps = append(s.cps[:0], s.cps[len(s.cps)-maxCheckpoints:]...)
	}
	return s.writeCheckpoints()
}

// DropCheckpoints forgets the newest checkpoints so that keep remain.
func (s *Store) DropCheckpoints(keep int) error {
	if keep >= len(s.cps) {
		return nil
	}
	s.cps = s.cps[:keep]
	return s.writeCheckpoints()
}

func (s *Store) writeCheckpoints() error {
	b, err := json.MarshalIndent(s.cps, "", "  ")
	if err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Join(s.dir, checkpointsFile), b, 0o644); err != nil {
		return fmt.Errorf("write checkpoints: %w", err)
	}
	return nil
}

// State returns the stored state.
func (s *Store) State() StoreState { return s.state }

// SaveState replaces the stored state.
func (s *Store) SaveState(st StoreState) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("save triage state: %w", err)
	}
	if err := writeFileAtomic(filepath.Join(s.dir, stateFile), b, 0o644); err != nil {
		return fmt.Errorf("save triage state: %w", err)
	}
	s.state = st
	return nil
}

// Close releases the files and the lock.
func (s *Store) Close() error {
	var errs []error
	if s.f != nil {
		errs = append(errs, s.f.Close())
		s.f = nil
	}
	if s.lock != nil {
		errs = append(errs, s.lock.Close()) // closing releases the flock
		s.lock = nil
	}
	return errors.Join(errs...)
}
