package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/chain/devchain"
	"github.com/qafleet/fleetd/fixer"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/triage"
)

// TestItemEntries gives a work item's entries their sender, block time and
// transaction from the embedded dev chain, keeps the transactions in
// <state>/txs.json ({"<index>": "0x<hash>"}) and takes them from there
// the next time.
func TestItemEntries(t *testing.T) {
	ctx := context.Background()
	sponsor, _ := chain.GenerateKey()
	ch, err := devchain.Start(ctx, devchain.Config{Funded: []devchain.Account{{Address: sponsor.Address(), Wei: new(big.Int).Lsh(big.NewInt(1), 70)}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.Close() })
	c, err := chain.Dial(ctx, ch.URL(), chain.Options{ReceiptTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	log, _, err := c.DeployFeedbackLog(ctx, sponsor)
	if err != nil {
		t.Fatal(err)
	}
	var subs []*chain.Submission
	for i := range 3 {
		s, err := log.Submit(ctx, sponsor, fmt.Sprintf("qa/v1 source=qa-fuzz sev=high surface=compiler\ncrash %d", i))
		if err != nil {
			t.Fatal(err)
		}
		subs = append(subs, s)
	}
	state := t.TempDir()
	p := &Fix{cfg: FixConfig{StateDir: state, Log: log}}
	wi := triage.WorkItem{ID: "0123456789abcdef", Title: "crash", Surface: fleet.SurfaceCompiler, Entries: []uint64{0, 2}}

	it := p.Item(ctx, wi)
	if it.Latest != 2 || len(it.Entries) != 2 {
		t.Fatalf("item %+v", it)
	}
	for k, i := range []int{0, 2} {
		e := it.Entries[k]
		if e.Index != uint64(i) || e.Sender != sponsor.Address() || e.Time.IsZero() || e.Tx != subs[i].Tx {
			t.Errorf("entry %d: %+v, want tx %s", i, e, subs[i].Tx)
		}
	}
	cachePath := filepath.Join(state, "txs.json")
	readCache := func() map[string]string {
		t.Helper()
		b, err := os.ReadFile(cachePath)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]string
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("txs.json: %v: %s", err, b)
		}
		return m
	}
	if diff := cmp.Diff(map[string]string{"0": subs[0].Tx, "2": subs[2].Tx}, readCache()); diff != "" {
		t.Errorf("txs.json (-want +got):\n%s", diff)
	}

	// What the file holds is not looked up again.
	if err := os.WriteFile(cachePath, []byte(`{"0":"0xfeed"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	wi.Entries = []uint64{0, 1}
	it = p.Item(ctx, wi)
	if it.Entries[0].Tx != "0xfeed" || it.Entries[1].Tx != subs[1].Tx {
		t.Errorf("with the cache: %+v", it.Entries)
	}
	if diff := cmp.Diff(map[string]string{"0": "0xfeed", "1": subs[1].Tx}, readCache()); diff != "" {
		t.Errorf("txs.json after the second item (-want +got):\n%s", diff)
	}
}

func TestWorkItems(t *testing.T) {
	ctx := context.Background()
	repro := &fleet.Repro{Tool: "qa_compile", Args: json.RawMessage(`{"source":"x"}`)}
	report := func(id string) fleet.Report {
		return fleet.Report{Schema: 1, Clusters: []fleet.Cluster{
			{ID: id, State: fleet.ClusterOpen, Trusted: true, Repro: repro, Entries: []uint64{1}},
			{ID: "untrusted", State: fleet.ClusterOpen, Repro: repro},
		}}
	}
	dir := t.TempDir()
	failed := errors.New("the store is held")
	fresh := func(r fleet.Report, err error) func(context.Context) (fleet.Report, error) {
		return func(context.Context) (fleet.Report, error) { return r, err }
	}
	ids := func(items []triage.WorkItem) (out []string) {
		for _, wi := range items {
			out = append(out, wi.ID)
		}
		return out
	}

	if _, _, err := WorkItems(ctx, fresh(fleet.Report{}, failed), dir); !errors.Is(err, failed) || !strings.HasPrefix(err.Error(), "triage: ") {
		t.Errorf("no pass and no saved report: %v", err)
	}
	items, _, err := WorkItems(ctx, fresh(report("fresh"), nil), dir)
	if err != nil || !cmp.Equal(ids(items), []string{"fresh"}) {
		t.Errorf("a fresh pass: %v, %v", ids(items), err)
	}
	if err := triage.WriteReport(dir, report("saved"), 0, 0); err != nil {
		t.Fatal(err)
	}
	items, r, err := WorkItems(ctx, fresh(fleet.Report{}, failed), dir)
	if err != nil || !cmp.Equal(ids(items), []string{"saved"}) || len(r.Clusters) != 2 {
		t.Errorf("the saved report: %v, %d clusters, %v", ids(items), len(r.Clusters), err)
	}
}

func TestPRLinks(t *testing.T) {
	dir := t.TempDir()
	if got := PRLinks(dir); got != nil {
		t.Errorf("no state: %v", got)
	}
	recs := []fixer.Record{
		{Fingerprint: "0123456789abcdef", Number: 3, State: fixer.StateMerged, URL: "https://forge/pr/3", Verified: true},
		{Fingerprint: "fedcba9876543210"}, // needs-repro, no PR
		{Fingerprint: "00000000000000aa", Number: 4, State: fixer.StateDraft, URL: "https://forge/pr/4",
			Cause: &fixer.Bisection{Commit: "0123456789abcdef0123456789abcdef01234567", Subject: "simplify enum lowering", Date: time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)}},
		{Fingerprint: "00000000000000bb", Number: 5, State: fixer.StateDraft, URL: "https://forge/pr/5", Cause: &fixer.Bisection{Note: "stopped at the time bound"}},
	}
	b, _ := json.Marshal(map[string]any{"schema": 1, "records": recs})
	if err := os.WriteFile(filepath.Join(dir, "prs.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	want := map[string]fleet.PRLink{
		"0123456789abcdef": {Number: 3, State: fixer.StateMerged, URL: "https://forge/pr/3", Verified: true},
		"00000000000000aa": {Number: 4, State: fixer.StateDraft, URL: "https://forge/pr/4", Cause: `introduced by 0123456789ab "simplify enum lowering" (2026-11-20)`},
		"00000000000000bb": {Number: 5, State: fixer.StateDraft, URL: "https://forge/pr/5"},
	}
	if diff := cmp.Diff(want, PRLinks(dir)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if err := os.WriteFile(filepath.Join(dir, "prs.json"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := PRLinks(dir); got != nil {
		t.Errorf("corrupt state: %v", got)
	}
}
