package chain

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	mrand "math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/rpc"
	"github.com/qafleet/fleetd/fleet"
)

// Options configures Dial. The zero value is usable.
type Options struct {
	// ChainID, when non-zero, must equal the node's chain id or Dial fails.
	ChainID uint64
	// Timeout bounds each RPC request, including the first one Dial makes;
	// default 10 s.
	Timeout time.Duration
	// ReceiptTimeout bounds the wait for a sent transaction's receipt; default 60 s.
	ReceiptTimeout time.Duration
	// Guard checks every transaction; nil means the default deny-list and no fee cap.
	Guard  *Guard
	Logger *slog.Logger
	// Lazy makes Dial return a client even when the node does not answer
	// (a daemon that starts while its node is down): the chain id is read,
	// and checked against ChainID, at the first request that needs it, and
	// until then every transaction fails wrapping ErrUnreachable. A node
	// that answers with another chain id still fails Dial.
	Lazy bool
}

// Client talks JSON-RPC to any EVM node. All writes go through one path that
// asks the write guard first, tracks nonces locally per key (FACTS.md: fetching
// the pending nonce per send fails under load), and waits for the receipt.
type Client struct {
	url     string
	rpc     *rpc.Client
	http    *http.Client // for batched log reads (callBatch); nil unless url is http(s)
	eth     *ethclient.Client
	chainID atomic.Pointer[big.Int] // nil until the node answered (Options.Lazy)
	opts    Options
	guard   *Guard
	log     *slog.Logger

	mu     sync.Mutex
	nonces map[common.Address]uint64
	locks  map[common.Address]*sync.Mutex
}

// ErrWrongChain is returned by Dial when the node's chain id differs from the configured one.
var ErrWrongChain = errors.New("wrong chain id")

// ErrUnreachable wraps a failure to get any answer from the node.
var ErrUnreachable = errors.New("node unreachable")

// Dial connects to url and checks the chain id. It fails within opts.Timeout
// when the node does not answer, wrapping ErrUnreachable.
func Dial(ctx context.Context, url string, opts Options) (*Client, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Second
	}
	if opts.ReceiptTimeout <= 0 {
		opts.ReceiptTimeout = 60 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	guard := opts.Guard
	if guard == nil {
		var err error
		if guard, err = NewGuard(GuardConfig{}); err != nil {
			return nil, err
		}
	}
	dctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	hc := &http.Client{Timeout: opts.Timeout, Transport: withRetries(transport(url))}
	rc, err := rpc.DialOptions(dctx, url, rpc.WithHTTPClient(hc))
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w: %w", url, ErrUnreachable, err)
	}
	c := &Client{
		url: url, rpc: rc, eth: ethclient.NewClient(rc), opts: opts, guard: guard, http: httpOnly(url, hc),
		log:    opts.Logger.With("component", "chain"),
		nonces: map[common.Address]uint64{}, locks: map[common.Address]*sync.Mutex{},
	}
	if _, err := c.id(dctx); err != nil {
		if opts.Lazy && !errors.Is(err, ErrWrongChain) && ctx.Err() == nil {
			c.log.Warn("node unreachable at dial; the chain id is checked at first contact", "err", err)
			return c, nil
		}
		rc.Close()
		if errors.Is(err, ErrUnreachable) && dctx.Err() != nil && ctx.Err() == nil {
			return nil, fmt.Errorf("dial %s: %w: no answer within %s", url, ErrUnreachable, opts.Timeout)
		}
		return nil, fmt.Errorf("dial %s: %w", url, err)
	}
	return c, nil
}

// id returns the node's chain id, asking the node (and checking the answer
// against Options.ChainID) until it has answered once.
func (c *Client) id(ctx context.Context) (*big.Int, error) {
	if id := c.chainID.Load(); id != nil {
		return id, nil
	}
	rctx, cancel := c.reqCtx(ctx)
	defer cancel()
	id, err := c.eth.ChainID(rctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnreachable, err)
	}
	if c.opts.ChainID != 0 && id.Uint64() != c.opts.ChainID {
		return nil, fmt.Errorf("%w: node says %s, configured %d", ErrWrongChain, id, c.opts.ChainID)
	}
	c.chainID.Store(id)
	return id, nil
}

