package fixer

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestStoreKeepsACorruptFile(t *testing.T) {
	dir := t.TempDir()
	if _, err := updateRecord(dir, "aa", func(r *Record) { r.State, r.Number = StateOpen, 3 }); err != nil {
		t.Fatal(err)
	}
	recs, err := LoadRecords(dir)
	if err != nil || len(recs) != 1 || recs[0].Number != 3 {
		t.Fatalf("LoadRecords = %+v, %v", recs, err)
	}
	bad := []byte(`{"schema":1,"records":[{"fingerprint":"aa","state":"weird"}]}`)
	os.WriteFile(filepath.Join(dir, storeFile), bad, 0o600)
	if _, err := updateRecord(dir, "bb", func(*Record) {}); !errors.Is(err, ErrCorruptState) {
		t.Fatalf("update over a corrupt file: %v, want ErrCorruptState", err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, storeFile)); string(got) != string(bad) {
		t.Errorf("the corrupt file was rewritten: %s", got)
	}
}

// FuzzDecodeRecords checks prs.json's reader never panics and that what it
// accepts survives a save and load unchanged.
func FuzzDecodeRecords(f *testing.F) {
	f.Add([]byte(`{"schema":1,"records":[{"fingerprint":"aa","state":"open","number":1,"verified":false}]}`))
	f.Add([]byte(`{"schema":1,"records":[]}`))
	f.Add([]byte(`{"schema":2}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, err := decodeRecords(b)
		if err != nil {
			return
		}
		dir := t.TempDir()
		if err := saveRecords(dir, recs); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadRecords(dir); err != nil {
			t.Fatalf("saved records do not load: %v", err)
		}
	})
}

// TestRowOf: fleetd prs' verification text, state with its re-check, and age.
func TestRowOf(t *testing.T) {
	opened := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	now := opened.Add(90*time.Minute + 400*time.Millisecond)
	for _, c := range []struct {
		r            Record
		verification string
		state        string
	}{
		{Record{State: "open"}, "draft: regression test only", "open"},
		{Record{State: "open", Attempts: 3}, "unverified (3 attempts)", "open"},
		{Record{State: "merged", Verified: true, Attempts: 1, Recheck: "holds"}, "verified", "merged, holds"},
	} {
		c.r.OpenedAt = opened
		l := RowOf(c.r, now)
		if l.Verification != c.verification || l.State != c.state || l.Age != "1h30m0s" || l.Verified != c.r.Verified {
			t.Errorf("RowOf(%+v) = %+v; want verification %q, state %q, age 1h30m0s", c.r, l, c.verification, c.state)
		}
	}
}
