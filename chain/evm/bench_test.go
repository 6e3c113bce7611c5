package evm

import (
	"strings"
	"testing"
)

// BenchmarkSelectors reads NameRegistry's creation code (the constructor
// and the runtime code with its dispatcher).
func BenchmarkSelectors(b *testing.B) {
	code := hexBytes(b, readBuild(b, "NameRegistry.bin"))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Selectors(code); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAddressOf derives the address of a key (double-and-add in
// math/big: found keys are few, so no faster curve code was brought in).
func BenchmarkAddressOf(b *testing.B) {
	k, _ := HexKey("ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := AddressOf(k); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMnemonicAccounts is what one phrase found on a page costs before
// the chain is asked: the BIP-39 seed (2048 PBKDF2 rounds) and five
// standard Ethereum accounts.
func BenchmarkMnemonicAccounts(b *testing.B) {
	words := strings.Fields("test test test test test test test test test test test junk")
	b.ReportAllocs()
	for b.Loop() {
		seed, err := MnemonicSeed(words, "")
		if err != nil {
			b.Fatal(err)
		}
		if a, err := EthAccounts(seed[:], 5); err != nil || len(a) != 5 {
			b.Fatal(len(a), err)
		}
	}
}
