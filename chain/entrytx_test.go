package chain

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestEntryTxs finds entries' transactions on the embedded dev chain (one
// block per submission) through a proxy that counts eth_getLogs: every
// entry within the bounds, none beyond them, a cache that reads each block
// once, an early stop for an entry that is not there, and the node's error.
func TestEntryTxs(t *testing.T) {
	b := mustDevchain(t)
	ctx := context.Background()
	l, _, err := mustDial(t, b.url).DeployFeedbackLog(ctx, b.sponsor)
	if err != nil {
		t.Fatal(err)
	}
	want := map[uint64]EntryTx{}
	submit := func(i uint64) {
		t.Helper()
		s, err := l.Submit(ctx, b.sponsor, fmt.Sprintf("qa/v1 source=qa-smoke sev=low surface=docs\nentry %d", i))
		if err != nil || s.Index != i {
			t.Fatalf("submit %d: %+v %v", i, s, err)
		}
		want[i] = EntryTx{Tx: s.Tx, Block: s.Block}
	}
	for i := range uint64(8) {
		submit(i)
	}
	p := newRPCProxy(t, b.url)
	pl := mustDial(t, p.url).FeedbackLog(l.Address())
	calls := func() int {
		p.mu.Lock()
		defer p.mu.Unlock()
		n := p.methods["eth_getLogs"]
		p.methods["eth_getLogs"] = 0
		return n
	}
	all := []uint64{0, 1, 2, 3, 4, 5, 6, 7}

	got, err := pl.EntryTxs(ctx, all, TxSearch{Chunk: 2})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("every entry (-want +got):\n%s", diff)
	}
	calls()

	// Two one-block reads reach the two newest entries only.
	got, err = pl.EntryTxs(ctx, all, TxSearch{Chunk: 1, Chunks: 2})
	if err != nil || len(got) != 2 || got[6] != want[6] || got[7] != want[7] || calls() != 2 {
		t.Errorf("two one-block reads found %v, %v", got, err)
	}

	// A shared cache: what a read saw is never read again; new blocks are.
	c := &TxCache{}
	find := func(i uint64, reads int) {
		t.Helper()
		got, err := pl.EntryTxs(ctx, []uint64{i}, TxSearch{Chunk: 2, Cache: c})
		if n := calls(); err != nil || got[i] != want[i] || n != reads {
			t.Errorf("entry %d: %v, %v after %d reads; want %v after %d", i, got, err, n, want[i], reads)
		}
	}
	find(7, 1) // blocks of 6 and 7
	find(6, 0)
	find(1, 3) // 4-5, 2-3, 0-1
	find(3, 0)
	submit(8)
	find(8, 1) // only the new block
	find(2, 0)

	// An entry that is not on the chain: the newest block holds an older
	// one, so no block below can hold it.
	if got, err := pl.EntryTxs(ctx, []uint64{999}, TxSearch{Chunk: 1}); err != nil || len(got) != 0 || calls() != 1 {
		t.Errorf("entry 999: %v, %v", got, err)
	}
	if got, _ := pl.EntryTxs(ctx, []uint64{999, 8}, TxSearch{Chunk: 1, Cache: c}); len(got) != 1 || calls() != 0 {
		t.Errorf("entry 999 with the cache: %v", got)
	}
	// A budget bounds the reads after the first.
	if got, err := pl.EntryTxs(ctx, []uint64{0}, TxSearch{Chunk: 1, Budget: time.Nanosecond}); err != nil || len(got) != 0 || calls() != 1 {
		t.Errorf("a spent budget: %v, %v", got, err)
	}

	// The node refuses the range: its error, and what was found before it.
	p.mu.Lock()
	p.maxBlocks = 1
	p.mu.Unlock()
	c = &TxCache{}
	if got, err := pl.EntryTxs(ctx, []uint64{8}, TxSearch{Chunk: 1, Cache: c}); err != nil || len(got) != 1 {
		t.Fatalf("a one-block read: %v, %v", got, err)
	}
	if got, err := pl.EntryTxs(ctx, []uint64{8, 0}, TxSearch{Chunk: 2, Cache: c}); err == nil || got[8] != want[8] || len(got) != 1 {
		t.Errorf("a refused range: %v, %v", got, err)
	}
}
