package gitlocal

import (
	"encoding/json"
	"testing"
)

// FuzzDecodeRecord: a PR record is a file a human may edit (to close a PR);
// the reader never panics, and what it accepts has a known state, a
// positive number and a branch name, and survives a write and read.
func FuzzDecodeRecord(f *testing.F) {
	f.Add([]byte(`{"number":1,"branch":"fleetd/fix-0123456789abcdef","base":"main","title":"t","body":"b","draft":true,"state":"open","labels":["fleetd"],"head":"","created_at":"2026-11-24T10:00:00Z","updated_at":"2026-11-24T10:00:00Z"}`))
	f.Add([]byte(`{"number":2,"branch":"x","state":"closed"}`))
	f.Add([]byte(`{"number":-1,"branch":"-x","state":"open"}`))
	f.Add([]byte(`{"number":3,"branch":"a..b","state":"merged","merge":"x"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decode(b)
		if err != nil {
			return
		}
		if r.Number <= 0 || checkBranch(r.Branch) != nil || (r.State != "open" && r.State != "closed" && r.State != "merged") {
			t.Fatalf("decode accepted %+v", r)
		}
		again, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := decode(again); err != nil {
			t.Fatalf("a record written back does not read: %v", err)
		}
	})
}
