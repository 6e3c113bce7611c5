package devchain

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/eth"
	"github.com/ethereum/go-ethereum/eth/catalyst"
	"github.com/ethereum/go-ethereum/eth/ethconfig"
	"github.com/ethereum/go-ethereum/eth/filters"
	"github.com/ethereum/go-ethereum/log"
	"github.com/ethereum/go-ethereum/node"
	"github.com/ethereum/go-ethereum/p2p"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/rpc"
	"github.com/gofrs/flock"
)

const (
	// DefaultAddr is the address Start serves on when Config.Addr is empty:
	// loopback, with a port chosen by the kernel.
	DefaultAddr = "127.0.0.1:0"

	// DefaultGasLimit is the block gas limit when Config.GasLimit is zero.
	DefaultGasLimit = 60_000_000

	// ChainID is the chain id of every embedded chain, as for `geth --dev`.
	ChainID = 1337

	// closeTimeout bounds Close. The node's HTTP server alone may wait up to
	// 5 s for in-flight requests, so leave room for that plus the chain.
	closeTimeout = 15 * time.Second

	// warmUpTimeout bounds the wait for the first block's transaction index,
	// normally a millisecond or two.
	warmUpTimeout = 10 * time.Second
)

// ErrNotLoopback is returned by Start when Config.Addr names a host that is not
// a loopback address. The dev chain serves an unauthenticated RPC endpoint with
// funded test accounts, so it never listens beyond the local machine.
var ErrNotLoopback = errors.New("not a loopback address")

// ErrCloseTimeout is returned by Close when the node did not stop in time.
var ErrCloseTimeout = errors.New("close timed out")

// httpModules are the RPC namespaces always served over HTTP: no admin,
// personal or miner; debug is added unless Config.NoDebug (modules).
var httpModules = []string{"eth", "net", "web3", "txpool"}

// Config configures the embedded chain. The zero value is usable.
type Config struct {
	// Addr is the host:port to serve HTTP JSON-RPC on. Empty means DefaultAddr.
	// Port 0 picks a free port; Chain.URL reports the real one. The host must be
	// a loopback address ("localhost", 127.0.0.0/8 or ::1).
	Addr string

	// Funded lists accounts given a balance in the genesis block.
	Funded []Account

	// GasLimit is the block gas limit. Zero means DefaultGasLimit.
	GasLimit uint64

	// Preload places contract accounts in the genesis block as given: code
	// and storage. Benchmarks load a 100,000-entry log this way instead of
	// sending 100,000 transactions.
	Preload []Preloaded

	// Logger receives go-ethereum's node log at warn level and above. Nil
	// discards it.
	Logger *slog.Logger

	// OnDisk keeps the chain's database in a fresh temporary directory
	// (pebble, as geth uses) instead of Go maps, removed again by Close. A
	// large state then lives off the Go heap, where the garbage collector
	// does not scan it (see BENCHMARKS.md, issue 14).
	OnDisk bool

	// LogIndex runs go-ethereum's log index (filter maps), so eth_getLogs
	// reads only the blocks that hold matching logs instead of every
	// block's receipts in the range.
	LogIndex bool

	// NoDebug leaves out the debug namespace. By default it is served, as
	// `geth --dev --http.api eth,debug` does, for debug_traceCall with the
	// native tracers (registerTracers); it also serves the node's other
	// debug methods (profiling, setHead), which is why the chain listens on
	// loopback only. Tests of clients that must cope without it set this.
	NoDebug bool
}

// Account is an address pre-funded in the genesis block.
type Account struct {
	Address [20]byte
	Wei     *big.Int // balance; must be non-nil and non-negative
}

// Preloaded is a contract account in the genesis block.
type Preloaded struct {
	Address [20]byte
	Code    []byte // runtime code
	Storage map[[32]byte][32]byte
}

// Chain is a running embedded dev chain. Its methods are safe for concurrent use.
type Chain struct {
	stack  *node.Node // owns the eth service
	sealer *sealer
	url    string
	dir    string // the OnDisk data directory, removed by Close

	closeOnce sync.Once
	closeErr  error
}