// Ping asks the node for its chain id (once it has answered, for its head):
// nil when it answers and is the configured chain. A daemon that started
// with its node down uses it to see the node come back.
func (c *Client) Ping(ctx context.Context) error {
	known := c.chainID.Load() != nil
	if _, err := c.id(ctx); err != nil {
		return err
	}
	if !known {
		return nil
	}
	rctx, cancel := c.reqCtx(ctx)
	defer cancel()
	if _, err := c.eth.BlockNumber(rctx); err != nil {
		return fmt.Errorf("%w: %w", ErrUnreachable, err)
	}
	return nil
}

// URL returns the endpoint the client was dialled with.
func (c *Client) URL() string { return c.url }

// ChainID returns the node's chain id, checked at Dial; 0 while a Lazy
// client's node has not answered yet.
func (c *Client) ChainID() uint64 {
	if id := c.chainID.Load(); id != nil {
		return id.Uint64()
	}
	return 0
}

// Guard returns the write guard every transaction passes.
func (c *Client) Guard() *Guard { return c.guard }

// Close releases the connection.
func (c *Client) Close() { c.rpc.Close() }

// reqCtx bounds one request by the client's timeout.
func (c *Client) reqCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.opts.Timeout)
}

// Head returns the latest block's number, hash and timestamp.
func (c *Client) Head(ctx context.Context) (number uint64, hash [32]byte, t time.Time, err error) {
	ctx, cancel := c.reqCtx(ctx)
	defer cancel()
	h, err := c.eth.HeaderByNumber(ctx, nil)
	if err != nil {
		return 0, hash, t, fmt.Errorf("head: %w", err)
	}
	return h.Number.Uint64(), h.Hash(), time.Unix(int64(h.Time), 0).UTC(), nil
}

// Balance returns an account's balance in wei at the latest block.
func (c *Client) Balance(ctx context.Context, a fleet.Address) (*big.Int, error) {
	ctx, cancel := c.reqCtx(ctx)
	defer cancel()
	b, err := c.eth.BalanceAt(ctx, common.Address(a), nil)
	if err != nil {
		return nil, fmt.Errorf("balance of %s: %w", a, err)
	}
	return b, nil
}

// GasPrice returns the node's suggested gas price (base fee plus tip), in
// wei: what a transaction sent now would pay per gas.
func (c *Client) GasPrice(ctx context.Context) (*big.Int, error) {
	ctx, cancel := c.reqCtx(ctx)
	defer cancel()
	p, err := c.eth.SuggestGasPrice(ctx)
	if err != nil {
		return nil, fmt.Errorf("gas price: %w", err)
	}
	return p, nil
}

// Receipt summarises a mined transaction.
type Receipt struct {
	Tx           string        `json:"tx"`
	Block        uint64        `json:"block"`
	GasUsed      uint64        `json:"gas_used"`
	GasEstimated uint64        `json:"gas_estimated"`
	GasLimit     uint64        `json:"gas_limit"`
	Contract     fleet.Address `json:"contract,omitzero"`
	logs         []*types.Log
}

// RevertError is a transaction or call the contract refused. Name is the
// custom error (e.g. "TextTooLong"), "Error" for require strings, "Panic" for
// assertion failures, or "" when the revert carried no decodable data.
type RevertError struct {
	Name   string
	Args   []any
	Fields []string
	Reason string // Error(string) message, if any
	Data   []byte // raw revert data
}

func (e *RevertError) Error() string {
	switch {
	case e.Name == "":
		if len(e.Data) > 0 {
			return "execution reverted (undecoded data 0x" + hex.EncodeToString(e.Data) + ")"
		}
		return "execution reverted"
	case e.Reason != "":
		return "execution reverted: " + e.Reason
	}
	var b strings.Builder
	b.WriteString("execution reverted: " + e.Name + "(")
	for i, a := range e.Args {
		if i > 0 {
			b.WriteString(", ")
		}
		if i < len(e.Fields) && e.Fields[i] != "" {
			b.WriteString(e.Fields[i] + "=")
		}
		fmt.Fprint(&b, a)
	}
	b.WriteString(")")
	return b.String()
}

