package chain

import (
	"context"
	"fmt"
	"math/big"
	"strconv"
	"strings"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/qafleet/fleetd/fleet"
)

// Throwaway keys are derived, not random: key n of run r is
// keccak256("fleetd/throwaway/v1" ‖ sponsor secret ‖ r ‖ n) reduced into the
// curve's range. Whoever holds the sponsor key can recompute every throwaway
// key it ever funded and sweep it, without the disk of the process that ran
// the run (a Kubernetes pod's data dir dies with the pod). The trade-off: the
// sponsor secret now also unlocks whatever the throwaway keys hold at any
// moment, which is at most a run's wei budget each and was the sponsor's
// money anyway; nobody without the sponsor secret can derive them.
//
// Every funding transaction carries a marker in its calldata naming the run
// and n ("fleetd/throwaway/v1 <run> <n>"), so the keys a sponsor funded can
// be found from the chain alone (FundingsBy).

const throwawayDomain = "fleetd/throwaway/v1"

// DeriveThrowawayKey returns throwaway key n of run, derived from sponsor.
func DeriveThrowawayKey(sponsor *Key, run string, n int) (*Key, error) {
	if sponsor == nil || sponsor.priv == nil {
		return nil, fmt.Errorf("derive throwaway key: no sponsor key")
	}
	if run == "" || n < 0 {
		return nil, fmt.Errorf("derive throwaway key: bad run %q or index %d", run, n)
	}
	secret := crypto.FromECDSA(sponsor.priv)
	defer clear(secret)
	h := crypto.Keccak256([]byte(throwawayDomain), secret, []byte(run), []byte(strconv.Itoa(n)))
	// d in [1, N-1]: h mod (N-1) + 1, never zero, never past the order.
	nMinus1 := new(big.Int).Sub(crypto.S256().Params().N, big.NewInt(1))
	d := new(big.Int).Mod(new(big.Int).SetBytes(h), nMinus1)
	d.Add(d, big.NewInt(1))
	priv, err := crypto.ToECDSA(leftPad32(d.Bytes()))
	if err != nil {
		return nil, fmt.Errorf("derive throwaway key: %w", err)
	}
	return newKey(priv, fmt.Sprintf("derived(%s #%d)", run, n)), nil
}

func leftPad32(b []byte) []byte {
	out := make([]byte, 32)
	copy(out[32-len(b):], b)
	return out
}

// ThrowawayMarker is the calldata of the transaction funding throwaway key n
// of run.
func ThrowawayMarker(run string, n int) []byte {
	return []byte(throwawayDomain + " " + run + " " + strconv.Itoa(n))
}

// ParseThrowawayMarker reads a funding transaction's calldata; ok is false
// for anything that is not a well-formed marker (data on chain is anyone's).
func ParseThrowawayMarker(data []byte) (run string, n int, ok bool) {
	rest, found := strings.CutPrefix(string(data), throwawayDomain+" ")
	if !found || len(rest) > 200 {
		return "", 0, false
	}
	run, num, found := strings.Cut(rest, " ")
	if !found || run == "" || strings.ContainsAny(run, " \n\t") {
		return "", 0, false
	}
	n, err := strconv.Atoi(num)
	if err != nil || n < 0 || n > 1<<20 || strconv.Itoa(n) != num {
		return "", 0, false
	}
	return run, n, true
}

// Funding is one throwaway key funded by a sponsor, found on chain.
type Funding struct {
	Run   string
	N     int
	To    fleet.Address
	Wei   *big.Int
	Block uint64
	Tx    string
}

// FundingsBy lists the throwaway fundings sponsor sent in blocks [from, to]:
// transactions from sponsor whose calldata is a ThrowawayMarker. It reads
// every block in the range (bound it: each is one request).
func (c *Client) FundingsBy(ctx context.Context, sponsor fleet.Address, from, to uint64) ([]Funding, error) {
	chainID, err := c.id(ctx)
	if err != nil {
		return nil, err
	}
	signer := types.LatestSignerForChainID(chainID)
	var out []Funding
	for b := from; b <= to; b++ {
		rctx, cancel := c.reqCtx(ctx)
		blk, err := c.eth.BlockByNumber(rctx, new(big.Int).SetUint64(b))
		cancel()
		if err != nil {
			return out, fmt.Errorf("fundings: block %d: %w", b, err)
		}
		for _, tx := range blk.Transactions() {
			run, n, ok := ParseThrowawayMarker(tx.Data())
			if !ok || tx.To() == nil {
				continue
			}
			if from, err := types.Sender(signer, tx); err != nil || fleet.Address(from) != sponsor {
				continue
			}
			out = append(out, Funding{Run: run, N: n, To: fleet.Address(*tx.To()), Wei: tx.Value(), Block: b, Tx: tx.Hash().Hex()})
		}
		if b == to { // to may be MaxUint64-safe
			break
		}
	}
	return out, nil
}

// NamesRegisteredTo returns the names registered to owner in blocks [from,
// to], from the registry's Registered events (owner is an indexed topic), in
// log order. A name may since have been released or moved: check OwnerOf.
func (r *Registry) NamesRegisteredTo(ctx context.Context, owner fleet.Address, from, to uint64) ([]string, error) {
	ctx, cancel := r.c.reqCtx(ctx)
	defer cancel()
	logs, err := r.c.eth.FilterLogs(ctx, ethereum.FilterQuery{
		FromBlock: new(big.Int).SetUint64(from), ToBlock: new(big.Int).SetUint64(to),
		Addresses: []common.Address{r.addr},
		Topics:    [][]common.Hash{{TopicRegistered}, {common.BytesToHash(owner[:])}},
	})
	if err != nil {
		return nil, fmt.Errorf("names registered to %s: %w", owner, err)
	}
	var names []string
	for i := range logs {
		ev, err := r.b.UnpackRegisteredEvent(&logs[i])
		if err != nil {
			continue // not the reference event layout: skip, never guess
		}
		names = append(names, ev.Name)
	}
	return names, nil
}