// Start builds and starts a chain and returns once its HTTP endpoint accepts
// requests and it has sealed its first (empty) block, typically in 30-80 ms.
// It returns an error wrapping ErrNotLoopback for a non-loopback Addr, an
// error for an invalid Config or a port already in use, and an error
// satisfying errors.Is(err, ctx.Err()) if ctx ends first; on any error
// everything started so far has been stopped. The caller must Close the
// returned Chain.
func Start(ctx context.Context, cfg Config) (*Chain, error) {
	return start(ctx, cfg, mainnetRules())
}

// start is Start with the chain rules as a parameter, so tests can show the
// difference the rules make.
func start(ctx context.Context, cfg Config, rules *params.ChainConfig) (*Chain, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	host, port, err := loopbackAddr(cfg.Addr)
	if err != nil {
		return nil, err
	}
	alloc, err := genesisAlloc(cfg.Funded, cfg.Preload)
	if err != nil {
		return nil, err
	}
	if port != 0 {
		// A node whose HTTP listener fails never starts its eth service, and
		// an unstarted service cannot be stopped: its goroutines would leak.
		// So find a busy port before building anything. (Another process may
		// still take the port in between; that rare case leaks.)
		if err := probeListen(host, port); err != nil {
			return nil, err
		}
	}
	gasLimit := cfg.GasLimit
	if gasLimit == 0 {
		gasLimit = DefaultGasLimit
	}
	dir := "" // in memory
	if cfg.OnDisk {
		sweepStale(os.TempDir(), time.Now().Add(-staleAfter))
		if dir, err = os.MkdirTemp("", onDiskPattern); err != nil {
			return nil, fmt.Errorf("data dir: %w", err)
		}
	}
	c, err := startIn(ctx, cfg, rules, host, port, gasLimit, alloc, dir)
	if err != nil && dir != "" {
		err = errors.Join(err, removeDir(dir))
	}
	return c, err
}

