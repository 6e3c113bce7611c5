package devchain

import (
	"sync"

	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/eth"
	"github.com/ethereum/go-ethereum/eth/catalyst"
)

// sealer produces blocks on demand: whenever the transaction pool announces
// new transactions it seals blocks until nothing executable is left.
//
// It does what catalyst.RegisterSimulatedBeaconAPIs starts for period 0, but
// the chain owns its goroutines. The upstream loop subscribes to the pool from
// inside its goroutine (a node closed right after starting can find the pool
// already closed and the loop then dereferences a nil subscription) and
// cannot be waited for (a block sealed while the node closes its database
// hits a log.Crit, which exits the process). Here the subscription is made
// before Start returns and stop waits for the block being sealed.
type sealer struct {
	sim     *catalyst.SimulatedBeacon
	backend *eth.Ethereum

	quit     chan struct{}
	wg       sync.WaitGroup
	stopOnce sync.Once
}

// startSealer subscribes to the pool and starts sealing. The caller must call
// stop before closing the node.
func startSealer(sim *catalyst.SimulatedBeacon, backend *eth.Ethereum) *sealer {
	s := &sealer{sim: sim, backend: backend, quit: make(chan struct{})}
	txs := make(chan core.NewTxsEvent)
	sub := backend.TxPool().SubscribeTransactions(txs, true)
	// kick holds at most one pending request: transactions that arrive while
	// a block is being sealed are covered by the next round.
	kick := make(chan struct{}, 1)

	s.wg.Add(2)
	// The pool's event feed blocks until every subscriber has received, and
	// sealing waits for the pool (TxPool.Sync): so receiving must never wait
	// for sealing, or the two deadlock. One goroutine receives, one seals.
	go func() {
		defer s.wg.Done()
		defer sub.Unsubscribe()
		for {
			select {
			case <-s.quit:
				return
			case <-sub.Err(): // pool closed
				return
			case <-txs:
				select {
				case kick <- struct{}{}:
				default:
				}
			}
		}
	}()
	go func() {
		defer s.wg.Done()
		for {
			select {
			case <-s.quit:
				return
			case <-kick:
				s.sealPending()
			}
		}
	}()
	return s
}

// sealPending seals blocks until the pool has no executable transaction.
// A transaction the pool calls executable but the miner skips (a fee cap
// below the base fee) keeps this sealing empty blocks, each lowering the base
// fee, until it is included: the same as upstream's loop.
func (s *sealer) sealPending() {
	pool := s.backend.TxPool()
	for {
		select {
		case <-s.quit:
			return
		default:
		}
		// Ask the pool first: a kick can come for a transaction the last
		// block already took, and committing then sealed an empty block,
		// so an entry's block was sometimes two past the one before it.
		if err := pool.Sync(); err != nil {
			return // pool closed
		}
		if executable, _ := pool.Stats(); executable == 0 {
			return
		}
		s.sim.Commit()
	}
}

// stop ends sealing and waits for a block being sealed. Idempotent.
func (s *sealer) stop() {
	s.stopOnce.Do(func() { close(s.quit) })
	s.wg.Wait()
}
