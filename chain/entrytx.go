package chain

import (
	"context"
	"encoding/hex"
	"fmt"
	"github.com/qafleet/fleetd/chain/feedwire"
	"slices"
	"sync"
	"time"
)

// EntryTx is where a log entry was appended.
type EntryTx struct {
	Tx    string `json:"tx"` // 0x-prefixed transaction hash
	Block uint64 `json:"block"`
}

// The defaults of TxSearch: at most 200 eth_getLogs of 5,000 blocks each.
const (
	DefaultTxChunk  = 5000
	DefaultTxChunks = 200
)

// TxSearch bounds one EntryTxs call.
type TxSearch struct {
	Chunk  uint64        // blocks per eth_getLogs; default DefaultTxChunk
	Chunks int           // eth_getLogs calls at most; default DefaultTxChunks
	Budget time.Duration // no new eth_getLogs after this long (one always runs); 0: Chunks alone bound the call
	Cache  *TxCache      // what earlier calls found; nil: a call starts from nothing
}

func (s TxSearch) withDefaults() TxSearch {
	if s.Chunk == 0 {
		s.Chunk = DefaultTxChunk
	}
	if s.Chunks <= 0 {
		s.Chunks = DefaultTxChunks
	}
	return s
}

// TxCache is what EntryTxs calls on one log have read: the transaction of
// every entry in the blocks they searched, and which blocks those were,
// so a long-lived caller (the console) reads each block once. The zero
// value is empty. It is safe for concurrent use: calls sharing a cache
// wait for each other rather than read the same blocks twice. A reorg
// after a block was read is not noticed.
type TxCache struct {
	mu     sync.Mutex
	found  map[uint64]EntryTx
	read   bool   // lo and hi are set
	lo, hi uint64 // blocks [lo, hi] have been read, no others
	least  uint64 // the smallest entry index found (when found is not empty)
}

// next returns the next blocks to read below head, newest first: the
// newest chunk when nothing was read yet, then the blocks appended since
// the last read (oldest first, so the read range stays one interval),
// then the chunk below the read range. ok is false when every block up to
// head has been read.
func (c *TxCache) next(head, chunk uint64) (from, to uint64, ok bool) {
	switch {
	case !c.read:
		return head - min(head, chunk-1), head, true
	case c.hi < head:
		return c.hi + 1, min(head, c.hi+chunk), true
	case c.lo > 0:
		return c.lo - min(c.lo, chunk), c.lo - 1, true
	}
	return 0, 0, false
}

// add records the FeedbackSubmitted logs of blocks [from, to].
func (c *TxCache) add(from, to uint64, logs []Log) {
	if c.found == nil {
		c.found = map[uint64]EntryTx{}
	}
	for _, l := range logs {
		if l.Removed || len(l.Topics) < 2 {
			continue
		}
		i, err := feedwire.Uint64(l.Topics[1][:])
		if err != nil {
			continue // an id past 64 bits is no entry of this log
		}
		if len(c.found) == 0 || i < c.least {
			c.least = i
		}
		c.found[i] = EntryTx{Tx: "0x" + hex.EncodeToString(l.TxHash[:]), Block: l.Block}
	}
	if !c.read {
		c.lo, c.hi, c.read = from, to, true
		return
	}
	c.lo, c.hi = min(c.lo, from), max(c.hi, to)
}

// absent reports whether none of missing can be on the chain up to head:
// every block from the read range's bottom to head has been read and an
// entry older than all of them was found there. Entries are numbered in
// the order they are appended, so a missing one would lie between that
// entry's block and head.
func (c *TxCache) absent(missing []uint64, head uint64) bool {
	return c.read && c.hi >= head && len(c.found) > 0 && len(missing) > 0 && c.least < slices.Min(missing)
}

// EntryTxs finds the transaction of each entry in idx from the log's
// FeedbackSubmitted events (the entry id is the first indexed topic),
// reading blocks newest first within s's bounds; s.Cache keeps what was
// read for the next call. Triage's store keeps index, sender, time and text
// but no transaction, and the log's contract keeps none either. An entry
// older than the search reached, or not on the chain, is missing from the
// result. The error is the node's (a block number or a log query it did
// not answer); the result then holds what was found before it.
func (l *FeedbackLog) EntryTxs(ctx context.Context, idx []uint64, s TxSearch) (map[uint64]EntryTx, error) {
	s = s.withDefaults()
	c := s.Cache
	if c == nil {
		c = &TxCache{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[uint64]EntryTx, len(idx))
	var missing []uint64
	take := func() {
		missing = missing[:0]
		for _, i := range idx {
			if t, ok := c.found[i]; ok {
				out[i] = t
			} else if !slices.Contains(missing, i) {
				missing = append(missing, i)
			}
		}
	}
	take()
	if len(missing) == 0 {
		return out, nil
	}
	head, err := l.c.BlockNumber(ctx)
	if err != nil {
		return out, fmt.Errorf("entry txs: %w", err)
	}
	stop := time.Now().Add(s.Budget)
	for n := 0; n < s.Chunks && len(missing) > 0 && !c.absent(missing, head); n++ {
		if n > 0 && s.Budget > 0 && !time.Now().Before(stop) {
			break
		}
		from, to, ok := c.next(head, s.Chunk)
		if !ok {
			break
		}
		logs, err := l.c.FilterLogs(ctx, l.Address(), TopicFeedbackSubmitted, from, to)
		if err != nil {
			return out, fmt.Errorf("entry txs: %w", err)
		}
		c.add(from, to, logs)
		take()
	}
	return out, nil
}