// startIn is start once the configuration is checked, with dir the data
// directory ("" for memory).
func startIn(ctx context.Context, cfg Config, rules *params.ChainConfig, host string, port int, gasLimit uint64, alloc types.GenesisAlloc, dir string) (*Chain, error) {
	stack, err := node.New(&node.Config{
		Name:             nodeName,
		DataDir:          dir,
		DBEngine:         "pebble",
		IPCPath:          "", // no IPC socket
		HTTPHost:         host,
		HTTPPort:         port,
		HTTPModules:      modules(cfg),
		HTTPVirtualHosts: virtualHosts(host),
		HTTPCors:         nil,
		HTTPTimeouts:     rpc.DefaultHTTPTimeouts,
		// Never used (no authenticated API is registered), but keep the engine
		// endpoint on loopback should one ever appear.
		AuthAddr:             host,
		AuthPort:             0,
		BatchRequestLimit:    node.DefaultConfig.BatchRequestLimit,
		BatchResponseMaxSize: node.DefaultConfig.BatchResponseMaxSize,
		HTTPBodyLimit:        node.DefaultConfig.HTTPBodyLimit,
		P2P: p2p.Config{
			MaxPeers:    0,
			NoDiscovery: true,
			NoDial:      true,
			ListenAddr:  "",
		},
		Logger: gethLogger(cfg.Logger),
	})
	if err != nil {
		return nil, fmt.Errorf("new node: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, errors.Join(err, closeUnstarted(stack))
	}

	ethConf := ethconfig.Defaults
	ethConf.Genesis = &core.Genesis{
		Config:     rules,
		GasLimit:   gasLimit,
		Alloc:      alloc,
		Difficulty: big.NewInt(0),
		BaseFee:    big.NewInt(params.InitialBaseFee),
		// Genesis at wall time, not 1970: callers derive deadlines from the
		// latest block's timestamp, and that may be genesis.
		Timestamp: uint64(time.Now().Unix()),
	}
	ethConf.SyncMode = ethconfig.FullSync
	ethConf.TxPool.NoLocals = true // no journal on disk
	ethConf.Miner.GasCeil = gasLimit
	// The pool admits any tip >= TxPool.PriceLimit (1 wei). The miner must
	// accept the same, or the beacon's on-demand loop spins forever on a
	// transaction the pool calls executable but the miner will not include.
	ethConf.Miner.GasPrice = big.NewInt(int64(ethConf.TxPool.PriceLimit))
	// As in ethclient/simulated: search logs block by block instead of running
	// the background log indexer; the chain is small.
	ethConf.LogNoHistory = !cfg.LogIndex
	if dir != "" {
		// geth's defaults size these caches for mainnet (GBs); a dev chain
		// holds megabytes.
		ethConf.DatabaseCache = 64
		ethConf.DatabaseHandles = 256
		// State older than the last 128 blocks moves from the write buffer
		// (Go maps) to the database once the buffer holds this much, rather
		// than at 1 GB: that is what keeps it off the Go heap.
		ethConf.TrieDirtyCache = 32
	}

	backend, err := eth.New(stack, &ethConf)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("new eth service: %w", err), closeUnstarted(stack))
	}
	// From here on the eth service owns goroutines that only node.Close stops,
	// and node.Close stops services only once the node has started. So every
	// failure path below starts the node before closing it.
	registerTracers(stack, backend, cfg)
	filterSystem := filters.NewFilterSystem(backend.APIBackend, filters.Config{
		LogCacheSize:  ethConf.FilterLogCacheSize,
		LogQueryLimit: ethConf.LogQueryLimit,
		RangeLimit:    ethConf.RangeLimit,
	})
	stack.RegisterAPIs([]rpc.API{{
		Namespace: "eth",
		Service:   filters.NewFilterAPI(filterSystem), // eth_getLogs, eth_newFilter, ...
	}})

	// Period 0: the beacon has no timer of its own; the sealer seals a block
	// whenever the pool reports new transactions. The beacon's period-0
	// Start and Stop do nothing the chain needs, so it is not registered as a
	// node lifecycle, nor are its "dev" and "testing" RPC namespaces.
	sim, err := catalyst.NewSimulatedBeacon(0, common.Address{}, backend)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("new simulated beacon: %w", err), startAndClose(stack))
	}
	// Seal the first block before the RPC server exists, so it cannot race
	// the sealer.
	if err := warmUp(ctx, sim, backend); err != nil {
		return nil, errors.Join(err, startAndClose(stack))
	}
	seal := startSealer(sim, backend)

	if err := stack.Start(); err != nil {
		// A failed Start has already stopped what it started.
		seal.stop()
		return nil, fmt.Errorf("start node: %w", err)
	}
	c := &Chain{
		stack:  stack,
		sealer: seal,
		url:    stack.HTTPEndpoint(), // the listener's address, so port 0 is resolved
		dir:    dir,
	}
	if err := ctx.Err(); err != nil {
		return nil, errors.Join(err, c.Close())
	}
	return c, nil
}

// warmUp seals one empty block and waits for the transaction indexer to
// cover it. The indexer first runs when a block arrives; until then every
// receipt lookup fails with "transaction indexing is in progress" instead of
// returning null, which would break clients polling for a receipt (real geth
// does the same after a restart, but a fresh dev chain need not).
func warmUp(ctx context.Context, sim *catalyst.SimulatedBeacon, backend *eth.Ethereum) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	sim.Commit() // logs, rather than returns, a sealing error
	if head := backend.BlockChain().CurrentBlock(); head.Number.Sign() == 0 {
		return errors.New("warm up: first block not sealed")
	}
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	limit := time.NewTimer(warmUpTimeout)
	defer limit.Stop()
	for !backend.BlockChain().TxIndexDone() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-limit.C:
			return fmt.Errorf("warm up: transaction index not ready after %v", warmUpTimeout)
		case <-tick.C:
		}
	}
	return ctx.Err()
}

// URL returns the HTTP JSON-RPC endpoint, e.g. "http://127.0.0.1:41234",
// with the port actually bound.
func (c *Chain) URL() string { return c.url }

// ChainID returns the chain id, always 1337.
func (c *Chain) ChainID() uint64 { return ChainID }

