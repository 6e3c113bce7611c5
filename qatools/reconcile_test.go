package qatools

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
)

// TestReconcileFromChain: a run mints names under throwaway keys, then its
// process dies with its disk (the sandbox is deleted, nothing is cleaned up).
// ReconcileChain, holding only the sponsor key and the chain, releases the
// names and sweeps the keys to zero; runs that may be live are left alone.
func TestReconcileFromChain(t *testing.T) {
	h := newHarness(t, fleet.Exercise)
	ctx := context.Background()
	const crashed = "r-20200101-000000-abcdef" // started long ago
	run, reg := h.newRun(crashed, fleet.Budget{MaxWrites: 10, MaxWei: 1 << 62})
	var names []string
	for range 2 {
		out, err := h.call(reg, "qa_create", map[string]any{})
		if err != nil || !out.Result.IsOK() {
			t.Fatalf("qa_create: %v %v", out.Result, err)
		}
		names = append(names, out.Result["name"].(string))
	}
	// A second run that looks recent: it may be running on another machine.
	const young = "r-20991231-235959-000001"
	_, reg2 := h.newRun(young, fleet.Budget{MaxWrites: 10, MaxWei: 1 << 62})
	if out, err := h.call(reg2, "qa_create", map[string]any{}); err != nil || !out.Result.IsOK() {
		t.Fatalf("qa_create: %v %v", out.Result, err)
	}
	run.Sandbox.Abandon()
	if err := os.RemoveAll(run.Sandbox.Dir()); err != nil { // the pod and its data dir are gone
		t.Fatal(err)
	}

	head, _ := h.client.BlockNumber(ctx)
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	got, err := ReconcileChain(ctx, h.env, 0, head, time.Hour, now, nil)
	if err != nil {
		t.Fatal(err)
	}
	byRun := map[string]Stranded{}
	for _, s := range got {
		byRun[s.Run] = s
	}
	c := byRun[crashed]
	if c.Keys != 2 || len(c.Released) != 2 || c.Swept.Sign() <= 0 || c.Skipped != "" {
		t.Fatalf("crashed run: %+v, want 2 keys, 2 names released, funds swept", c)
	}
	if y := byRun[young]; y.Skipped == "" || y.Stranded() {
		t.Errorf("a run younger than the minimum age was touched: %+v", y)
	}
	for i, name := range names {
		if owner, _ := h.env.Registry.OwnerOf(ctx, name); !owner.IsZero() {
			t.Errorf("%s still owned by %s", name, owner)
		}
		key, _ := chain.DeriveThrowawayKey(h.sponsor, crashed, i)
		if bal, _ := h.client.Balance(ctx, key.Address()); bal.Sign() != 0 {
			t.Errorf("throwaway key %d holds %s wei after reconcile, want 0", i, bal)
		}
	}
	// Idempotent: nothing left to do the second time.
	again, err := ReconcileChain(ctx, h.env, 0, head, time.Hour, now, func(run string) bool { return run == young })
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range again {
		if s.Stranded() {
			t.Errorf("second pass found %+v", s)
		}
	}
}

func TestRunStarted(t *testing.T) {
	if at, ok := RunStarted("r-20261124-210718-9a2fe1"); !ok || !at.Equal(time.Date(2026, 11, 24, 21, 7, 18, 0, time.UTC)) {
		t.Errorf("RunStarted = %v, %v", at, ok)
	}
	for _, bad := range []string{"", "r-1", "run-20261124-210718-x", "r-20261399-999999-a"} {
		if _, ok := RunStarted(bad); ok {
			t.Errorf("RunStarted(%q) ok", bad)
		}
	}
}

// BenchmarkReconcileChain100 times `fleetd reconcile --from-chain` over 100
// crashed runs, each of which funded one throwaway key and minted one name:
// reading the blocks, deriving the keys, releasing the names and sweeping.
func BenchmarkReconcileChain100(b *testing.B) {
	h := newHarness(b, fleet.Exercise)
	ctx := context.Background()
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		for r := range 100 {
			id := fmt.Sprintf("r-20200101-000000-%06x", i*100+r)
			run, reg := h.newRun(id, fleet.Budget{MaxWrites: 10, MaxWei: 1 << 62})
			if out, err := h.call(reg, "qa_create", map[string]any{}); err != nil || !out.Result.IsOK() {
				b.Fatalf("qa_create: %v %v", out.Result, err)
			}
			run.Sandbox.Abandon() // crashed: nothing cleaned up
		}
		head, _ := h.client.BlockNumber(ctx)
		b.StartTimer()
		got, err := ReconcileChain(ctx, h.env, 0, head, time.Hour, now, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		swept := 0
		for _, s := range got {
			if s.Stranded() {
				swept++
			}
		}
		if swept != 100 {
			b.Fatalf("reconciled %d runs, want 100", swept)
		}
		b.StartTimer()
	}
}
