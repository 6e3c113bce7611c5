// Package evm reads what a contract shows a stranger: the function
// selectors in its runtime bytecode's dispatcher, function signatures from
// ABI JSON and from prose, calldata built from a signature, the address a
// secp256k1 private key controls, and the accounts a BIP-39 mnemonic
// derives (its seed, BIP-32 derivation, the standard m/44'/60'/0'/0/i
// path). Everything here is a pure function of
// its input (outside input: node answers, crawled pages), fuzzed, and free
// of go-ethereum, so the specialists can use it without the node's weight.
package evm