// Close stops block production, the RPC server and the node, and releases the
// database: the in-memory one, or the OnDisk directory, which it removes (an
// error removing it is returned). It returns an error wrapping ErrCloseTimeout
// if the node has not stopped within 15 s (it keeps stopping in the
// background, and an OnDisk directory is left in place). Calling Close again
// is a no-op that returns the first call's result.
func (c *Chain) Close() error {
	c.closeOnce.Do(func() {
		done := make(chan error, 1)
		go func() {
			// Sealing stops first: a block must not be written while the
			// node closes its database.
			c.sealer.stop()
			done <- c.stack.Close()
		}()
		timer := time.NewTimer(closeTimeout)
		defer timer.Stop()
		select {
		case err := <-done:
			if err != nil {
				c.closeErr = fmt.Errorf("close node: %w", err)
			}
			if c.dir != "" {
				c.closeErr = errors.Join(c.closeErr, removeDir(c.dir))
			}
		case <-timer.C:
			c.closeErr = fmt.Errorf("close node: %w", ErrCloseTimeout)
		}
	})
	return c.closeErr
}

// onDiskPattern names OnDisk data directories in the temporary directory.
const onDiskPattern = "fleetd-devchain-*"

// staleAfter is how old an unlocked OnDisk directory must be before another
// chain's start removes it: a chain starting now may not hold its lock yet.
const staleAfter = time.Minute

// sweepStale removes the OnDisk directories under tmp, older than before,
// that chains left behind when their process died before Close: those whose
// node lock (go-ethereum flocks <dir>/<node name>/LOCK while the node runs)
// nobody holds. It is best effort: a directory it cannot lock or remove is
// left for the next start.
func sweepStale(tmp string, before time.Time) {
	dirs, _ := filepath.Glob(filepath.Join(tmp, onDiskPattern))
	for _, d := range dirs {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() || fi.ModTime().After(before) {
			continue
		}
		lock := flock.New(filepath.Join(d, nodeName, "LOCK"))
		if ok, err := lock.TryLock(); err != nil || !ok {
			continue // a running chain's, or not ours to judge
		}
		os.RemoveAll(d)
		lock.Unlock()
	}
}

// nodeName is the node's name, and so its instance directory's.
const nodeName = "fleetd-devchain"

// removeDir removes an OnDisk data directory.
func removeDir(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove data dir: %w", err)
	}
	return nil
}

// closeUnstarted releases a node that was created but never started.
func closeUnstarted(stack *node.Node) error {
	if err := stack.Close(); err != nil {
		return fmt.Errorf("close node: %w", err)
	}
	return nil
}

// startAndClose releases a node whose eth service exists: only a started node
// stops its services on Close.
func startAndClose(stack *node.Node) error {
	if err := stack.Start(); err != nil {
		return fmt.Errorf("start node for cleanup: %w", err) // Start cleaned up
	}
	return closeUnstarted(stack)
}

// loopbackAddr splits addr (default DefaultAddr) into host and port and checks
// that the host is loopback. "localhost" is pinned to 127.0.0.1 so what is
// bound does not depend on name resolution.
func loopbackAddr(addr string) (string, int, error) {
	if addr == "" {
		addr = DefaultAddr
	}
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("addr %q: %w", addr, err)
	}
	if host == "localhost" {
		host = "127.0.0.1"
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !ip.IsLoopback() {
		return "", 0, fmt.Errorf("addr %q: host %q: %w (use 127.0.0.1, ::1 or localhost)", addr, host, ErrNotLoopback)
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return "", 0, fmt.Errorf("addr %q: port %q: %w", addr, portStr, err)
	}
	return ip.String(), int(port), nil
}

// probeListen reports whether host:port can be bound right now.
func probeListen(host string, port int) error {
	l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("probe http port: %w", err)
	}
	return l.Close()
}

// virtualHosts lists the Host header values the RPC server accepts. Binding to
// loopback keeps other machines out; checking Host as well keeps out web pages
// that point their own domain at 127.0.0.1 (DNS rebinding).
func virtualHosts(host string) []string {
	hosts := []string{"localhost", "127.0.0.1", "::1"}
	for _, h := range hosts {
		if h == host {
			return hosts
		}
	}
	return append(hosts, host)
}

