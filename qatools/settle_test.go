package qatools

import (
	"context"
	"math/big"
	"strings"
	"testing"

	"github.com/qafleet/fleetd/fleet"
)

// TestSettleFundingsAtObserve: at observe, where the guard refuses the
// sponsor's plain transfers, SettleFundings still goes through (it is
// cleanup: a 0-wei transfer from the sponsor to itself) and is mined, so
// the sponsor's next nonce before it is mined past: a funding noted there
// and never taken by the node can no longer land.
func TestSettleFundingsAtObserve(t *testing.T) {
	h := newHarness(t, fleet.Observe)
	ctx := context.Background()
	sponsor := h.sponsor.Address()
	next := uint64(0)
	for {
		ok, err := h.client.NonceSettled(ctx, sponsor, next)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		next++
	}
	if _, err := h.client.Transfer(ctx, h.sponsor, sponsor, new(big.Int)); err == nil || !strings.Contains(err.Error(), "dial is observe") {
		t.Fatalf("a plain transfer at observe: %v, want the dial's refusal", err)
	}
	if err := SettleFundings(ctx, h.env); err != nil {
		t.Fatalf("SettleFundings at observe: %v", err)
	}
	if ok, err := h.client.NonceSettled(ctx, sponsor, next); err != nil || !ok {
		t.Errorf("the sponsor's nonce %d not mined past after SettleFundings: %v, %v", next, ok, err)
	}
	if err := SettleFundings(ctx, &Env{Chain: h.client}); err == nil || !strings.Contains(err.Error(), "no sponsor key") {
		t.Errorf("without a sponsor: %v, want an error saying so", err)
	}
}
