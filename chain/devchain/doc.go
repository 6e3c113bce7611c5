// Package devchain runs an embedded Ethereum development chain: go-ethereum's
// own node driven by the simulated beacon (the machinery behind `geth --dev`),
// serving HTTP JSON-RPC on a loopback address. fleetd's demo and tests use it so
// they exercise the same RPC path as a production node.
//
// The chain is ephemeral (no IPC, no peer-to-peer networking) and exposes
// the eth, net, web3, txpool and debug namespaces over HTTP; debug carries
// geth's tracer API with the native tracers (debug_traceCall with the
// prestateTracer's diff mode), and Config.NoDebug leaves it out. Blocks are
// produced on demand: a transaction accepted by the pool is sealed into a
// block at once, without anyone calling a commit method.
//
// # Memory or disk
//
// By default the database is Go maps in memory. Config.OnDisk puts it in a
// pebble database in a fresh temporary directory instead, which Close
// removes; a fleetd-devchain-* directory that a process killed before Close
// left there (older than a minute, its node lock free) is removed by the next
// OnDisk start. The state is the same; where it
// lives is not: in memory, every garbage collection cycle marks the whole
// state (gigabytes of small objects for a 100,000-entry log, seconds of CPU
// per cycle), while pebble keeps it in buffers the collector does not scan.
// OnDisk starts ~0.1 s slower and seals blocks faster; reading a 100,000-entry
// log written by transactions takes a quarter less CPU and a third less time
// (BENCHMARKS.md, issue 14). Config.LogIndex runs
// go-ethereum's log index, which a chain this size does not need.
//
// # Gas rules
//
// go-ethereum's own dev and simulated chains enable every fork the library
// knows, including future ones whose storage pricing makes a simple SSTORE
// several times dearer than on mainnet. This chain instead activates the forks
// live on Ethereum mainnet today (up to Osaka and the BPO1/BPO2 blob-parameter
// forks) at genesis and nothing later, so gas estimates and budgets measured
// here match production.
//
// # Block timestamps
//
// With on-demand blocks a block's timestamp is the wall clock or, when that is
// not later than the parent's, the parent's timestamp plus one second. A burst
// of transactions therefore pushes block timestamps ahead of wall time (+1 s
// per block; thousands of blocks put it tens of minutes ahead). Anything
// compared against block.timestamp, such as an EIP-712 deadline, must be
// derived from the latest block's timestamp, not from the local clock. The
// genesis block carries the wall-clock time at Start.
//
// Start seals one empty block before returning, so the chain starts at block
// 1: go-ethereum's transaction indexer first runs when a block arrives, and
// until then a receipt lookup fails with "transaction indexing is in
// progress" instead of returning null. Real nodes return that error for a
// while after a restart; clients should treat it as "not found yet".
//
// As on any go-ethereum node, a block's receipts become visible an instant
// before "latest" moves to that block: read state that a transaction changed
// at the receipt's block number, not at "latest".
package devchain
