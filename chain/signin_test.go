package chain

import (
	"bytes"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/ethereum/go-ethereum/crypto"

	"github.com/qafleet/fleetd/fleet"
)

// TestSignTextMatchesAWallet checks SignText signs the digest wallets sign:
// ethers' documented hashMessage("Hello World") (EIP-191 version 0x45), and
// that RecoverText names the signer whatever v's form.
func TestSignTextMatchesAWallet(t *testing.T) {
	k, err := parseKeyForTest("4af1bceebf7f3634ec3cff8a2c38e51178d5d4ce585c52d6043e5e2cc3418bb0")
	if err != nil {
		t.Fatal(err)
	}
	msg := []byte("Hello World")
	sig, err := k.SignText(msg)
	if err != nil {
		t.Fatal(err)
	}
	if v := sig[64]; v != 27 && v != 28 {
		t.Fatalf("v = %d, want 27 or 28 as wallets return", v)
	}
	digest, _ := hex.DecodeString("a1de988600a42c4b4ab089b619297c17d53cffae5d5120d82d8a92d0bb3b78f2")
	low := bytes.Clone(sig)
	low[64] -= 27
	pub, err := crypto.SigToPub(digest, low)
	if err != nil || fleet.Address(crypto.PubkeyToAddress(*pub)) != k.Address() {
		t.Fatalf("the signature is not over ethers' hashMessage digest (%v)", err)
	}
	got, err := RecoverText(msg, sig)
	if err != nil || got != k.Address() {
		t.Fatalf("recovered %s, %v; want %s", got, err, k.Address())
	}
	if got, err := RecoverText(msg, low); err != nil || got != k.Address() {
		t.Fatalf("v 0/1: recovered %s, %v", got, err)
	}
	// Another message recovers another address: the signature binds the text.
	if got, err := RecoverText([]byte("Hello World!"), sig); err == nil && got == k.Address() {
		t.Fatal("a signature over another text recovered the signer")
	}
}

func parseKeyForTest(h string) (*Key, error) {
	priv, err := parseKey(h)
	if err != nil {
		return nil, err
	}
	return newKey(priv, "test"), nil
}

func TestRecoverTextRefusesBadSignatures(t *testing.T) {
	k, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	sig, _ := k.SignText([]byte("m"))
	for name, s := range map[string][]byte{
		"short":  sig[:64],
		"long":   append(bytes.Clone(sig), 0),
		"v is 5": append(bytes.Clone(sig[:64]), 5),
		"zero r": append(make([]byte, 64), 27),
	} {
		if _, err := RecoverText([]byte("m"), s); !errors.Is(err, ErrBadSignature) {
			t.Errorf("%s: err = %v, want ErrBadSignature", name, err)
		}
	}
	if ChecksumAddress(fleet.Address{0xc0, 0x2a, 0xaa, 0x39, 0xb2, 0x23, 0xfe, 0x8d, 0x0a, 0x0e, 0x5c, 0x4f, 0x27, 0xea, 0xd9, 0x08, 0x3c, 0x75, 0x6c, 0xc2}) !=
		"0xC02aaA39b223FE8D0A0e5C4F27eAD9083C756Cc2" {
		t.Fatal("ChecksumAddress is not EIP-55")
	}
}