// IsRevert reports whether err is a revert with the given custom error name
// ("" matches any revert).
func IsRevert(err error, name string) bool {
	var re *RevertError
	return errors.As(err, &re) && (name == "" || re.Name == name)
}

// decodeRevert turns an RPC error into a *RevertError when it carries revert
// data (or says "execution reverted"), using the contract ABI's custom errors.
// Other errors are returned unchanged.
func decodeRevert(err error, a *abi.ABI) error {
	if err == nil {
		return nil
	}
	var de rpc.DataError
	var data []byte
	if errors.As(err, &de) {
		if s, ok := de.ErrorData().(string); ok {
			data, _ = hex.DecodeString(strings.TrimPrefix(s, "0x"))
		}
	}
	if data == nil && !strings.Contains(err.Error(), "execution reverted") {
		return err
	}
	return revertFromData(data, a)
}

func revertFromData(data []byte, a *abi.ABI) *RevertError {
	re := &RevertError{Data: data}
	if len(data) < 4 {
		return re
	}
	if reason, err := abi.UnpackRevert(data); err == nil {
		if strings.HasPrefix(reason, "assert") || data[0] == 0x4e { // Panic(uint256)
			re.Name = "Panic"
		} else {
			re.Name = "Error"
		}
		re.Reason = reason
		return re
	}
	if a == nil {
		return re
	}
	for name, e := range a.Errors {
		if [4]byte(e.ID[:4]) != [4]byte(data[:4]) {
			continue
		}
		re.Name = name
		if args, err := e.Inputs.Unpack(data[4:]); err == nil {
			re.Args = args
			for _, in := range e.Inputs {
				re.Fields = append(re.Fields, in.Name)
			}
		}
		return re
	}
	return re
}

// keyLock serialises sends from one key so nonces are assigned in order.
func (c *Client) keyLock(a common.Address) *sync.Mutex {
	c.mu.Lock()
	defer c.mu.Unlock()
	l, ok := c.locks[a]
	if !ok {
		l = &sync.Mutex{}
		c.locks[a] = l
	}
	return l
}

// call is a read-only eth_call at block (nil = latest).
func (c *Client) call(ctx context.Context, to common.Address, data []byte, block *big.Int, a *abi.ABI) ([]byte, error) {
	ctx, cancel := c.reqCtx(ctx)
	defer cancel()
	out, err := c.eth.CallContract(ctx, ethereum.CallMsg{To: &to, Data: data}, block)
	if err != nil {
		return nil, decodeRevert(err, a)
	}
	return out, nil
}

// sendRequest is one transaction to build, check, sign and send.
type sendRequest struct {
	key    *Key
	to     *common.Address
	data   []byte
	value  *big.Int
	method string
	abi    *abi.ABI // decodes reverts
	// note, if set, is told each nonce before a transaction with it is
	// sent, and again when the node refused it (SendRawNoted).
	note func(nonce uint64, pending bool) error
}

// gasMargin pads estimates: FACTS.md shows fixed limits miss the costliest path.
func gasMargin(est uint64) uint64 { return est + est/4 + 10_000 }

// send runs one transaction through the guard and waits for its receipt. A
// reverted transaction returns its receipt and a *RevertError.
func (c *Client) send(ctx context.Context, r sendRequest) (*Receipt, error) {
	from := common.Address(r.key.Address())
	if r.value == nil {
		r.value = new(big.Int)
	}
	msg := ethereum.CallMsg{From: from, To: r.to, Data: r.data, Value: r.value}
	tx, est, err := c.signAndSend(ctx, r, msg)
	if err != nil {
		return nil, err
	}
	rcpt, err := c.waitReceipt(ctx, tx.Hash())
	if err != nil {
		// The node may have dropped it (a restart empties its pool): the
		// next send re-reads the pending nonce rather than count on this
		// one, which would leave every later transaction from the key
		// behind a gap, never mined.
		c.forgetNonce(from)
		return nil, err
	}
	out := &Receipt{Tx: tx.Hash().Hex(), Block: rcpt.BlockNumber.Uint64(), GasUsed: rcpt.GasUsed, GasEstimated: est, GasLimit: tx.Gas(), logs: rcpt.Logs}
	if rcpt.ContractAddress != (common.Address{}) {
		out.Contract = fleet.Address(rcpt.ContractAddress)
	}
	if rcpt.Status != types.ReceiptStatusSuccessful {
		// Replay the call at the failing block to recover the revert data.
		rctx, cancel := c.reqCtx(ctx)
		defer cancel()
		msg.Gas = tx.Gas()
		_, cerr := c.eth.CallContract(rctx, msg, new(big.Int).Sub(rcpt.BlockNumber, big.NewInt(1)))
		if re := (*RevertError)(nil); errors.As(decodeRevert(cerr, r.abi), &re) {
			return out, re
		}
		return out, &RevertError{}
	}
	return out, nil
}

