package chain

import (
	"context"
	"errors"
	"math/big"
	"testing"
)

// TestNotedSendCancelledAfterItsNote: a send whose context is cancelled
// once its nonce was noted (a run stopped between qa_create's ledger note
// and the funding's send) does not send, and withdraws its note, so no
// cleanup waits on a funding that cannot land. Before, the transaction
// went out on a cancelled context (refused by the transport, the note
// kept), and the run stayed open until the sponsor's nonce was taken.
func TestNotedSendCancelledAfterItsNote(t *testing.T) {
	b := mustDevchain(t)
	c := mustDial(t, b.url)
	to, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	type note struct {
		nonce   uint64
		pending bool
	}
	var notes []note
	_, err = c.SendRawNoted(ctx, b.sponsor, to.Address(), nil, big.NewInt(1), func(n uint64, pending bool) error {
		notes = append(notes, note{n, pending})
		cancel() // stopped right after the note
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("send after a cancel: %v, want context.Canceled", err)
	}
	if len(notes) != 2 || !notes[0].pending || notes[1].pending || notes[1].nonce != notes[0].nonce {
		t.Fatalf("notes %+v: want the nonce noted, then withdrawn", notes)
	}
	if bal, err := c.Balance(t.Context(), to.Address()); err != nil || bal.Sign() != 0 {
		t.Errorf("the cancelled send reached the node: %s holds %v wei (%v)", to.Address(), bal, err)
	}
	// The nonce is free: the next send takes it and lands.
	if _, err := c.SendRawNoted(t.Context(), b.sponsor, to.Address(), nil, big.NewInt(1), func(n uint64, pending bool) error {
		if n != notes[0].nonce {
			t.Errorf("the next send noted nonce %d, want the withdrawn %d", n, notes[0].nonce)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
