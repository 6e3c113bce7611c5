package testbed

import (
	"context"
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"
)

// Well-known metadata keys: bytes32 keccak256 of the key's name. The face
// renders every key a name has set; these two get a place of their own.
var (
	// KeyTitle holds a name's page title (keccak256("title")).
	KeyTitle = crypto.Keccak256Hash([]byte("title"))
	// KeyFace holds a name's face, HTML shown as the page body (keccak256("face")).
	KeyFace = crypto.Keccak256Hash([]byte("face"))
)

// registry reads the deployed FlawedRegistry through eth_call and eth_getLogs.
type registry struct {
	eth   *ethclient.Client
	abi   *abi.ABI
	addr  common.Address
	since uint64 // the deployment block; logs before it cannot be the registry's
}

func (r *registry) call(ctx context.Context, method string, args ...any) ([]any, error) {
	data, err := r.abi.Pack(method, args...)
	if err != nil {
		return nil, fmt.Errorf("pack %s: %w", method, err)
	}
	out, err := r.eth.CallContract(ctx, ethereum.CallMsg{To: &r.addr, Data: data}, nil)
	if err != nil {
		return nil, fmt.Errorf("call %s: %w", method, err)
	}
	vals, err := r.abi.Unpack(method, out)
	if err != nil {
		return nil, fmt.Errorf("unpack %s: %w", method, err)
	}
	return vals, nil
}

// ownerOf returns the owner of name, the zero address when it is not registered.
func (r *registry) ownerOf(ctx context.Context, name string) (common.Address, error) {
	vals, err := r.call(ctx, "ownerOf", name)
	if err != nil {
		return common.Address{}, err
	}
	return vals[0].(common.Address), nil
}

// metadata returns one metadata value of name; empty when unset.
func (r *registry) metadata(ctx context.Context, name string, key common.Hash) ([]byte, error) {
	vals, err := r.call(ctx, "metadata", name, [32]byte(key))
	if err != nil {
		return nil, err
	}
	return vals[0].([]byte), nil
}

// metadataKeys returns every key ever set on a name called name, in the
// order first set, from the registry's MetadataSet events.
func (r *registry) metadataKeys(ctx context.Context, name string) ([]common.Hash, error) {
	ev := r.abi.Events["MetadataSet"]
	logs, err := r.eth.FilterLogs(ctx, ethereum.FilterQuery{
		FromBlock: new(big.Int).SetUint64(r.since),
		Addresses: []common.Address{r.addr},
		Topics:    [][]common.Hash{{ev.ID}},
	})
	if err != nil {
		return nil, fmt.Errorf("metadata events: %w", err)
	}
	var keys []common.Hash
	seen := map[common.Hash]bool{}
	for _, l := range logs {
		if len(l.Topics) != 2 {
			continue
		}
		vals, err := ev.Inputs.NonIndexed().Unpack(l.Data)
		if err != nil || len(vals) != 1 {
			continue // not an event this ABI wrote
		}
		if n, _ := vals[0].(string); n == name && !seen[l.Topics[1]] {
			seen[l.Topics[1]] = true
			keys = append(keys, l.Topics[1])
		}
	}
	return keys, nil
}