func (c *Client) signAndSend(ctx context.Context, r sendRequest, msg ethereum.CallMsg) (*types.Transaction, uint64, error) {
	chainID, err := c.id(ctx) // a lazy client's first contact
	if err != nil {
		return nil, 0, err
	}
	rctx, cancel := c.reqCtx(ctx)
	defer cancel()
	head, err := c.eth.HeaderByNumber(rctx, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("fees: %w", err)
	}
	tip, err := c.eth.SuggestGasTipCap(rctx)
	if err != nil {
		return nil, 0, fmt.Errorf("fees: %w", err)
	}
	maxFee := new(big.Int).Add(tip, new(big.Int).Mul(head.BaseFee, big.NewInt(2)))
	// The guard sees the transaction before anything else about it reaches
	// the node, gas estimation included.
	gtx := Tx{From: fleet.Address(msg.From), Data: r.data, Value: r.value, MaxFeePerGas: maxFee, Method: r.method}
	if r.to != nil {
		to := fleet.Address(*r.to)
		gtx.To = &to
	}
	if err := c.guard.Check(ctx, gtx); err != nil {
		return nil, 0, err
	}
	est, err := c.eth.EstimateGas(rctx, msg)
	if err != nil {
		return nil, 0, fmt.Errorf("estimate gas: %w", decodeRevert(err, r.abi))
	}
	gas := gasMargin(est)

	lock := c.keyLock(msg.From)
	lock.Lock()
	defer lock.Unlock()
	signer := types.LatestSignerForChainID(chainID)
	fundRetries := 0
	for attempt := 0; ; attempt++ {
		nonce, err := c.nonce(rctx, msg.From, attempt > 0)
		if err != nil {
			return nil, 0, err
		}
		tx, err := types.SignNewTx(r.key.priv, signer, &types.DynamicFeeTx{
			ChainID: chainID, Nonce: nonce, GasTipCap: tip, GasFeeCap: maxFee,
			Gas: gas, To: r.to, Value: r.value, Data: r.data,
		})
		if err != nil {
			return nil, 0, fmt.Errorf("sign: %w", err)
		}
		if r.note != nil {
			if err := r.note(nonce, true); err != nil {
				return nil, 0, fmt.Errorf("note nonce %d: %w", nonce, err)
			}
			if err := ctx.Err(); err != nil {
				// Cancelled between the note and the send: the transaction
				// never leaves, so the note is withdrawn. Kept, it would
				// hold a run's cleanup open on a funding that cannot land
				// until the sender's nonce is taken by something else.
				if nerr := r.note(nonce, false); nerr != nil {
					err = errors.Join(err, fmt.Errorf("note nonce %d: %w", nonce, nerr))
				}
				return nil, 0, err
			}
		}
		err = c.eth.SendTransaction(rctx, tx)
		if err == nil {
			c.mu.Lock()
			c.nonces[msg.From] = nonce + 1
			c.mu.Unlock()
			return tx, est, nil
		}
		if alreadyKnown(err) {
			// This very transaction (same nonce, same bytes) is in the pool:
			// an earlier send reached the node after all. Sending another
			// would run it twice.
			c.mu.Lock()
			c.nonces[msg.From] = nonce + 1
			c.mu.Unlock()
			return tx, est, nil
		}
		if attempt < nonceRetries && nonceError(err) {
			// Another process sending from the same key took this nonce: the
			// transaction was refused, never run, so a fresh nonce is safe.
			// A short random pause keeps two contenders from colliding again.
			c.log.Debug("nonce taken, re-reading from node", "from", msg.From.Hex(), "attempt", attempt, "err", err)
			select {
			case <-time.After(time.Duration(mrand.IntN(10*(attempt+1))) * time.Millisecond):
			case <-ctx.Done():
				return nil, 0, ctx.Err()
			}
			continue
		}
		// The pool validates against its own view of state, which can trail
		// the head that just funded this key: retry for up to ~1 s.
		if fundRetries < 10 && strings.Contains(strings.ToLower(err.Error()), "insufficient funds") {
			fundRetries++
			attempt-- // a funding race is not a nonce retry
			select {
			case <-time.After(100 * time.Millisecond):
				continue
			case <-ctx.Done():
				return nil, 0, ctx.Err()
			}
		}
		c.forgetNonce(msg.From)
		err = fmt.Errorf("send transaction: %w", err)
		var answered rpc.Error
		if r.note != nil && errors.As(err, &answered) {
			// The node answered with a refusal: it did not take the
			// transaction, so it cannot land. A transport error says nothing
			// of the kind (the node may have taken it and the answer got lost).
			if nerr := r.note(nonce, false); nerr != nil {
				err = errors.Join(err, fmt.Errorf("note nonce %d: %w", nonce, nerr))
			}
		}
		return nil, 0, err
	}
}

