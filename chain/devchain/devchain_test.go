package devchain

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/big"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/params"
	"github.com/gofrs/flock"
)

var oneEther = big.NewInt(params.Ether)

// testKey is a freshly generated key and its address.
type testKey struct {
	priv *ecdsa.PrivateKey
	addr common.Address
}

func newTestKey(tb testing.TB) testKey {
	tb.Helper()
	priv, err := crypto.GenerateKey()
	if err != nil {
		tb.Fatal(err)
	}
	return testKey{priv: priv, addr: crypto.PubkeyToAddress(priv.PublicKey)}
}

// funded returns a genesis account giving k wei.
func (k testKey) funded(wei *big.Int) Account {
	return Account{Address: k.addr, Wei: wei}
}

// mustStart starts a chain with cfg and closes it when the test ends.
func mustStart(tb testing.TB, cfg Config) *Chain {
	tb.Helper()
	return mustStartRules(tb, cfg, mainnetRules())
}

func mustStartRules(tb testing.TB, cfg Config, rules *params.ChainConfig) *Chain {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := start(ctx, cfg, rules)
	if err != nil {
		tb.Fatalf("start: %v", err)
	}
	tb.Cleanup(func() {
		if err := c.Close(); err != nil {
			tb.Errorf("close: %v", err)
		}
	})
	return c
}

// mustDial connects an ethclient to the chain's HTTP URL.
func mustDial(tb testing.TB, c *Chain) *ethclient.Client {
	tb.Helper()
	cl, err := ethclient.Dial(c.URL())
	if err != nil {
		tb.Fatalf("dial %s: %v", c.URL(), err)
	}
	tb.Cleanup(cl.Close)
	return cl
}

// testCtx is a context bounded by a few seconds: every wait in these tests
// is for something the chain should do at once.
func testCtx(tb testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	tb.Cleanup(cancel)
	return ctx
}

// sendTx signs an EIP-1559 transaction locally and sends it over RPC.
// to == nil creates a contract.
func sendTx(ctx context.Context, tb testing.TB, cl *ethclient.Client, from testKey, nonce uint64, to *common.Address, value *big.Int, data []byte, gas uint64) *types.Transaction {
	tb.Helper()
	tx, err := trySendTx(ctx, cl, from, nonce, to, value, data, gas)
	if err != nil {
		tb.Fatal(err)
	}
	return tx
}

// trySendTx is sendTx for goroutines other than the test's.
func trySendTx(ctx context.Context, cl *ethclient.Client, from testKey, nonce uint64, to *common.Address, value *big.Int, data []byte, gas uint64) (*types.Transaction, error) {
	tip := big.NewInt(params.GWei)
	tx, err := types.SignNewTx(from.priv, types.LatestSignerForChainID(big.NewInt(ChainID)), &types.DynamicFeeTx{
		ChainID:   big.NewInt(ChainID),
		Nonce:     nonce,
		GasTipCap: tip,
		GasFeeCap: new(big.Int).Add(tip, big.NewInt(2*params.InitialBaseFee)), // base fee only falls from genesis on empty-ish blocks
		Gas:       gas,
		To:        to,
		Value:     value,
		Data:      data,
	})
	if err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	if err := cl.SendTransaction(ctx, tx); err != nil {
		return nil, fmt.Errorf("send tx nonce %d: %w", nonce, err)
	}
	return tx, nil
}

