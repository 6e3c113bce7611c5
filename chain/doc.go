// Package chain is fleetd's only door to an EVM chain: JSON-RPC to any node
// (chain id checked at Dial), the FeedbackLog contract in either version
// (direct and EIP-712 sponsored submissions; batched, pipelined reads of v1's
// pages and v2's text logs, each v2 text checked against its stored hash),
// signing keys, and the write guard that every transaction passes before it
// is signed.
//
// go-ethereum types stay inside this package and its subpackages; callers see
// fleet.Address, *big.Int and plain values. Errors from the contract come back
// as *RevertError carrying the custom error's name and arguments.
package chain
