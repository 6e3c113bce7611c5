package daemon

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/console"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/qatools"
	"github.com/qafleet/fleetd/runner"
	"github.com/qafleet/fleetd/triage"
)

func TestConsoleTokenRefusesOpenBindWithoutToken(t *testing.T) {
	broken := func(bool) (string, error) { return "", errors.New("http token: readable by other users") }
	good := func(bool) (string, error) { return "tok", nil }
	log := slog.New(slog.DiscardHandler)
	tests := []struct {
		addr    string
		token   func(bool) (string, error)
		want    string
		wantErr string
	}{
		{"127.0.0.1:8787", good, "tok", ""},
		{"0.0.0.0:8787", good, "tok", ""},
		{"127.0.0.1:8787", broken, "", ""}, // read-only on loopback
		{"[::1]:0", broken, "", ""},
		{"0.0.0.0:8787", broken, "", "is not a loopback address"},
		{":8787", broken, "", "is not a loopback address"},
		{"10.1.2.3:80", broken, "", "fleetd http-token"},
	}
	for _, tt := range tests {
		got, err := consoleToken(tt.addr, tt.token, log)
		if got != tt.want || (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("%s: %q, %v; want %q, error with %q", tt.addr, got, err, tt.want, tt.wantErr)
		}
	}
}

// TestConsoleEntriesCarryTransactions reads entries the way the cluster
// page does, on the embedded dev chain: each with its transaction and
// block from chain's EntryTxs and an index past the log's end dropped,
// the same again on a second read over the source's cache.
func TestConsoleEntriesCarryTransactions(t *testing.T) {
	ctx := context.Background()
	id, _ := chain.GenerateKey()
	dc := startDevChain(t)
	ch, client, log, sponsor := dc.chain, dc.client, dc.log, dc.sponsor
	var subs []*chain.Submission
	for _, text := range []string{"qa/v1 source=qa-ux sev=low surface=docs\nDead link one", "qa/v1 source=qa-ux sev=low surface=docs\nDead link two"} {
		s, err := log.SubmitFor(ctx, id, sponsor, text)
		if err != nil {
			t.Fatal(err)
		}
		subs = append(subs, s)
	}
	env := &runner.Env{Env: &qatools.Env{Log: log}, Client: client}
	d := &Daemon{env: env}
	d.snap.Store(&Snapshot{Config: Config{ChainRPC: ch.URL()}})
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

// TestConsolePublishesClusterChanges checks that a triage pass's changes
// reach the live feed, capped so a first pass over a big log does not flood it.
func TestConsolePublishesClusterChanges(t *testing.T) {
	c, err := console.New(console.Config{Control: fleet.NewControl(t.TempDir()), Source: nopSource{}})
	if err != nil {
		t.Fatal(err)
	}
	d := &Daemon{console: c}
	var ch triage.Changes
	for i := range 70 {
		ch.New = append(ch.New, fleet.Cluster{ID: string(rune('a' + i%26)), Title: "t", Severity: fleet.SeverityHigh})
	}
	ch.Regressed = []fleet.Cluster{{ID: "reg", Title: "came back", State: fleet.ClusterRegressed}}
	d.publishChanges(ch)
	ev := c.Hub().Recent(1000, nil)
	if len(ev) != maxClusterEvents+1 {
		t.Fatalf("%d events, want %d", len(ev), maxClusterEvents+1)
	}
	if last := ev[0]; !strings.Contains(last.Text, "and 21 more") {
		t.Errorf("last event %+v", last)
	}
	if first := ev[len(ev)-1]; first.Cluster != "reg" || first.State != "regressed" {
		t.Errorf("regressions first: %+v", first)
	}
}

type nopSource struct{}

func (nopSource) Entries(context.Context, []uint64) ([]console.Entry, error) { return nil, nil }
func (nopSource) Fleet(context.Context) (console.Fleet, error)               { return console.Fleet{}, nil }