// waitReceipt polls for a receipt until ctx ends. Nobody seals blocks but the
// chain itself, so a receipt showing up proves on-demand mining.
func waitReceipt(ctx context.Context, tb testing.TB, cl *ethclient.Client, hash common.Hash) *types.Receipt {
	tb.Helper()
	for {
		r, err := cl.TransactionReceipt(ctx, hash)
		if err == nil {
			return r
		}
		if !errors.Is(err, ethereum.NotFound) {
			tb.Fatalf("receipt %s: %v", hash, err)
		}
		select {
		case <-ctx.Done():
			tb.Fatalf("receipt %s: not mined: %v", hash, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func TestStartServesOverLoopbackHTTP(t *testing.T) {
	c := mustStart(t, Config{})
	ctx := testCtx(t)

	u, err := url.Parse(c.URL())
	if err != nil {
		t.Fatalf("URL %q: %v", c.URL(), err)
	}
	if u.Scheme != "http" {
		t.Errorf("URL %q: scheme %q, want http", c.URL(), u.Scheme)
	}
	if ip, err := netip.ParseAddr(u.Hostname()); err != nil || !ip.IsLoopback() {
		t.Errorf("URL %q: host %q is not a loopback address", c.URL(), u.Hostname())
	}
	if port, err := strconv.Atoi(u.Port()); err != nil || port == 0 {
		t.Errorf("URL %q: port %q, want the bound non-zero port", c.URL(), u.Port())
	}

	cl := mustDial(t, c)
	id, err := cl.ChainID(ctx)
	if err != nil {
		t.Fatalf("eth_chainId: %v", err)
	}
	if id.Uint64() != 1337 || c.ChainID() != 1337 {
		t.Errorf("chain id: rpc %v, ChainID() %d, want 1337", id, c.ChainID())
	}

	// Only eth, net, web3, txpool and debug (plus the server's own rpc) are
	// on HTTP: not admin, personal, miner, nor a simulated beacon's dev API.
	mods, err := cl.Client().SupportedModules()
	if err != nil {
		t.Fatalf("rpc_modules: %v", err)
	}
	got := slices.Sorted(maps.Keys(mods))
	want := []string{"debug", "eth", "net", "rpc", "txpool", "web3"}
	if !slices.Equal(got, want) {
		t.Errorf("HTTP modules = %v, want %v", got, want)
	}
	var ignored any
	if err := cl.Client().CallContext(ctx, &ignored, "dev_setFeeRecipient", common.Address{}); err == nil {
		t.Error("dev_setFeeRecipient over HTTP: no error, want method not found")
	}

	// Genesis carries wall time, so deadlines derived from the latest block
	// are sane before the first transaction.
	head, err := cl.HeaderByNumber(ctx, nil)
	if err != nil {
		t.Fatalf("latest header: %v", err)
	}
	if d := time.Since(time.Unix(int64(head.Time), 0)); d < -5*time.Second || d > 5*time.Second {
		t.Errorf("genesis timestamp %d is %v away from now", head.Time, d)
	}
}

func TestHostHeaderChecked(t *testing.T) {
	c := mustStart(t, Config{})
	ctx := testCtx(t)
	body := `{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}`
	for _, tc := range []struct {
		host string
		ok   bool
	}{
		{"localhost", true},
		{"127.0.0.1", true},
		{"attacker.example", false}, // DNS rebinding: a page whose domain resolves to 127.0.0.1
	} {
		req, err := newJSONRequest(ctx, c.URL(), body)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = tc.host
		resp, err := httpClient.Do(req)
		if err != nil {
			t.Fatalf("Host %s: %v", tc.host, err)
		}
		resp.Body.Close()
		if ok := resp.StatusCode == 200; ok != tc.ok {
			t.Errorf("Host %s: status %d, want accepted=%v", tc.host, resp.StatusCode, tc.ok)
		}
	}
}

func TestTransferMinedWithoutCommit(t *testing.T) {
	sender := newTestKey(t)
	recipient := newTestKey(t)
	start := new(big.Int).Mul(big.NewInt(10), oneEther)
	c := mustStart(t, Config{Funded: []Account{sender.funded(start)}})
	cl := mustDial(t, c)
	ctx := testCtx(t)

	bal, err := cl.BalanceAt(ctx, sender.addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	if bal.Cmp(start) != 0 {
		t.Fatalf("genesis balance %v, want %v", bal, start)
	}

	tx := sendTx(ctx, t, cl, sender, 0, &recipient.addr, oneEther, nil, params.TxGas)
	r := waitReceipt(ctx, t, cl, tx.Hash())
	if r.Status != types.ReceiptStatusSuccessful {
		t.Fatalf("receipt status %d", r.Status)
	}
	if r.GasUsed != params.TxGas {
		t.Errorf("transfer gas used %d, want %d", r.GasUsed, params.TxGas)
	}

	// State is read at the receipt's block: go-ethereum publishes a block's
	// receipts a moment before "latest" moves to it.
	got, err := cl.BalanceAt(ctx, recipient.addr, r.BlockNumber)
	if err != nil {
		t.Fatal(err)
	}
	if got.Cmp(oneEther) != 0 {
		t.Errorf("recipient balance %v, want %v", got, oneEther)
	}
	fee := new(big.Int).Mul(new(big.Int).SetUint64(r.GasUsed), r.EffectiveGasPrice)
	wantSender := new(big.Int).Sub(new(big.Int).Sub(start, oneEther), fee)
	got, err = cl.BalanceAt(ctx, sender.addr, r.BlockNumber)
	if err != nil {
		t.Fatal(err)
	}
	if got.Cmp(wantSender) != 0 {
		t.Errorf("sender balance %v, want %v (start - value - fee %v)", got, wantSender, fee)
	}
}

func TestBurstOfTransactionsAllMined(t *testing.T) {
	const n = 200
	sender := newTestKey(t)
	recipient := newTestKey(t)
	c := mustStart(t, Config{Funded: []Account{sender.funded(oneEther)}})
	cl := mustDial(t, c)
	ctx := testCtx(t)

	// Nonces tracked locally: asking the node for the pending nonce before
	// each send races the miner (see FACTS.md).
	value := big.NewInt(1000)
	hashes := make([]common.Hash, n)
	for nonce := range uint64(n) {
		hashes[nonce] = sendTx(ctx, t, cl, sender, nonce, &recipient.addr, value, nil, params.TxGas).Hash()
	}
	lastBlock := waitReceipt(ctx, t, cl, hashes[n-1]).BlockNumber
	for i, h := range hashes {
		if r := waitReceipt(ctx, t, cl, h); r.Status != types.ReceiptStatusSuccessful {
			t.Errorf("tx %d: status %d", i, r.Status)
		}
	}
	nonce, err := cl.NonceAt(ctx, sender.addr, lastBlock)
	if err != nil {
		t.Fatal(err)
	}
	if nonce != n {
		t.Errorf("sender nonce %d, want %d", nonce, n)
	}
	bal, err := cl.BalanceAt(ctx, recipient.addr, lastBlock)
	if err != nil {
		t.Fatal(err)
	}
	if want := new(big.Int).Mul(value, big.NewInt(n)); bal.Cmp(want) != 0 {
		t.Errorf("recipient balance %v, want %v", bal, want)
	}
}

func TestConcurrentSenders(t *testing.T) {
	const senders, perSender = 4, 50
	keys := make([]testKey, senders)
	var funded []Account
	for i := range keys {
		keys[i] = newTestKey(t)
		funded = append(funded, keys[i].funded(oneEther))
	}
	to := newTestKey(t)
	c := mustStart(t, Config{Funded: funded})
	ctx := testCtx(t)

	last := make([]common.Hash, senders)
	var wg sync.WaitGroup
	for i, k := range keys {
		wg.Go(func() {
			cl, err := ethclient.Dial(c.URL()) // a client each: concurrent HTTP connections
			if err != nil {
				t.Error(err)
				return
			}
			defer cl.Close()
			for nonce := range uint64(perSender) {
				tx, err := trySendTx(ctx, cl, k, nonce, &to.addr, big.NewInt(1), nil, params.TxGas)
				if err != nil {
					t.Errorf("sender %d: %v", i, err)
					return
				}
				last[i] = tx.Hash()
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	cl := mustDial(t, c)
	lastBlock := new(big.Int)
	for _, h := range last {
		if n := waitReceipt(ctx, t, cl, h).BlockNumber; n.Cmp(lastBlock) > 0 {
			lastBlock = n
		}
	}
	bal, err := cl.BalanceAt(ctx, to.addr, lastBlock)
	if err != nil {
		t.Fatal(err)
	}
	if bal.Int64() != senders*perSender {
		t.Errorf("recipient balance %v, want %d", bal, senders*perSender)
	}
}

// TestCloseWhileSealing closes the chain while blocks are being sealed. A
// block written during the database close would make go-ethereum exit the
// process (log.Crit), so the test binary surviving is the assertion.
func TestCloseWhileSealing(t *testing.T) {
	for range 5 {
		k, to := newTestKey(t), newTestKey(t)
		c, err := Start(testCtx(t), Config{Funded: []Account{k.funded(oneEther)}})
		if err != nil {
			t.Fatal(err)
		}
		cl := mustDial(t, c)
		for nonce := range uint64(30) {
			sendTx(testCtx(t), t, cl, k, nonce, &to.addr, big.NewInt(1), nil, params.TxGas)
		}
		if err := c.Close(); err != nil {
			t.Fatalf("close: %v", err)
		}
	}
}

// sstoreRuntime stores 1 in slot 0: PUSH1 1, PUSH1 0, SSTORE, STOP.
var sstoreRuntime = []byte{0x60, 0x01, 0x60, 0x00, 0x55, 0x00}

// sstoreInit deploys sstoreRuntime: CODECOPY it to memory and RETURN it.
var sstoreInit = append([]byte{
	0x60, byte(len(sstoreRuntime)), // PUSH1 size
	0x60, 0x0c, // PUSH1 offset of the runtime code (this prefix is 12 bytes)
	0x60, 0x00, // PUSH1 memory offset
	0x39,                           // CODECOPY
	0x60, byte(len(sstoreRuntime)), // PUSH1 size
	0x60, 0x00, // PUSH1 memory offset
	0xf3, // RETURN
}, sstoreRuntime...)

// wantSStoreCallGas is what a call to sstoreRuntime costs on mainnet today
// (Berlin through Osaka): 21,000 intrinsic + 3 + 3 for the pushes + 22,100
// for an SSTORE that sets a fresh, cold slot (20,000 + 2,100 cold access).
const wantSStoreCallGas = params.TxGas + 3 + 3 + params.SstoreSetGasEIP2200 + params.ColdSloadCostEIP2929

// measureSStoreGas deploys sstoreRuntime on a chain with the given rules and
// returns the gas used by a plain call to it.
func measureSStoreGas(t *testing.T, rules *params.ChainConfig) uint64 {
	t.Helper()
	key := newTestKey(t)
	c := mustStartRules(t, Config{Funded: []Account{key.funded(oneEther)}}, rules)
	cl := mustDial(t, c)
	ctx := testCtx(t)

	deploy := waitReceipt(ctx, t, cl, sendTx(ctx, t, cl, key, 0, nil, nil, sstoreInit, 1_000_000).Hash())
	if deploy.Status != types.ReceiptStatusSuccessful {
		t.Fatalf("deploy: status %d", deploy.Status)
	}
	code, err := cl.CodeAt(ctx, deploy.ContractAddress, deploy.BlockNumber)
	if err != nil || !bytes.Equal(code, sstoreRuntime) {
		t.Fatalf("deployed code %x (%v), want %x", code, err, sstoreRuntime)
	}
	call := waitReceipt(ctx, t, cl, sendTx(ctx, t, cl, key, 1, &deploy.ContractAddress, nil, nil, 1_000_000).Hash())
	if call.Status != types.ReceiptStatusSuccessful {
		t.Fatalf("call: status %d", call.Status)
	}
	slot, err := cl.StorageAt(ctx, deploy.ContractAddress, common.Hash{}, call.BlockNumber)
	if err != nil || new(big.Int).SetBytes(slot).Uint64() != 1 {
		t.Fatalf("slot 0 = %x (%v), want 1", slot, err)
	}
	t.Logf("deploy gas %d, SSTORE call gas %d", deploy.GasUsed, call.GasUsed)
	return call.GasUsed
}

func TestGasRulesMatchMainnet(t *testing.T) {
	if got := measureSStoreGas(t, mainnetRules()); got != wantSStoreCallGas {
		t.Errorf("SSTORE-new call used %d gas, want %d (mainnet rules)", got, wantSStoreCallGas)
	}
}

// TestGasRulesDiscriminate shows the assertion above would fail on
// go-ethereum's own dev rules, so it really tests the fork selection.
func TestGasRulesDiscriminate(t *testing.T) {
	rules := *params.AllDevChainProtocolChanges
	if got := measureSStoreGas(t, &rules); got <= wantSStoreCallGas {
		t.Errorf("under AllDevChainProtocolChanges the SSTORE-new call used %d gas, want more than mainnet's %d", got, wantSStoreCallGas)
	}
}

// TestNoForkScheduled checks via EIP-7910 eth_config that the chain runs the
// intended fork from genesis and has nothing scheduled after it.
func TestNoForkScheduled(t *testing.T) {
	c := mustStart(t, Config{})
	cl := mustDial(t, c)
	var cfg struct {
		Current *struct {
			ActivationTime uint64          `json:"activationTime"`
			BlobSchedule   *map[string]any `json:"blobSchedule"`
			ChainID        string          `json:"chainId"`
		} `json:"current"`
		Next *map[string]any `json:"next"`
		Last *map[string]any `json:"last"`
	}
	if err := cl.Client().CallContext(testCtx(t), &cfg, "eth_config"); err != nil {
		t.Fatalf("eth_config: %v", err)
	}
	if cfg.Current == nil || cfg.Current.ActivationTime != 0 || cfg.Current.ChainID != "0x539" {
		t.Errorf("eth_config current = %+v, want active at genesis on chain 0x539", cfg.Current)
	}
	if cfg.Next != nil || cfg.Last != nil {
		t.Errorf("eth_config next = %v, last = %v, want no scheduled fork", cfg.Next, cfg.Last)
	}
	rules := mainnetRules()
	if got, want := rules.LatestFork(0), params.MainnetChainConfig.LatestFork(1767747671); got != want {
		t.Errorf("dev chain fork %v, want mainnet's fork at BPO2 activation %v", got, want)
	}
	if err := rules.CheckConfigForkOrder(); err != nil {
		t.Errorf("fork order: %v", err)
	}
}

func TestStartAddr(t *testing.T) {
	for _, tc := range []struct {
		addr     string
		wantHost string // empty: Start must fail
		loopback bool   // failure must be ErrNotLoopback
	}{
		{addr: "", wantHost: "127.0.0.1"},
		{addr: "127.0.0.1:0", wantHost: "127.0.0.1"},
		{addr: "localhost:0", wantHost: "127.0.0.1"},
		{addr: "127.0.0.2:0", wantHost: "127.0.0.2"},
		{addr: "[::1]:0", wantHost: "::1"},
		{addr: "0.0.0.0:0", loopback: true},
		{addr: ":0", loopback: true},
		{addr: "[::]:0", loopback: true},
		{addr: "192.0.2.1:8545", loopback: true},
		{addr: "example.com:8545", loopback: true},
		{addr: "127.0.0.1"},
		{addr: "127.0.0.1:http"},
		{addr: "127.0.0.1:70000"},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			if tc.wantHost == "::1" && !canListen("[::1]:0") {
				t.Skip("no IPv6 loopback")
			}
			c, err := Start(testCtx(t), Config{Addr: tc.addr})
			if tc.wantHost == "" {
				if err == nil {
					c.Close()
					t.Fatalf("Start(%q) succeeded, want error", tc.addr)
				}
				if got := errors.Is(err, ErrNotLoopback); got != tc.loopback {
					t.Errorf("Start(%q) = %v; errors.Is ErrNotLoopback = %v, want %v", tc.addr, err, got, tc.loopback)
				}
				return
			}
			if err != nil {
				t.Fatalf("Start(%q): %v", tc.addr, err)
			}
			defer c.Close()
			u, _ := url.Parse(c.URL())
			if u.Hostname() != tc.wantHost || u.Port() == "0" {
				t.Errorf("URL %q, want host %s and a real port", c.URL(), tc.wantHost)
			}
		})
	}
}

func TestStartFixedPort(t *testing.T) {
	c, addr, err := startOnFreePort(testCtx(t), t)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	if want := "http://" + addr; c.URL() != want {
		t.Errorf("URL %q, want %q", c.URL(), want)
	}
	// The port is taken now: a second chain on it must fail cleanly, without
	// leaving a half-built node behind.
	before := settledGoroutines(0)
	c2, err := Start(testCtx(t), Config{Addr: addr})
	if err == nil {
		c2.Close()
		t.Fatal("second Start on a busy port succeeded")
	}
	t.Logf("busy port: %v", err)
	if after := settledGoroutines(before); after > before {
		t.Errorf("goroutines: %d before the failed Start, %d after", before, after)
	}
}

func TestStartInvalidConfig(t *testing.T) {
	k := newTestKey(t)
	for name, funded := range map[string][]Account{
		"nil balance":      {{Address: k.addr}},
		"negative balance": {k.funded(big.NewInt(-1))},
		"duplicate":        {k.funded(oneEther), k.funded(oneEther)},
		"system contract":  {{Address: params.BeaconRootsAddress, Wei: oneEther}},
	} {
		t.Run(name, func(t *testing.T) {
			if c, err := Start(testCtx(t), Config{Funded: funded}); err == nil {
				c.Close()
				t.Fatal("Start succeeded, want error")
			}
		})
	}
}

func TestStartCancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c, err := Start(ctx, Config{})
	if !errors.Is(err, context.Canceled) || c != nil {
		t.Fatalf("Start(cancelled) = %v, %v; want nil, context.Canceled", c, err)
	}
}

// TestStartCancelledMidway cancels at various points during Start on a fixed
// port: whatever Start returns, nothing may stay bound to the port.
func TestStartCancelledMidway(t *testing.T) {
	for _, ms := range []float64{0, 0.1, 1, 5, 10, 20, 30, 40, 50, 60, 80, 120} {
		d := time.Duration(ms * float64(time.Millisecond))
		ctx, cancel := context.WithTimeout(context.Background(), d)
		c, addr, err := startOnFreePort(ctx, t)
		cancel()
		switch {
		case err == nil:
			if err := c.Close(); err != nil {
				t.Fatalf("after %v: close: %v", d, err)
			}
		case !errors.Is(err, context.DeadlineExceeded):
			t.Fatalf("after %v: Start = %v, want context.DeadlineExceeded or success", d, err)
		}
		t.Logf("cancel after %v: %v", d, err)
		if !canListen(addr) {
			t.Fatalf("after %v (err %v): %s still bound", d, err, addr)
		}
	}
}

func TestCloseIdempotent(t *testing.T) {
	c, err := Start(testCtx(t), Config{})
	if err != nil {
		t.Fatal(err)
	}
	addr := strings.TrimPrefix(c.URL(), "http://")
	if err := c.Close(); err != nil {
		t.Fatalf("first close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	if !canListen(addr) {
		t.Errorf("%s still bound after Close", addr)
	}
	cl := mustDial(t, c) // HTTP dials lazily
	if _, err := cl.ChainID(testCtx(t)); err == nil {
		t.Error("RPC still answers after Close")
	}
}

func TestTwoChainsAtOnce(t *testing.T) {
	key := newTestKey(t)
	to := newTestKey(t)
	a := mustStart(t, Config{Funded: []Account{key.funded(oneEther)}})
	b := mustStart(t, Config{Funded: []Account{key.funded(oneEther)}})
	if a.URL() == b.URL() {
		t.Fatalf("both chains on %s", a.URL())
	}
	ctx := testCtx(t)
	ca, cb := mustDial(t, a), mustDial(t, b)
	r := waitReceipt(ctx, t, ca, sendTx(ctx, t, ca, key, 0, &to.addr, big.NewInt(7), nil, params.TxGas).Hash())

	for name, tc := range map[string]struct {
		cl    *ethclient.Client
		block *big.Int
		want  int64
	}{"a": {ca, r.BlockNumber, 7}, "b": {cb, nil, 0}} {
		bal, err := tc.cl.BalanceAt(ctx, to.addr, tc.block)
		if err != nil {
			t.Fatalf("chain %s: %v", name, err)
		}
		if bal.Int64() != tc.want {
			t.Errorf("chain %s: balance %v, want %d", name, bal, tc.want)
		}
	}
}

// TestLoggerWarnOnly checks go-ethereum's chatter stays out of the caller's
// log: the node logs "HTTP server started" at info level, which must be dropped.
func TestLoggerWarnOnly(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c := mustStart(t, Config{Logger: logger})
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(buf.String()) {
		if !strings.Contains(line, "level=WARN") && !strings.Contains(line, "level=ERROR") {
			t.Errorf("logged below warn: %s", line)
		}
	}

	// The same adapter passes warnings through, tagged with the component.
	buf.Reset()
	l := gethLogger(logger)
	l.Info("dropped")
	l.Warn("kept", "k", 1)
	if got := buf.String(); strings.Contains(got, "dropped") || !strings.Contains(got, "msg=kept") || !strings.Contains(got, "component=devchain") {
		t.Errorf("geth logger wrote %q, want only the warning with component=devchain", got)
	}
}

// TestNoGoroutineLeak starts and closes chains in sequence and checks the
// goroutine count returns to where it was.
func TestNoGoroutineLeak(t *testing.T) {
	// Warm up once: some packages start process-wide goroutines lazily.
	c, err := Start(testCtx(t), Config{})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	before := settledGoroutines(0)
	for range 5 {
		c, err := Start(testCtx(t), Config{})
		if err != nil {
			t.Fatal(err)
		}
		cl := mustDial(t, c)
		if _, err := cl.ChainID(testCtx(t)); err != nil {
			t.Fatal(err)
		}
		cl.Close()
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	after := settledGoroutines(before)
	t.Logf("goroutines: %d before, %d after", before, after)
	if after > before {
		buf := make([]byte, 1<<20)
		t.Errorf("goroutines: %d before, %d after 5 start/close cycles\n%s", before, after, buf[:runtime.Stack(buf, true)])
	}
}

// settledGoroutines waits up to 3 s for the goroutine count to drop to target
// (or to stop changing when target is 0) and returns it.
func settledGoroutines(target int) int {
	n := runtime.NumGoroutine()
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		m := runtime.NumGoroutine()
		if (target > 0 && m <= target) || (target == 0 && m == n) {
			return m
		}
		n = m
	}
	return n
}

var httpClient = &http.Client{Timeout: 5 * time.Second}

func newJSONRequest(ctx context.Context, url, body string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	return req, nil
}

func canListen(addr string) bool {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// startOnFreePort starts a chain on a fixed loopback port picked free here,
// and picked again when Start finds it taken: the port is released between
// the pick and Start's bind, and another process (go test ./... runs
// packages at once) can take it in between.
func startOnFreePort(ctx context.Context, tb testing.TB) (*Chain, string, error) {
	tb.Helper()
	for attempt := 1; ; attempt++ {
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(tb)))
		c, err := Start(ctx, Config{Addr: addr})
		if err == nil || attempt == 3 || !errors.Is(err, syscall.EADDRINUSE) {
			return c, addr, err
		}
		tb.Logf("%s was taken before the chain bound it: %v", addr, err)
	}
}

func freePort(tb testing.TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func BenchmarkStart(b *testing.B) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		c, err := Start(ctx, Config{})
		if err != nil {
			b.Fatal(err)
		}
		if err := c.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// storageModes are the database and log-search modes a chain can run in.
var storageModes = []struct {
	name string
	cfg  Config
}{
	{"memory", Config{}},
	{"memory+logindex", Config{LogIndex: true}},
	{"disk", Config{OnDisk: true}},
	{"disk+logindex", Config{OnDisk: true, LogIndex: true}},
}

// BenchmarkModes measures what OnDisk and LogIndex cost: start and close
// a chain, and seal a block holding one transaction that logs (sent, then
// its receipt awaited):
//
//	go test ./chain/devchain -run '^$' -bench 'Modes' -benchtime 20x
func BenchmarkModes(b *testing.B) {
	emitter := common.HexToAddress("0x00000000000000000000000000000000000e0001")
	for _, tc := range storageModes {
		b.Run(tc.name+"/start", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c, err := Start(context.Background(), tc.cfg)
				if err != nil {
					b.Fatal(err)
				}
				if err := c.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tc.name+"/seal", func(b *testing.B) {
			sender := newTestKey(b)
			cfg := tc.cfg
			cfg.Funded = []Account{sender.funded(oneEther)}
			cfg.Preload = []Preloaded{{Address: emitter, Code: []byte{0x60, 0, 0x60, 0, 0xa0, 0x00}}}
			c := mustStart(b, cfg)
			cl := mustDial(b, c)
			ctx := testCtx(b)
			var nonce uint64
			b.ReportAllocs()
			for b.Loop() {
				tx := sendTx(ctx, b, cl, sender, nonce, &emitter, nil, nil, 100_000)
				waitReceipt(ctx, b, cl, tx.Hash())
				nonce++
			}
		})
	}
}

// TestStorageModes runs a chain in each database and log-search mode: a
// preloaded contract's storage is read back, a transaction's log is found by
// eth_getLogs, and an OnDisk chain's directory exists while it runs and is
// gone after Close.
func TestStorageModes(t *testing.T) {
	for _, tc := range storageModes {
		t.Run(tc.name, func(t *testing.T) {
			sender := newTestKey(t)
			emitter := common.HexToAddress("0x00000000000000000000000000000000000e0001")
			slot, value := common.Hash{31: 7}, common.Hash{31: 42}
			cfg := tc.cfg
			cfg.Funded = []Account{sender.funded(oneEther)}
			// PUSH1 0 PUSH1 0 LOG0 STOP: every call logs one empty entry.
			cfg.Preload = []Preloaded{{Address: emitter, Code: []byte{0x60, 0, 0x60, 0, 0xa0, 0x00}, Storage: map[[32]byte][32]byte{slot: value}}}
			c, err := Start(testCtx(t), cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if tc.cfg.OnDisk {
				if _, err := os.Stat(filepath.Join(c.dir, "fleetd-devchain", "chaindata")); err != nil {
					t.Fatalf("OnDisk chain has no database in its directory: %v", err)
				}
			} else if c.dir != "" {
				t.Fatalf("in-memory chain has a directory %q", c.dir)
			}
			cl := mustDial(t, c)
			ctx := testCtx(t)
			got, err := cl.StorageAt(ctx, emitter, slot, nil)
			if err != nil || common.BytesToHash(got) != value {
				t.Fatalf("preloaded slot = %x, %v; want %x", got, err, value)
			}
			tx := sendTx(ctx, t, cl, sender, 0, &emitter, nil, nil, 100_000)
			r := waitReceipt(ctx, t, cl, tx.Hash())
			logs, err := cl.FilterLogs(ctx, ethereum.FilterQuery{FromBlock: big.NewInt(0), ToBlock: r.BlockNumber, Addresses: []common.Address{emitter}})
			if err != nil {
				t.Fatal(err)
			}
			if len(logs) != 1 || logs[0].TxHash != tx.Hash() {
				t.Fatalf("eth_getLogs found %d logs (%+v), want the one of %s", len(logs), logs, tx.Hash())
			}
			dir := c.dir
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			if dir != "" {
				if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("data dir %s after Close: %v, want it removed", dir, err)
				}
			}
		})
	}
}

// TestSweepStale checks that a start removes what a chain killed before
// Close left behind, and nothing else: not a running chain's directory
// (its node holds the lock), not one younger than staleAfter, not other
// files.
func TestSweepStale(t *testing.T) {
	tmp := t.TempDir()
	mk := func(name string, age time.Duration) string {
		t.Helper()
		d := filepath.Join(tmp, name)
		if err := os.MkdirAll(filepath.Join(d, nodeName, "chaindata"), 0o700); err != nil {
			t.Fatal(err)
		}
		at := time.Now().Add(-age)
		if err := os.Chtimes(d, at, at); err != nil {
			t.Fatal(err)
		}
		return d
	}
	stale := mk("fleetd-devchain-111", time.Hour)
	fresh := mk("fleetd-devchain-222", time.Second)
	other := mk("someone-else-333", time.Hour)
	held := mk("fleetd-devchain-444", time.Hour)
	lock := flock.New(filepath.Join(held, nodeName, "LOCK"))
	if ok, err := lock.TryLock(); err != nil || !ok {
		t.Fatalf("lock %s: %v %v", held, ok, err)
	}
	defer lock.Unlock()

	sweepStale(tmp, time.Now().Add(-staleAfter))
	for _, tc := range []struct {
		dir  string
		want bool
	}{{stale, false}, {fresh, true}, {other, true}, {held, true}} {
		_, err := os.Stat(tc.dir)
		if got := err == nil; got != tc.want {
			t.Errorf("%s exists = %v after the sweep, want %v", filepath.Base(tc.dir), got, tc.want)
		}
	}

	// A running OnDisk chain's directory survives a sweep that would take
	// any unlocked one, whatever its age.
	c, err := Start(context.Background(), Config{OnDisk: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sweepStale(filepath.Dir(c.dir), time.Now().Add(time.Hour))
	if _, err := os.Stat(filepath.Join(c.dir, nodeName, "chaindata")); err != nil {
		t.Fatalf("sweep removed a running chain's database: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(c.dir); !os.IsNotExist(err) {
		t.Fatalf("Close left %s: %v", c.dir, err)
	}
}
