package chain

import (
	"context"
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/qafleet/fleetd/fleet"
)

// Log is one event log, as event pollers need it.
type Log struct {
	Block     uint64     `json:"block"`
	BlockHash [32]byte   `json:"block_hash"`
	TxHash    [32]byte   `json:"tx_hash"`
	Index     uint       `json:"index"` // position in the block
	Topics    [][32]byte `json:"topics"`
	Data      []byte     `json:"data"`
	Removed   bool       `json:"removed"`
}

// EventTopic returns topic0 of an event signature, e.g. "Registered(string,address)".
func EventTopic(signature string) [32]byte { return crypto.Keccak256Hash([]byte(signature)) }

// Topic identifiers of the events fleetd watches.
var (
	TopicRegistered        = EventTopic("Registered(string,address)")
	TopicFeedbackSubmitted = EventTopic("FeedbackSubmitted(uint256,address,uint64)")
)

// FilterLogs returns the logs emitted by addr with topic0 in blocks
// [from, to], in chain order.
func (c *Client) FilterLogs(ctx context.Context, addr fleet.Address, topic0 [32]byte, from, to uint64) ([]Log, error) {
	ctx, cancel := c.reqCtx(ctx)
	defer cancel()
	logs, err := c.eth.FilterLogs(ctx, ethereum.FilterQuery{
		FromBlock: new(big.Int).SetUint64(from), ToBlock: new(big.Int).SetUint64(to),
		Addresses: []common.Address{common.Address(addr)}, Topics: [][]common.Hash{{topic0}},
	})
	if err != nil {
		return nil, fmt.Errorf("logs of %s in %d..%d: %w", addr, from, to, err)
	}
	out := make([]Log, len(logs))
	for i, l := range logs {
		topics := make([][32]byte, len(l.Topics))
		for j, t := range l.Topics {
			topics[j] = t
		}
		out[i] = Log{Block: l.BlockNumber, BlockHash: l.BlockHash, TxHash: l.TxHash, Index: l.Index, Topics: topics, Data: l.Data, Removed: l.Removed}
	}
	return out, nil
}

// CodeHash returns keccak256 of the code at addr as of block (the empty
// code's hash when there is none), to notice redeploys.
func (c *Client) CodeHash(ctx context.Context, addr fleet.Address, block uint64) ([32]byte, error) {
	ctx, cancel := c.reqCtx(ctx)
	defer cancel()
	code, err := c.eth.CodeAt(ctx, common.Address(addr), new(big.Int).SetUint64(block))
	if err != nil {
		return [32]byte{}, fmt.Errorf("code of %s at %d: %w", addr, block, err)
	}
	return crypto.Keccak256Hash(code), nil
}

// BlockNumber returns the latest block number.
func (c *Client) BlockNumber(ctx context.Context) (uint64, error) {
	ctx, cancel := c.reqCtx(ctx)
	defer cancel()
	n, err := c.eth.BlockNumber(ctx)
	if err != nil {
		return 0, fmt.Errorf("block number: %w", err)
	}
	return n, nil
}