// genesisAlloc returns the system contracts the active forks call into plus
// the funded and preloaded accounts.
func genesisAlloc(funded []Account, preload []Preloaded) (types.GenesisAlloc, error) {
	alloc := core.SystemContractAllocs()
	for i, a := range funded {
		addr := common.Address(a.Address)
		if a.Wei == nil || a.Wei.Sign() < 0 {
			return nil, fmt.Errorf("funded[%d] %s: balance must be non-nil and non-negative", i, addr)
		}
		if _, ok := alloc[addr]; ok {
			return nil, fmt.Errorf("funded[%d] %s: address already in genesis (duplicate or system contract)", i, addr)
		}
		alloc[addr] = types.Account{Balance: new(big.Int).Set(a.Wei)}
	}
	for i, p := range preload {
		addr := common.Address(p.Address)
		if _, ok := alloc[addr]; ok {
			return nil, fmt.Errorf("preload[%d] %s: address already in genesis", i, addr)
		}
		storage := make(map[common.Hash]common.Hash, len(p.Storage))
		for k, v := range p.Storage {
			storage[k] = v
		}
		alloc[addr] = types.Account{Code: p.Code, Storage: storage, Balance: new(big.Int), Nonce: 1}
	}
	return alloc, nil
}

// mainnetRules returns the chain rules live on Ethereum mainnet today, all
// active at genesis, under chain id 1337: every fork through Osaka plus the
// BPO1 and BPO2 blob-parameter forks (which only change blob limits), with
// mainnet's blob schedule. Amsterdam, Bogota and anything later stay off:
// params.AllDevChainProtocolChanges enables Bogota, whose storage pricing makes
// a fresh SSTORE several times dearer than on mainnet.
//
// The config is spelled out rather than copied from AllDevChainProtocolChanges
// so that a fork added to go-ethereum later stays off until chosen here.
func mainnetRules() *params.ChainConfig {
	zero := func() *uint64 { var t uint64; return &t }
	return &params.ChainConfig{
		ChainID:                 big.NewInt(ChainID),
		HomesteadBlock:          big.NewInt(0),
		EIP150Block:             big.NewInt(0),
		EIP155Block:             big.NewInt(0),
		EIP158Block:             big.NewInt(0),
		ByzantiumBlock:          big.NewInt(0),
		ConstantinopleBlock:     big.NewInt(0),
		PetersburgBlock:         big.NewInt(0),
		IstanbulBlock:           big.NewInt(0),
		MuirGlacierBlock:        big.NewInt(0),
		BerlinBlock:             big.NewInt(0),
		LondonBlock:             big.NewInt(0),
		ArrowGlacierBlock:       big.NewInt(0),
		GrayGlacierBlock:        big.NewInt(0),
		TerminalTotalDifficulty: big.NewInt(0),
		ShanghaiTime:            zero(),
		CancunTime:              zero(),
		PragueTime:              zero(),
		OsakaTime:               zero(),
		BPO1Time:                zero(),
		BPO2Time:                zero(),
		BlobScheduleConfig: &params.BlobScheduleConfig{
			Cancun: params.DefaultCancunBlobConfig,
			Prague: params.DefaultPragueBlobConfig, // Osaka keeps Prague's
			BPO1:   params.DefaultBPO1BlobConfig,
			BPO2:   params.DefaultBPO2BlobConfig,
		},
	}
}

// gethLogger adapts l for go-ethereum's node and RPC server, keeping warnings
// and errors only. go-ethereum's core packages log to its global root logger,
// which discards by default; it is left alone as it is process-wide.
func gethLogger(l *slog.Logger) log.Logger {
	if l == nil {
		return log.NewLogger(slog.DiscardHandler)
	}
	return log.NewLogger(minLevel{Handler: l.Handler(), min: slog.LevelWarn}).With("component", "devchain")
}

// minLevel drops records below min.
type minLevel struct {
	slog.Handler
	min slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(attrs []slog.Attr) slog.Handler {
	return minLevel{Handler: h.Handler.WithAttrs(attrs), min: h.min}
}

func (h minLevel) WithGroup(name string) slog.Handler {
	return minLevel{Handler: h.Handler.WithGroup(name), min: h.min}
}
