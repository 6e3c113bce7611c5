package qatools

import (
	"context"
	"errors"
	"math/big"
	"strings"
	"testing"

	"github.com/qafleet/fleetd/chain"
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
	// A funding noted at the sponsor's next nonce that never leaves (the
	// note's error stops the send), as a run cancelled between the two.
	var next uint64
	notSent := errors.New("not sent")
	key, _ := chain.GenerateKey()
	cctx := context.WithValue(ctx, cleanupKey{}, true) // the guard lets the sponsor's funding through
	if _, err := h.client.SendRawNoted(cctx, h.sponsor, key.Address(), chain.ThrowawayMarker("r-test", 0), big.NewInt(1e16),
		func(n uint64, _ bool) error { next = n; return notSent }); !errors.Is(err, notSent) {
		t.Fatalf("the funding's note: %v", err)
	}
	if ok, err := h.client.NonceSettled(ctx, sponsor, next); err != nil || ok {
		t.Fatalf("nonce %d settled before anything was sent: %v, %v", next, ok, err)
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