// nonceRetries bounds the re-reads of a key's nonce for one transaction
// when other processes sending from the same key keep taking it.
const nonceRetries = 12

func nonceError(err error) bool {
	s := strings.ToLower(err.Error())
	return strings.Contains(s, "nonce") || strings.Contains(s, "replacement transaction underpriced")
}

// IsInsufficientFunds reports whether the node refused a transaction (or
// its gas estimate) because the paying key cannot cover gas and value: a key
// run dry, which funding it, not retrying, cures.
func IsInsufficientFunds(err error) bool {
	return err != nil && strings.Contains(strings.ToLower(err.Error()), "insufficient funds")
}

func alreadyKnown(err error) bool {
	return strings.Contains(strings.ToLower(err.Error()), "already known")
}

// nonce returns the next nonce for a, from the local count unless resync asks
// to re-read the node's pending nonce.
func (c *Client) nonce(ctx context.Context, a common.Address, resync bool) (uint64, error) {
	c.mu.Lock()
	n, ok := c.nonces[a]
	c.mu.Unlock()
	if ok && !resync {
		return n, nil
	}
	n, err := c.eth.PendingNonceAt(ctx, a)
	if err != nil {
		return 0, fmt.Errorf("nonce of %s: %w", a.Hex(), err)
	}
	c.mu.Lock()
	c.nonces[a] = n
	c.mu.Unlock()
	return n, nil
}

func (c *Client) forgetNonce(a common.Address) {
	c.mu.Lock()
	delete(c.nonces, a)
	c.mu.Unlock()
}

// ErrReceiptTimeout is returned when a sent transaction is not mined within Options.ReceiptTimeout.
var ErrReceiptTimeout = errors.New("timed out waiting for receipt")

func (c *Client) waitReceipt(ctx context.Context, h common.Hash) (*types.Receipt, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.ReceiptTimeout)
	defer cancel()
	wait := 2 * time.Millisecond // dev chains mine in ~ms; the backoff caps real chains at 2 polls/s
	for {
		rctx, rcancel := c.reqCtx(ctx)
		r, err := c.eth.TransactionReceipt(rctx, h)
		rcancel()
		if err == nil {
			// A receipt can show up a moment before "latest" reaches its
			// block; wait for the head so callers read their own writes.
			if herr := c.waitHead(ctx, r.BlockNumber.Uint64()); herr != nil {
				return nil, fmt.Errorf("tx %s: %w", h.Hex(), herr)
			}
			return r, nil
		}
		if !errors.Is(err, ethereum.NotFound) && ctx.Err() == nil {
			c.log.Debug("receipt poll", "tx", h.Hex(), "err", err)
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return nil, fmt.Errorf("tx %s: %w after %s", h.Hex(), ErrReceiptTimeout, c.opts.ReceiptTimeout)
			}
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		wait = min(wait*2, 500*time.Millisecond)
	}
}

