package pipeline

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/poster"
)

// outboxPoster is a poster with no log to post to: every record waits in
// its outbox (dir).
func outboxPoster(t *testing.T, dir string) *poster.Poster {
	t.Helper()
	key, err := chain.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	p, err := poster.New(poster.Config{Identity: key, OutboxDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestMetaPosterSaysWhatHappened: without a fleet key triage's summary is
// refused with ErrNoFleetKey; with one it is queued when the log cannot be
// written (Status says so), keyed by text, and lands in the outbox once.
func TestMetaPosterSaysWhatHappened(t *testing.T) {
	if err := (&MetaPoster{}).Post(context.Background(), "summary"); !errors.Is(err, ErrNoFleetKey) {
		t.Fatalf("no fleet key: %v; want ErrNoFleetKey", err)
	}
	dir := t.TempDir()
	m := &MetaPoster{P: outboxPoster(t, dir)}
	if err := m.Post(context.Background(), "sev=meta kind=triage head=3"); err != nil || m.Status != poster.Queued {
		t.Fatalf("no log: %v, status %q; want queued", err, m.Status)
	}
	items, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(items) != 1 {
		t.Fatalf("%d outbox items; want 1", len(items))
	}
	b, err := os.ReadFile(items[0])
	if err != nil || !strings.Contains(string(b), "sev=meta kind=triage head=3") {
		t.Fatalf("outbox item %s: %v", b, err)
	}
}

// TestFixRecordsFormatsAndQueues: a fix record is posted as fleet.Format
// writes it (its ref= naming the cluster); queued, it has no index; one
// that does not format is refused and nothing is queued.
func TestFixRecordsFormatsAndQueues(t *testing.T) {
	dir := t.TempDir()
	r := FixRecords{P: outboxPoster(t, dir)}
	bad := fleet.Finding{Source: "fix", Severity: fleet.SeverityInfo, Surface: fleet.SurfaceCompiler, Kind: fleet.KindResolution, Ref: "c1", Summary: "\xff"}
	if idx, err := r.Post(context.Background(), bad); err == nil || idx != nil {
		t.Fatalf("a record that does not format: %v, %v; want an error", idx, err)
	}
	if items, _ := filepath.Glob(filepath.Join(dir, "*.json")); len(items) != 0 {
		t.Fatalf("%d outbox items after a refused record; want 0", len(items))
	}
	f := fleet.Finding{Source: "fix", Severity: fleet.SeverityInfo, Surface: fleet.SurfaceCompiler, Kind: fleet.KindResolution, Ref: "c1", Summary: "fix proposed"}
	if _, err := fleet.Format(f); err != nil {
		t.Fatal(err)
	}
	idx, err := r.Post(context.Background(), f)
	if err != nil || idx != nil {
		t.Fatalf("queued: %v, %v; want no index, no error", idx, err)
	}
	items, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(items) != 1 {
		t.Fatalf("%d outbox items; want 1", len(items))
	}
	if b, _ := os.ReadFile(items[0]); !strings.Contains(string(b), "ref=c1") || !strings.Contains(string(b), "fix proposed") {
		t.Fatalf("outbox item %s; want the formatted record", b)
	}
}
