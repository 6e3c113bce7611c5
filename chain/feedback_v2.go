package chain

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/big"
	"sort"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/rpc"
	"github.com/qafleet/fleetd/chain/contracts"
	"github.com/qafleet/fleetd/chain/feedwire"
	"github.com/qafleet/fleetd/fleet"
	"golang.org/x/sync/errgroup"
)

// FeedbackLog v2 (chain/contracts/FeedbackLogV2.sol) keeps an entry's text
// in its FeedbackText event and only the sender, time, block and
// keccak256(text) in storage: a third of v1's gas for a typical finding. A
// FeedbackLog handle works with either version; it asks the contract once
// (version() answers 2 on v2, and reverts on v1, which has no such function).

var (
	feedbackV2Binding = contracts.NewFeedbackLogV2()
	feedbackV2ABI     = feedbackV2Binding.GetABI()
	topicFeedbackText = feedbackV2ABI.Events["FeedbackText"].ID
)

// versionCache remembers a log's version once it is known.
type versionCache struct {
	mu sync.Mutex
	v  int
}

// Version returns the log's contract version: 1 or 2. It asks the contract
// once and remembers the answer; an error means the node did not answer
// (a contract that reverts version() is v1).
func (l *FeedbackLog) Version(ctx context.Context) (int, error) {
	l.ver.mu.Lock()
	defer l.ver.mu.Unlock()
	if l.ver.v != 0 {
		return l.ver.v, nil
	}
	out, err := l.c.call(ctx, l.addr, feedbackV2Binding.PackVersion(), nil, &feedbackV2ABI)
	switch {
	case IsRevert(err, ""):
		l.ver.v = 1
	case err != nil:
		return 0, fmt.Errorf("feedback log version: %w", err)
	default:
		v, uerr := feedbackV2Binding.UnpackVersion(out)
		switch {
		case uerr != nil || len(out) == 0:
			l.ver.v = 1 // code without version(): a fallback answered, or nothing did
		case v.Cmp(big.NewInt(2)) == 0:
			l.ver.v = 2
		default:
			return 0, fmt.Errorf("feedback log %s: %w: version() says %s", l.Address(), ErrNotFeedbackLog, v)
		}
	}
	return l.ver.v, nil
}

// DeployFeedbackLogV2 deploys a new, empty version-2 log paid for by key.
func (c *Client) DeployFeedbackLogV2(ctx context.Context, key *Key) (*FeedbackLog, *Receipt, error) {
	l := c.FeedbackLog(fleet.Address{})
	r, err := c.deploy(ctx, key, common.FromHex(contracts.FeedbackLogV2MetaData.Bin), &feedbackV2ABI)
	if err != nil {
		return nil, r, fmt.Errorf("feedback log v2: %w", err)
	}
	l.addr = common.Address(r.Contract)
	l.ver.v = 2
	return l, r, nil
}

// interfaceABI is the ABI CheckInterface holds the code to.
func interfaceABI(version int, v1 *abi.ABI) *abi.ABI {
	if version >= 2 {
		return &feedbackV2ABI
	}
	return v1
}

// checkSelectors lists the functions of a whose selectors code lacks
// (PUSH4 selector, as solc emits dispatchers).
func checkSelectors(code []byte, a *abi.ABI) []string {
	var missing []string
	for _, m := range a.Methods {
		if !bytes.Contains(code, append([]byte{0x63}, m.ID...)) {
			missing = append(missing, m.Sig)
		}
	}
	sort.Strings(missing)
	return missing
}

// records reads v2 records [start, start+n) at block.
func (l *FeedbackLog) records(ctx context.Context, start, n uint64, block *big.Int) ([]feedwire.Record, error) {
	data := feedbackV2Binding.PackRecordRange(new(big.Int).SetUint64(start), new(big.Int).SetUint64(n))
	out, err := l.c.call(ctx, l.addr, data, block, &feedbackV2ABI)
	if err != nil {
		return nil, fmt.Errorf("record range %d+%d: %w", start, n, err)
	}
	recs, err := feedwire.DecodeRecords(nil, out)
	if err != nil {
		return nil, fmt.Errorf("record range %d+%d: %w", start, n, err)
	}
	return recs, nil
}

// recordsPerPage is how many v2 records one recordRange call reads (two
// storage slots each: ~5.5M gas per 1,000, far below eth_call's cap).
const recordsPerPage = 1000

