package chain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"reflect"
	"regexp"
	"strings"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/rpc"
	"github.com/qafleet/fleetd/chain/contracts"
	"github.com/qafleet/fleetd/fleet"
)

// Registry is a name registry implementing INameRegistry (DESIGN.md §7):
// the platform contract fleetd probes. Any implementation works; its custom
// errors decode by name when they match the reference implementation's.
type Registry struct {
	c    *Client
	addr common.Address
	b    *contracts.NameRegistry
	abi  *abi.ABI
}

var registryBinding = contracts.NewNameRegistry()

// Registry returns a handle on the registry at addr.
func (c *Client) Registry(addr fleet.Address) *Registry {
	a := registryBinding.GetABI()
	return &Registry{c: c, addr: common.Address(addr), b: registryBinding, abi: &a}
}

// DeployNameRegistry deploys the reference (correct) registry owned by key.
func (c *Client) DeployNameRegistry(ctx context.Context, key *Key) (*Registry, *Receipt, error) {
	r := c.Registry(fleet.Address{})
	rc, err := c.deploy(ctx, key, common.FromHex(contracts.NameRegistryMetaData.Bin), r.abi)
	if err != nil {
		return nil, rc, fmt.Errorf("name registry: %w", err)
	}
	r.addr = common.Address(rc.Contract)
	return r, rc, nil
}

// Address returns the registry's address.
func (r *Registry) Address() fleet.Address { return fleet.Address(r.addr) }

func (r *Registry) send(ctx context.Context, key *Key, method string, data []byte) (*Receipt, error) {
	return r.sendNoted(ctx, key, method, data, nil)
}

func (r *Registry) sendNoted(ctx context.Context, key *Key, method string, data []byte, note func(nonce uint64, pending bool) error) (*Receipt, error) {
	rc, err := r.c.send(ctx, sendRequest{key: key, to: &r.addr, data: data, method: method, abi: r.abi, note: note})
	if err != nil {
		return rc, fmt.Errorf("%s: %w", method, err)
	}
	return rc, nil
}

// Register claims name for key.
func (r *Registry) Register(ctx context.Context, key *Key, name string) (*Receipt, error) {
	return r.send(ctx, key, "register", r.b.PackRegister(name))
}

// RegisterNoted is Register that tells note the nonce of the transaction
// before it leaves, and withdraws it when the node refused it outright, as
// Client.SendRawNoted does: a mint whose answer was lost (or whose wait was
// cancelled) may land long after this call returned, and until key's mined
// nonce passes it (Client.NonceSettled) nobody can say it will not.
func (r *Registry) RegisterNoted(ctx context.Context, key *Key, name string, note func(nonce uint64, pending bool) error) (*Receipt, error) {
	return r.sendNoted(ctx, key, "register", r.b.PackRegister(name), note)
}

// Release gives up name; only its owner may.
func (r *Registry) Release(ctx context.Context, key *Key, name string) (*Receipt, error) {
	return r.send(ctx, key, "release", r.b.PackRelease(name))
}

// SetMetadata writes value under mkey for name; only its owner may.
func (r *Registry) SetMetadata(ctx context.Context, key *Key, name string, mkey [32]byte, value []byte) (*Receipt, error) {
	return r.send(ctx, key, "setMetadata", r.b.PackSetMetadata(name, mkey, value))
}

// OwnerOf returns name's owner, the zero address for a free name.
func (r *Registry) OwnerOf(ctx context.Context, name string) (fleet.Address, error) {
	out, err := r.c.call(ctx, r.addr, r.b.PackOwnerOf(name), nil, r.abi)
	if err != nil {
		return fleet.Address{}, fmt.Errorf("ownerOf %q: %w", name, err)
	}
	a, err := r.b.UnpackOwnerOf(out)
	if err != nil {
		return fleet.Address{}, fmt.Errorf("ownerOf %q: %w", name, err)
	}
	return fleet.Address(a), nil
}