// waitHead returns once the latest block is at least n.
func (c *Client) waitHead(ctx context.Context, n uint64) error {
	for wait := time.Millisecond; ; wait = min(wait*2, 200*time.Millisecond) {
		rctx, cancel := c.reqCtx(ctx)
		head, err := c.eth.BlockNumber(rctx)
		cancel()
		if err == nil && head >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
}

// Transfer sends value wei from key to a plain address (funding and sweeping
// throwaway keys). It passes the write guard like every other transaction.
func (c *Client) Transfer(ctx context.Context, key *Key, to fleet.Address, wei *big.Int) (*Receipt, error) {
	addr := common.Address(to)
	return c.send(ctx, sendRequest{key: key, to: &addr, value: wei})
}

// SendRaw sends arbitrary calldata to a contract. It exists for tools and tests
// that must prove the guard holds for transactions the bindings do not build.
func (c *Client) SendRaw(ctx context.Context, key *Key, to fleet.Address, data []byte, value *big.Int) (*Receipt, error) {
	addr := common.Address(to)
	return c.send(ctx, sendRequest{key: key, to: &addr, data: data, value: value})
}

// SendRawNoted is SendRaw that calls note(nonce, true) before the
// transaction leaves this process (again for each nonce it tries), so the
// caller can record that a transaction from key with that nonce may land
// from then on. The send's error does not say it will not: a node that
// accepted a transaction journals it and, after a restart, puts it back in
// its pool (geth: 10 s after start, then every minute), which can be long
// after this call gave up; NonceSettled says when it no longer can. When
// the node answered the send with a refusal (it never took the
// transaction), note(nonce, false) withdraws it. An error from note before
// the send stops the send before the transaction leaves.
func (c *Client) SendRawNoted(ctx context.Context, key *Key, to fleet.Address, data []byte, value *big.Int, note func(nonce uint64, pending bool) error) (*Receipt, error) {
	addr := common.Address(to)
	return c.send(ctx, sendRequest{key: key, to: &addr, data: data, value: value, note: note})
}

// NonceSettled reports whether from's transaction with nonce can no longer
// land: the latest block counts more than nonce transactions from from, so
// that nonce was mined (this transaction or another that took it). Read it
// before the balances the transaction would change.
func (c *Client) NonceSettled(ctx context.Context, from fleet.Address, nonce uint64) (bool, error) {
	ctx, cancel := c.reqCtx(ctx)
	defer cancel()
	n, err := c.eth.NonceAt(ctx, common.Address(from), nil)
	if err != nil {
		return false, fmt.Errorf("nonce of %s: %w", from, err)
	}
	return n > nonce, nil
}

// Deploy creates a contract from its creation bytecode (with any packed
// constructor arguments appended) and returns the receipt naming its address.
func (c *Client) Deploy(ctx context.Context, key *Key, bytecode []byte) (*Receipt, error) {
	return c.deploy(ctx, key, bytecode, nil)
}

func (c *Client) deploy(ctx context.Context, key *Key, bytecode []byte, a *abi.ABI) (*Receipt, error) {
	r, err := c.send(ctx, sendRequest{key: key, data: bytecode, method: "constructor", abi: a})
	if err != nil {
		return r, fmt.Errorf("deploy: %w", err)
	}
	if r.Contract.IsZero() {
		return r, errors.New("deploy: receipt has no contract address")
	}
	return r, nil
}

// BlockHash returns the canonical hash of block number, so a reader can tell
// whether a block it read earlier was reorganised away. A block the chain
// does not have (it got shorter) is the zero hash and no error.
func (c *Client) BlockHash(ctx context.Context, number uint64) ([32]byte, error) {
	ctx, cancel := c.reqCtx(ctx)
	defer cancel()
	h, err := c.eth.HeaderByNumber(ctx, new(big.Int).SetUint64(number))
	if errors.Is(err, ethereum.NotFound) {
		return [32]byte{}, nil
	}
	if err != nil {
		return [32]byte{}, fmt.Errorf("block %d: %w", number, err)
	}
	return h.Hash(), nil
}

// SweepAll sends from's whole balance, less the fee of the transfer itself,
// to to. It returns the amount moved (zero, with a nil receipt, when the
// balance does not cover the fee). What stays behind is at most the
// difference between the fee cap and the fee actually charged.
func (c *Client) SweepAll(ctx context.Context, from *Key, to fleet.Address) (*Receipt, *big.Int, error) {
	return c.sweepAll(ctx, from, to, nil)
}

// SweepAllAt is SweepAll with the transfer at from's nonce: it takes that
// nonce from any other transaction sent with it that may still land (a
// mint whose answer was lost, which a node journals and mines after a
// restart), so once the sweep is mined the other never can. While the
// other is in the node's pool the node refuses the sweep (replacement
// underpriced, or nonce too low once the other is mined): then nothing
// was swept and the other lands or has landed.
func (c *Client) SweepAllAt(ctx context.Context, from *Key, to fleet.Address, nonce uint64) (*Receipt, *big.Int, error) {
	return c.sweepAll(ctx, from, to, &nonce)
}

func (c *Client) sweepAll(ctx context.Context, from *Key, to fleet.Address, at *uint64) (*Receipt, *big.Int, error) {
	for attempt := 0; ; attempt++ {
		r, v, err := c.sweepOnce(ctx, from, to, at)
		// The pool validates against its own view of state, which can trail
		// the head that just mined this key's last transaction (a release):
		// it then counts that transaction's cost twice. Re-read and retry
		// for up to ~1 s.
		if err == nil || attempt >= 10 || !strings.Contains(strings.ToLower(err.Error()), "insufficient funds") {
			return r, v, err
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
}

func (c *Client) sweepOnce(ctx context.Context, from *Key, to fleet.Address, at *uint64) (*Receipt, *big.Int, error) {
	rctx, cancel := c.reqCtx(ctx)
	defer cancel()
	bal, err := c.eth.BalanceAt(rctx, from.addr, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("sweep %s: %w", from.Address(), err)
	}
	head, err := c.eth.HeaderByNumber(rctx, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("sweep %s: %w", from.Address(), err)
	}
	tip, err := c.eth.SuggestGasTipCap(rctx)
	if err != nil {
		return nil, nil, fmt.Errorf("sweep %s: %w", from.Address(), err)
	}
	// A plain transfer costs exactly 21000 gas. The tip cap equals the fee
	// cap, so the price paid is exactly the cap (the miner keeps what the
	// base fee leaves) and the key ends at zero, not at dust; the cap covers
	// a doubled base fee.
	feeCap := new(big.Int).Add(tip, new(big.Int).Mul(head.BaseFee, big.NewInt(2)))
	tip = feeCap
	cost := new(big.Int).Mul(feeCap, big.NewInt(21_000))
	value := new(big.Int).Sub(bal, cost)
	if value.Sign() <= 0 {
		return nil, new(big.Int), nil
	}
	chainID, err := c.id(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("sweep %s: %w", from.Address(), err)
	}
	toAddr := common.Address(to)
	gtx := Tx{From: from.Address(), To: &to, Value: value, MaxFeePerGas: feeCap}
	if err := c.guard.Check(ctx, gtx); err != nil {
		return nil, nil, err
	}
	lock := c.keyLock(from.addr)
	lock.Lock()
	var nonce uint64
	if at != nil {
		nonce = *at
	} else if nonce, err = c.nonce(rctx, from.addr, true); err != nil {
		lock.Unlock()
		return nil, nil, err
	}
	tx, err := types.SignNewTx(from.priv, types.LatestSignerForChainID(chainID), &types.DynamicFeeTx{
		ChainID: chainID, Nonce: nonce, GasTipCap: tip, GasFeeCap: feeCap, Gas: 21_000, To: &toAddr, Value: value,
	})
	if err == nil {
		err = c.eth.SendTransaction(rctx, tx)
	}
	if err != nil {
		c.forgetNonce(from.addr)
		lock.Unlock()
		return nil, nil, fmt.Errorf("sweep %s: %w", from.Address(), err)
	}
	c.mu.Lock()
	c.nonces[from.addr] = nonce + 1
	c.mu.Unlock()
	lock.Unlock()
	r, err := c.waitReceipt(ctx, tx.Hash())
	if err != nil {
		c.forgetNonce(from.addr) // as in send
		return nil, nil, fmt.Errorf("sweep %s: %w", from.Address(), err)
	}
	return &Receipt{Tx: tx.Hash().Hex(), Block: r.BlockNumber.Uint64(), GasUsed: r.GasUsed, GasEstimated: 21_000, GasLimit: 21_000}, value, nil
}