// ErrIncomplete is wrapped when the node's logs do not hold an entry's text,
// or hold one that does not hash to what the contract stored: an incomplete
// or altered answer, never silently skipped.
var ErrIncomplete = errors.New("logs do not match the log's records")

// fetchLogs reads v2 entries [from, count) as of block head: records in
// pages, then each page's texts from FeedbackText logs over the blocks the
// records name, every text checked against its stored hash. Pages are sent
// in order.
func (l *FeedbackLog) fetchLogs(ctx context.Context, from, count, head uint64, out chan<- window) error {
	block := new(big.Int).SetUint64(head)
	for next := from; next < count; {
		n := min(recordsPerPage, count-next)
		recs, err := l.records(ctx, next, n, block)
		if err != nil {
			return err
		}
		if uint64(len(recs)) != n {
			return fmt.Errorf("record range %d+%d: %w: node returned %d records", next, n, feedwire.ErrMalformed, len(recs))
		}
		page, err := l.texts(ctx, next, recs, head)
		if err != nil {
			return err
		}
		select {
		case out <- window{pages: [][]Entry{page}}:
		case <-ctx.Done():
			return ctx.Err()
		}
		next += n
	}
	return nil
}

// texts turns records [start, start+len(recs)) into entries, reading their
// texts from the FeedbackText logs of the blocks they were appended in.
func (l *FeedbackLog) texts(ctx context.Context, start uint64, recs []feedwire.Record, head uint64) ([]Entry, error) {
	lo, hi := recs[0].Block, recs[len(recs)-1].Block
	if hi < lo || hi > head {
		return nil, fmt.Errorf("records %d+%d: %w: blocks %d..%d (head %d)", start, len(recs), ErrIncomplete, lo, hi, head)
	}
	found := make([]string, len(recs))
	have := make([]bool, len(recs))
	err := l.logsInRange(ctx, lo, hi, func(lg rawLog) error {
		if len(lg.Topics) < 2 || lg.Topics[0] != topicFeedbackText || lg.Removed {
			return nil
		}
		id, err := feedwire.Uint64(lg.Topics[1][:])
		if err != nil {
			return fmt.Errorf("FeedbackText log in block %d: id: %w", uint64(lg.BlockNumber), err)
		}
		if id < start || id-start >= uint64(len(recs)) {
			return nil // another page's entry sharing a block
		}
		text, err := feedwire.DecodeString(lg.Data, MaxText)
		if err != nil {
			return fmt.Errorf("FeedbackText log of entry %d: %w", id, err)
		}
		found[id-start], have[id-start] = text, true
		return nil
	})
	if err != nil {
		return nil, err
	}
	es := make([]Entry, len(recs))
	for k, r := range recs {
		idx := start + uint64(k)
		if !have[k] {
			return nil, fmt.Errorf("entry %d: %w: no FeedbackText in block %d", idx, ErrIncomplete, r.Block)
		}
		if crypto.Keccak256Hash([]byte(found[k])) != r.TextHash {
			return nil, fmt.Errorf("entry %d: %w: its text does not hash to the stored %x", idx, ErrIncomplete, r.TextHash[:8])
		}
		es[k] = Entry{Index: idx, Sender: fleet.Address(r.Sender), Time: time.Unix(int64(r.Time), 0).UTC(), Text: found[k]}
	}
	return es, nil
}

// rawLog is the part of an eth_getLogs result the reader uses.
type rawLog struct {
	Topics      []common.Hash  `json:"topics"`
	Data        hexutil.Bytes  `json:"data"`
	BlockNumber hexutil.Uint64 `json:"blockNumber"`
	Removed     bool           `json:"removed"`
}

type logFilter struct {
	Address   common.Address  `json:"address"`
	FromBlock hexutil.Uint64  `json:"fromBlock"`
	ToBlock   hexutil.Uint64  `json:"toBlock"`
	Topics    [][]common.Hash `json:"topics"`
}