// Metadata reads the value under mkey for name.
func (r *Registry) Metadata(ctx context.Context, name string, mkey [32]byte) ([]byte, error) {
	out, err := r.c.call(ctx, r.addr, r.b.PackMetadata(name, mkey), nil, r.abi)
	if err != nil {
		return nil, fmt.Errorf("metadata %q: %w", name, err)
	}
	v, err := r.b.UnpackMetadata(out)
	if err != nil {
		return nil, fmt.Errorf("metadata %q: %w", name, err)
	}
	return v, nil
}

// MetadataKey is the bytes32 key for a metadata field name: keccak256(name).
func MetadataKey(field string) [32]byte { return crypto.Keccak256Hash([]byte(field)) }

// CallAs simulates a call from an arbitrary address (eth_call, nothing is
// sent or signed). A revert comes back as *RevertError.
func (c *Client) CallAs(ctx context.Context, from, to fleet.Address, data []byte) ([]byte, error) {
	ctx, cancel := c.reqCtx(ctx)
	defer cancel()
	t := common.Address(to)
	out, err := c.eth.CallContract(ctx, ethereum.CallMsg{From: common.Address(from), To: &t, Data: data}, nil)
	if err != nil {
		return nil, decodeRevert(err, nil)
	}
	return out, nil
}

// ReadMethods is the allowlist of JSON-RPC methods ReadRPC passes through:
// reads only. Anything that could sign, send, unlock or debug is refused;
// the simulations (eth_simulateV1, debug_traceCall with a native tracer:
// checkReadParams) run a call and write nothing.
var ReadMethods = []string{"eth_call", "eth_getCode", "eth_getBalance", "eth_getTransactionCount", "eth_blockNumber", "eth_getLogs", "eth_estimateGas", "eth_chainId",
	"eth_simulateV1", "debug_traceCall"}

// ReadRPC forwards one read-only JSON-RPC call. Methods outside ReadMethods
// are refused with an error wrapping ErrRefused, before anything is sent.
// When the node gives no answer at all (refused, reset, timed out) the
// error wraps ErrUnreachable; a JSON-RPC error or an HTTP status is an
// answer and does not.
func (c *Client) ReadRPC(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	allowed := false
	for _, m := range ReadMethods {
		if method == m {
			allowed = true
		}
	}
	if !allowed {
		return nil, &RefusedError{Rule: "read-only", Reason: fmt.Sprintf("method %q is not a read-only method (allowed: %s)", method, strings.Join(ReadMethods, ", "))}
	}
	if err := checkReadParams(method, params); err != nil {
		return nil, err
	}
	var args []any
	if len(params) > 0 && string(params) != "null" {
		var raw []json.RawMessage
		if err := json.Unmarshal(params, &raw); err != nil {
			return nil, fmt.Errorf("%s: params must be a JSON array: %w", method, err)
		}
		for _, p := range raw {
			args = append(args, p)
		}
	}
	ctx, cancel := c.reqCtx(ctx)
	defer cancel()
	var out json.RawMessage
	if err := c.rpc.CallContext(ctx, &out, method, args...); err != nil {
		if noAnswer(err) {
			return nil, fmt.Errorf("%w: %w", ErrUnreachable, err)
		}
		return nil, decodeRevert(err, nil)
	}
	return out, nil
}

