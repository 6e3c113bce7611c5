package triage

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func MustOpenStore(tb testing.TB, dir string) *Store {
	tb.Helper()
	s, err := OpenStore(dir)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

func loadAll(t *testing.T, s *Store) []Entry {
	t.Helper()
	var out []Entry
	if err := s.Load(func(es []Entry) error { out = append(out, es...); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

// hostileTexts are kept byte for byte: the store is not where bad input
// gets cleaned up.
var hostileTexts = []string{
	"plain",
	"invalid utf-8: \xff\xfe\xc3",
	strings.Repeat("x", 5000), // longer than the contract allows
	"nul \x00 and esc \x1b[31m",
	"",
}

func TestStoreRoundTrip(t *testing.T) {
	dir := t.TempDir()
	s := MustOpenStore(t, dir)
	in := entries(0, strangerAddr, hostileTexts...)
	if err := s.Append(in[:2]); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(in[2:]); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(entries(9, fleetAddr, "gap")); !errors.Is(err, ErrOrder) {
		t.Errorf("append with a gap: %v, want ErrOrder", err)
	}
	if err := s.AddCheckpoint(Checkpoint{Next: 5, Block: 7, Hash: [32]byte{1, 2, 3}}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = MustOpenStore(t, dir)
	if diff := cmp.Diff(in, loadAll(t, s)); diff != "" {
		t.Errorf("entries after reopen (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]Checkpoint{{Next: 5, Block: 7, Hash: [32]byte{1, 2, 3}}}, s.Checkpoints()); diff != "" {
		t.Errorf("checkpoints (-want +got):\n%s", diff)
	}
}

func TestStoreTornTail(t *testing.T) {
	dir := t.TempDir()
	s := MustOpenStore(t, dir)
	if err := s.Append(entries(0, fleetAddr, "a", "b", "c")); err != nil {
		t.Fatal(err)
	}
	if err := s.AddCheckpoint(Checkpoint{Next: 3, Block: 1}); err != nil {
		t.Fatal(err)
	}
	s.Close()

	// A crash mid-append: half a record at the end.
	path := filepath.Join(dir, entriesFile)
	full := appendRecord(nil, &entries(3, fleetAddr, "torn record")[0])
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(full[:len(full)/2])
	f.Close()
	before, _ := os.Stat(path)

	s = MustOpenStore(t, dir)
	if got := loadAll(t, s); len(got) != 3 || s.Count() != 3 {
		t.Fatalf("after a torn tail: %d entries, want 3", len(got))
	}
	after, _ := os.Stat(path)
	if after.Size() != before.Size()-int64(len(full)/2) {
		t.Errorf("size %d, want the torn %d bytes cut", after.Size(), len(full)/2)
	}
	damaged, _ := filepath.Glob(filepath.Join(dir, entriesFile+".damaged-*"))
	if len(damaged) != 1 {
		t.Fatalf("damaged copies %v, want one", damaged)
	}
	if b, _ := os.ReadFile(damaged[0]); !bytes.Equal(b, full[:len(full)/2]) {
		t.Error("the damaged copy does not hold the torn bytes")
	}
	// It appends cleanly after the cut.
	if err := s.Append(entries(3, fleetAddr, "d")); err != nil {
		t.Fatal(err)
	}
}

func TestStoreDropsEntriesNoCheckpointCovers(t *testing.T) {
	dir := t.TempDir()
	s := MustOpenStore(t, dir)
	s.Append(entries(0, fleetAddr, "a", "b"))
	s.AddCheckpoint(Checkpoint{Next: 2, Block: 1})
	s.Append(entries(2, fleetAddr, "c")) // crash before its checkpoint
	s.Close()
	s = MustOpenStore(t, dir)
	if s.Count() != 2 {
		t.Errorf("count %d, want 2: entry 2 was never vouched for", s.Count())
	}
}

func TestStoreRefusesForeignFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, entriesFile)
	os.WriteFile(path, []byte("not a triage store"), 0o644)
	if _, err := OpenStore(dir); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("OpenStore on a foreign file: %v, want ErrCorrupt", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "not a triage store" {
		t.Error("the foreign file was changed")
	}
	dir2 := t.TempDir()
	os.WriteFile(filepath.Join(dir2, checkpointsFile), []byte("{not json"), 0o644)
	if _, err := OpenStore(dir2); !errors.Is(err, ErrCorrupt) {
		t.Errorf("OpenStore with broken checkpoints: %v, want ErrCorrupt", err)
	}
}

func TestStoreTruncate(t *testing.T) {
	s := MustOpenStore(t, t.TempDir())
	s.Append(entries(0, fleetAddr, "a", "b", "c", "d"))
	s.AddCheckpoint(Checkpoint{Next: 2, Block: 1})
	s.AddCheckpoint(Checkpoint{Next: 4, Block: 2})
	if err := s.Truncate(2); err != nil {
		t.Fatal(err)
	}
	if got := loadAll(t, s); len(got) != 2 || got[1].Text != "b" {
		t.Errorf("after truncate: %v", got)
	}
	if cps := s.Checkpoints(); len(cps) != 1 || cps[0].Next != 2 {
		t.Errorf("checkpoints after truncate: %v", cps)
	}
	if err := s.Append(entries(2, fleetAddr, "c2")); err != nil {
		t.Fatal(err)
	}
}

func FuzzStoreOpen(f *testing.F) {
	good := append([]byte(storeMagic), appendRecord(nil, &entries(0, fleetAddr, "a")[0])...)
	f.Add(good)
	f.Add(good[:len(good)-3])
	f.Add([]byte(storeMagic + "\xff\xff\xff\xff"))
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, entriesFile)
		os.WriteFile(path, b, 0o644)
		// Read it as it is: whole records in order, then stop.
		raw, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		n := uint64(0)
		probe := &Store{dir: dir, f: raw}
		off, count, err := probe.scan(func(es []Entry) error {
			for _, e := range es {
				if e.Index != n {
					t.Fatalf("entry %d has index %d", n, e.Index)
				}
				n++
			}
			return nil
		}, ^uint64(0))
		raw.Close()
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("scan: %v", err)
			}
			return
		}
		if n != count || off > int64(len(b)) {
			t.Fatalf("scan read %d entries, counted %d, offset %d of %d", n, count, off, len(b))
		}
		// Opening keeps the whole records only a checkpoint vouches for and
		// moves any damaged tail aside.
		os.WriteFile(filepath.Join(dir, checkpointsFile), []byte(`[{"next":`+strconv.FormatUint(count, 10)+`,"block":1,"hash":"0x`+strings.Repeat("00", 32)+`"}]`), 0o644)
		s, err := OpenStore(dir)
		if err != nil {
			t.Fatalf("OpenStore: %v", err)
		}
		defer s.Close()
		if s.Count() != count {
			t.Fatalf("count after open %d, want %d", s.Count(), count)
		}
		if st, _ := os.Stat(path); st.Size() != off {
			t.Fatalf("size after open %d, want %d", st.Size(), off)
		}
	})
}
