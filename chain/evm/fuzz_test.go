package evm

import (
	"strings"
	"testing"
)

// FuzzSelectors: any bytes give selectors or an error, never a panic, and
// every selector returned is compared in the code.
func FuzzSelectors(f *testing.F) {
	f.Add(hexBytes(f, readBuild(f, "NameRegistry.bin")))
	f.Add([]byte{0x60, 0x00, 0x35, 0x80, 0x63, 1, 2, 3, 4, 0x14, 0x61, 0x00, 0x10, 0x57, 0x00})
	f.Add([]byte{0x7f})
	f.Add([]byte{0xa1, 0x00, 0x01})
	f.Fuzz(func(t *testing.T, code []byte) {
		c, err := Selectors(code)
		if err == nil && len(c.Selectors) == 0 {
			t.Fatalf("no error and no selectors")
		}
		if c.Metadata > len(code) {
			t.Fatalf("metadata of %d bytes in %d bytes of code", c.Metadata, len(code))
		}
	})
}

// FuzzABI: ParseABI never panics, and every signature it returns encodes.
func FuzzABI(f *testing.F) {
	f.Add(readBuild(f, "NameRegistry.abi"))
	f.Add([]byte(`{"abi":[{"type":"function","name":"f","inputs":[{"type":"tuple[2]","components":[{"type":"uint8[]"}]}]}]}`))
	f.Add([]byte(`[{"name":"g","inputs":[{"type":"bytes32[3][]"}]}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fns, err := ParseABI(data)
		if err != nil {
			return
		}
		for _, fn := range fns {
			_, _ = Calldata(fn.Signature, Fill{Word: 1, Text: "qa"})
			_, _ = Calldata(fn.Signature, Fill{Zero: true})
		}
	})
}

// FuzzSignaturesIn: prose never panics, and every signature found is
// canonical (it encodes, or is refused with an error).
func FuzzSignaturesIn(f *testing.F) {
	f.Add("call setFee(uint fee) or transferOwnership(address newOwner)")
	f.Add("function f(bytes32[2][] memory x, string calldata s) external")
	f.Fuzz(func(t *testing.T, text string) {
		for _, fn := range SignaturesIn(text) {
			if fn.Selector() != Selector(fn.Signature) {
				t.Fatal("selector differs")
			}
			_, _ = Calldata(fn.Signature, Fill{Word: 1})
		}
	})
}

// FuzzPEMKey: PEM text never panics, and a key it returns derives an
// address or says why not.
func FuzzPEMKey(f *testing.F) {
	f.Add("-----BEGIN EC PRIVATE KEY-----\nMC4CAQEEIAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAoAcGBSuBBAAK\n-----END EC PRIVATE KEY-----\n")
	f.Add("-----BEGIN PRIVATE KEY-----\nMAA=\n-----END PRIVATE KEY-----\n")
	f.Fuzz(func(t *testing.T, text string) {
		k, err := PEMKey(text)
		if err != nil {
			return
		}
		_, _ = AddressOf(k)
	})
}

// FuzzReturnedBytes: node return data never panics the decoder, and what
// it returns lies inside the data.
func FuzzReturnedBytes(f *testing.F) {
	ret, _ := EncodeArgs("r(bytes)", []string{"hello"})
	f.Add(ret[4:])
	f.Add(make([]byte, 64))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := ReturnedBytes(data)
		if err == nil && len(b) > len(data) {
			t.Fatalf("%d bytes out of %d", len(b), len(data))
		}
	})
}

// FuzzEncodeArgs: any signature and argument texts encode or fail with an
// error, never a panic.
func FuzzEncodeArgs(f *testing.F) {
	f.Add("setMetadata(string,bytes32,bytes)", "qa", "title", "0x00")
	f.Add("f(address,int8,bool)", "0x00000000000000000000000000000000000000aa", "-128", "true")
	f.Fuzz(func(t *testing.T, sig, a, b, c string) {
		_, _ = EncodeArgs(sig, []string{a, b, c})
	})
}

// FuzzEthAccounts: any words and any seed length give accounts or an
// error, never a panic; every account is a valid key at its path.
func FuzzEthAccounts(f *testing.F) {
	f.Add("test test test test test test test test test test test junk", "", 16)
	f.Add("zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo wrong", "TREZOR", 64)
	f.Add("caf\u00e9", "", 0)
	f.Fuzz(func(t *testing.T, phrase, pass string, n int) {
		seed, err := MnemonicSeed(strings.Fields(phrase), pass)
		if err != nil {
			return
		}
		accts, err := EthAccounts(seed[:max(0, min(n, 64))], 2)
		if err != nil {
			return
		}
		for i, a := range accts {
			if addr, err := AddressOf(a.Key); err != nil || addr != a.Address || a.Path != PathString(EthPath(uint32(i))) {
				t.Fatalf("account %d: %x at %s: %v", i, a.Address, a.Path, err)
			}
		}
	})
}