// noAnswer reports whether err from an RPC call means the node gave no
// answer: a network error (refused, reset, unresolvable), the request's
// deadline, or a connection cut before the reply ended. A JSON-RPC error
// object or an HTTP status from the node are answers.
func noAnswer(err error) bool {
	var re rpc.Error
	var he rpc.HTTPError
	if errors.As(err, &re) || errors.As(err, &he) {
		return false
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}

// Selector returns the 4-byte selector of a canonical function signature.
func Selector(signature string) [4]byte {
	return [4]byte(crypto.Keccak256([]byte(signature))[:4])
}

var sigParts = regexp.MustCompile(`^([A-Za-z_$][A-Za-z0-9_$]*)\((.*)\)$`)

// ZeroCalldata builds calldata calling signature with zero values: 0 for
// numbers, the zero address, false, empty bytes, strings and arrays. Probes
// use it to simulate admin functions from a stranger. Tuple parameters are
// not supported and return an error.
func ZeroCalldata(signature string) ([]byte, error) {
	m := sigParts.FindStringSubmatch(strings.ReplaceAll(signature, " ", ""))
	if m == nil {
		return nil, fmt.Errorf("signature %q: want name(type,...)", signature)
	}
	var args abi.Arguments
	var vals []any
	if m[2] != "" {
		for _, t := range strings.Split(m[2], ",") {
			if strings.ContainsAny(t, "()") {
				return nil, fmt.Errorf("signature %q: tuple parameters are not supported", signature)
			}
			typ, err := abi.NewType(t, "", nil)
			if err != nil {
				return nil, fmt.Errorf("signature %q: type %q: %w", signature, t, err)
			}
			args = append(args, abi.Argument{Type: typ})
			vals = append(vals, zeroValue(typ))
		}
	}
	packed, err := args.Pack(vals...)
	if err != nil {
		return nil, fmt.Errorf("signature %q: %w", signature, err)
	}
	sel := Selector(m[1] + "(" + m[2] + ")")
	return append(sel[:], packed...), nil
}

func zeroValue(t abi.Type) any {
	switch t.T {
	case abi.IntTy, abi.UintTy:
		if t.Size > 64 {
			return new(big.Int)
		}
	}
	return reflectZero(t)
}

func reflectZero(t abi.Type) any { return reflect.New(t.GetType()).Elem().Interface() }

// TopicMetadataSet is topic0 of INameRegistry's MetadataSet(string,bytes32):
// the name is in the data, the key is topic1.
var TopicMetadataSet = EventTopic("MetadataSet(string,bytes32)")

// MetadataSet is one MetadataSet event: name's metadata under Key was
// written in Block.
type MetadataSet struct {
	Name  string   `json:"name"`
	Key   [32]byte `json:"key"`
	Block uint64   `json:"block"`
}

// maxSplit bounds how often MetadataEvents halves a block range a node
// refused (nodes cap the blocks or results of one eth_getLogs).
const maxSplit = 12

// MetadataEvents returns the registry's MetadataSet events in blocks
// [from, to], in chain order, at most limit of them (0: no limit; the
// earliest are kept and truncated is true when more exist). A log that does
// not decode as INameRegistry's event (two topics, an ABI-encoded string) is
// skipped: the registry is any implementation and its events are input. A
// range the node refuses is split in halves, up to 12 times; the error names
// the range that still failed.
func (r *Registry) MetadataEvents(ctx context.Context, from, to uint64, limit int) (events []MetadataSet, truncated bool, err error) {
	if from > to {
		return nil, false, nil
	}
	ev, ok := r.abi.Events["MetadataSet"]
	if !ok {
		return nil, false, fmt.Errorf("metadata events: the registry ABI has no MetadataSet event")
	}
	var walk func(from, to uint64, depth int) error
	walk = func(from, to uint64, depth int) error {
		if limit > 0 && len(events) >= limit {
			truncated = true
			return nil
		}
		logs, err := r.c.FilterLogs(ctx, r.Address(), TopicMetadataSet, from, to)
		if err != nil {
			if ctx.Err() != nil || from == to || depth >= maxSplit {
				return fmt.Errorf("metadata events: %w", err)
			}
			mid := from + (to-from)/2
			if err := walk(from, mid, depth+1); err != nil {
				return err
			}
			return walk(mid+1, to, depth+1)
		}
		for _, l := range logs {
			if l.Removed || len(l.Topics) != 2 {
				continue
			}
			vals, err := ev.Inputs.NonIndexed().Unpack(l.Data)
			if err != nil || len(vals) != 1 {
				continue
			}
			name, ok := vals[0].(string)
			if !ok {
				continue
			}
			if limit > 0 && len(events) >= limit {
				truncated = true
				return nil
			}
			events = append(events, MetadataSet{Name: name, Key: l.Topics[1], Block: l.Block})
		}
		return nil
	}
	if err := walk(from, to, 0); err != nil {
		return events, truncated, err
	}
	return events, truncated, nil
}
