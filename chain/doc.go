// Package chain is fleetd's only door to an EVM chain: JSON-RPC to any node
// (chain id checked at Dial), the FeedbackLog contract (direct and EIP-712
// sponsored submissions, paged reads), signing keys, and the write guard that
// every transaction passes before it is signed.
//
// go-ethereum types stay inside this package and its subpackages; callers see
// fleet.Address, *big.Int and plain values. Errors from the contract come back
// as *RevertError carrying the custom error's name and arguments.
package chain