// logsInRange calls fn with the log's FeedbackText logs in blocks [lo, hi],
// asking in ranges of at most ReadLimits.LogBlocks blocks, several per batch
// request and several requests at once. A range the node refuses (too
// many results, too wide, a timeout) is asked again in halves, down to one
// block; fn sees logs in no particular order.
func (l *FeedbackLog) logsInRange(ctx context.Context, lo, hi uint64, fn func(rawLog) error) error {
	lim := l.limits
	var ranges [][2]uint64
	for b := lo; b <= hi; b += lim.LogBlocks {
		ranges = append(ranges, [2]uint64{b, min(hi, b+lim.LogBlocks-1)})
		if b+lim.LogBlocks < b { // overflow
			break
		}
	}
	var mu sync.Mutex
	for len(ranges) > 0 {
		results := make([][]rawLog, len(ranges))
		errs := make([]error, len(ranges))
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(lim.Batches)
		for b := 0; b < len(ranges); b += lim.PagesPerBatch {
			end := min(b+lim.PagesPerBatch, len(ranges))
			g.Go(func() error {
				elems := make([]rpc.BatchElem, end-b)
				for i := range elems {
					r := ranges[b+i]
					f := logFilter{Address: l.addr, FromBlock: hexutil.Uint64(r[0]), ToBlock: hexutil.Uint64(r[1]), Topics: [][]common.Hash{{topicFeedbackText}}}
					elems[i] = rpc.BatchElem{Method: "eth_getLogs", Args: []any{f}, Result: &results[b+i]}
				}
				rctx, cancel := l.c.reqCtx(gctx)
				defer cancel()
				if err := l.c.batch(rctx, elems); err != nil {
					return err
				}
				for i := range elems {
					errs[b+i] = elems[i].Error
				}
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			return fmt.Errorf("logs of %s in blocks %d..%d: %w", l.Address(), lo, hi, err)
		}
		var retry [][2]uint64
		for i, r := range ranges {
			if errs[i] != nil {
				if r[0] == r[1] || ctx.Err() != nil {
					return fmt.Errorf("logs of %s in block %d: %w", l.Address(), r[0], errs[i])
				}
				mid := r[0] + (r[1]-r[0])/2
				retry = append(retry, [2]uint64{r[0], mid}, [2]uint64{mid + 1, r[1]})
				continue
			}
			mu.Lock()
			for _, lg := range results[i] {
				if err := fn(lg); err != nil {
					mu.Unlock()
					return err
				}
			}
			mu.Unlock()
		}
		ranges = retry
	}
	return nil
}

// atV2 reads entry i of a v2 log: its record, then its text from the
// FeedbackText log of the record's block.
func (l *FeedbackLog) atV2(ctx context.Context, i uint64) (Entry, error) {
	out, err := l.c.call(ctx, l.addr, feedbackV2Binding.PackRecordAt(new(big.Int).SetUint64(i)), nil, &feedbackV2ABI)
	if err != nil {
		return Entry{}, fmt.Errorf("feedback %d: %w", i, err)
	}
	rec, err := feedwire.DecodeRecord(out)
	if err != nil {
		return Entry{}, fmt.Errorf("feedback %d: %w", i, err)
	}
	head, err := l.c.BlockNumber(ctx)
	if err != nil {
		return Entry{}, fmt.Errorf("feedback %d: %w", i, err)
	}
	es, err := l.texts(ctx, i, []feedwire.Record{rec}, head)
	if err != nil {
		return Entry{}, fmt.Errorf("feedback %d: %w", i, err)
	}
	return es[0], nil
}

// rangeV2 reads up to count entries of a v2 log from start, clamped like
// v1's feedbackRange.
func (l *FeedbackLog) rangeV2(ctx context.Context, start, count uint64) ([]Entry, error) {
	num, err := l.c.BlockNumber(ctx)
	if err != nil {
		return nil, fmt.Errorf("feedback range %d+%d: %w", start, count, err)
	}
	block := new(big.Int).SetUint64(num)
	recs, err := l.records(ctx, start, min(count, recordsPerPage), block)
	if err != nil || len(recs) == 0 {
		return nil, err
	}
	es, err := l.texts(ctx, start, recs, num)
	if err != nil {
		return nil, fmt.Errorf("feedback range %d+%d: %w", start, count, err)
	}
	return es, nil
}

// digestVersion is the EIP-712 domain version of a log version.
func digestVersion(v int) string {
	if v >= 2 {
		return "2"
	}
	return "1"
}

// FeedbackDigestV is FeedbackDigest in the domain of log version v ("1" or "2").
func FeedbackDigestV(v int, chainID *big.Int, contract, sender common.Address, text string, key [32]byte, prev, deadline *big.Int) common.Hash {
	return feedbackDigest(crypto.Keccak256Hash([]byte(digestVersion(v))), chainID, contract, sender, text, key, prev, deadline)
}
