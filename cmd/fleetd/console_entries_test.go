package main

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
)

// TestConsoleEntriesCarryTransactions reads entries the way the cluster
// page does, on the embedded dev chain: each with its transaction and
// block from chain's EntryTxs and an index past the log's end dropped,
// the same again on a second read over the source's cache.
func TestConsoleEntriesCarryTransactions(t *testing.T) {
	f := newFleetFixture(t, fleet.Observe, nil)
	ctx := context.Background()
	id, err := chain.LoadKey(f.dn.info.FleetKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	var subs []*chain.Submission
	for _, text := range []string{"qa/v1 source=qa-ux sev=low surface=docs\nDead link one", "qa/v1 source=qa-ux sev=low surface=docs\nDead link two"} {
		s, err := f.dn.log.SubmitFor(ctx, id, f.dn.sponsor, text)
		if err != nil {
			t.Fatal(err)
		}
		subs = append(subs, s)
	}
	a := &app{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard, configPath: f.config}
	if a.cfg, err = LoadConfig(f.config); err != nil {
		t.Fatal(err)
	}
	env, err := a.buildEnv(ctx, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	d := &daemon{env: env}
	d.snap.Store(&snapshot{a: a})
	src := &consoleSource{d: d}
	for range 2 {
		got, err := src.Entries(ctx, []uint64{subs[1].Index, subs[0].Index, 1 << 40})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 {
			t.Fatalf("%d entries, want 2: %+v", len(got), got)
		}
		for i, e := range got {
			s := subs[1-i]
			if e.Index != s.Index || e.Tx != s.Tx || e.Block != s.Block || !strings.Contains(e.Text, "Dead link") {
				t.Errorf("entry %d: %+v, want tx %s in block %d", s.Index, e, s.Tx, s.Block)
			}
		}
	}
}
