package evm

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// bip32Vectors are BIP-32's test vectors 1 to 4 (bip-0032.mediawiki): the
// seed, the path and the extended private key it must give.
var bip32Vectors = [][3]string{
	{"000102030405060708090a0b0c0d0e0f", "m", "xprv9s21ZrQH143K3QTDL4LXw2F7HEK3wJUD2nW2nRk4stbPy6cq3jPPqjiChkVvvNKmPGJxWUtg6LnF5kejMRNNU3TGtRBeJgk33yuGBxrMPHi"},
	{"000102030405060708090a0b0c0d0e0f", "m/0'", "xprv9uHRZZhk6KAJC1avXpDAp4MDc3sQKNxDiPvvkX8Br5ngLNv1TxvUxt4cV1rGL5hj6KCesnDYUhd7oWgT11eZG7XnxHrnYeSvkzY7d2bhkJ7"},
	{"000102030405060708090a0b0c0d0e0f", "m/0'/1", "xprv9wTYmMFdV23N2TdNG573QoEsfRrWKQgWeibmLntzniatZvR9BmLnvSxqu53Kw1UmYPxLgboyZQaXwTCg8MSY3H2EU4pWcQDnRnrVA1xe8fs"},
	{"000102030405060708090a0b0c0d0e0f", "m/0'/1/2'", "xprv9z4pot5VBttmtdRTWfWQmoH1taj2axGVzFqSb8C9xaxKymcFzXBDptWmT7FwuEzG3ryjH4ktypQSAewRiNMjANTtpgP4mLTj34bhnZX7UiM"},
	{"000102030405060708090a0b0c0d0e0f", "m/0'/1/2'/2", "xprvA2JDeKCSNNZky6uBCviVfJSKyQ1mDYahRjijr5idH2WwLsEd4Hsb2Tyh8RfQMuPh7f7RtyzTtdrbdqqsunu5Mm3wDvUAKRHSC34sJ7in334"},
	{"000102030405060708090a0b0c0d0e0f", "m/0'/1/2'/2/1000000000", "xprvA41z7zogVVwxVSgdKUHDy1SKmdb533PjDz7J6N6mV6uS3ze1ai8FHa8kmHScGpWmj4WggLyQjgPie1rFSruoUihUZREPSL39UNdE3BBDu76"},
	{"fffcf9f6f3f0edeae7e4e1dedbd8d5d2cfccc9c6c3c0bdbab7b4b1aeaba8a5a29f9c999693908d8a8784817e7b7875726f6c696663605d5a5754514e4b484542", "m", "xprv9s21ZrQH143K31xYSDQpPDxsXRTUcvj2iNHm5NUtrGiGG5e2DtALGdso3pGz6ssrdK4PFmM8NSpSBHNqPqm55Qn3LqFtT2emdEXVYsCzC2U"},
	{"fffcf9f6f3f0edeae7e4e1dedbd8d5d2cfccc9c6c3c0bdbab7b4b1aeaba8a5a29f9c999693908d8a8784817e7b7875726f6c696663605d5a5754514e4b484542", "m/0", "xprv9vHkqa6EV4sPZHYqZznhT2NPtPCjKuDKGY38FBWLvgaDx45zo9WQRUT3dKYnjwih2yJD9mkrocEZXo1ex8G81dwSM1fwqWpWkeS3v86pgKt"},
	{"fffcf9f6f3f0edeae7e4e1dedbd8d5d2cfccc9c6c3c0bdbab7b4b1aeaba8a5a29f9c999693908d8a8784817e7b7875726f6c696663605d5a5754514e4b484542", "m/0/2147483647'", "xprv9wSp6B7kry3Vj9m1zSnLvN3xH8RdsPP1Mh7fAaR7aRLcQMKTR2vidYEeEg2mUCTAwCd6vnxVrcjfy2kRgVsFawNzmjuHc2YmYRmagcEPdU9"},
	{"fffcf9f6f3f0edeae7e4e1dedbd8d5d2cfccc9c6c3c0bdbab7b4b1aeaba8a5a29f9c999693908d8a8784817e7b7875726f6c696663605d5a5754514e4b484542", "m/0/2147483647'/1", "xprv9zFnWC6h2cLgpmSA46vutJzBcfJ8yaJGg8cX1e5StJh45BBciYTRXSd25UEPVuesF9yog62tGAQtHjXajPPdbRCHuWS6T8XA2ECKADdw4Ef"},
	{"fffcf9f6f3f0edeae7e4e1dedbd8d5d2cfccc9c6c3c0bdbab7b4b1aeaba8a5a29f9c999693908d8a8784817e7b7875726f6c696663605d5a5754514e4b484542", "m/0/2147483647'/1/2147483646'", "xprvA1RpRA33e1JQ7ifknakTFpgNXPmW2YvmhqLQYMmrj4xJXXWYpDPS3xz7iAxn8L39njGVyuoseXzU6rcxFLJ8HFsTjSyQbLYnMpCqE2VbFWc"},
	{"fffcf9f6f3f0edeae7e4e1dedbd8d5d2cfccc9c6c3c0bdbab7b4b1aeaba8a5a29f9c999693908d8a8784817e7b7875726f6c696663605d5a5754514e4b484542", "m/0/2147483647'/1/2147483646'/2", "xprvA2nrNbFZABcdryreWet9Ea4LvTJcGsqrMzxHx98MMrotbir7yrKCEXw7nadnHM8Dq38EGfSh6dqA9QWTyefMLEcBYJUuekgW4BYPJcr9E7j"},
	{"4b381541583be4423346c643850da4b320e46a87ae3d2a4e6da11eba819cd4acba45d239319ac14f863b8d5ab5a0d0c64d2e8a1e7d1457df2e5a3c51c73235be", "m", "xprv9s21ZrQH143K25QhxbucbDDuQ4naNntJRi4KUfWT7xo4EKsHt2QJDu7KXp1A3u7Bi1j8ph3EGsZ9Xvz9dGuVrtHHs7pXeTzjuxBrCmmhgC6"},
	{"4b381541583be4423346c643850da4b320e46a87ae3d2a4e6da11eba819cd4acba45d239319ac14f863b8d5ab5a0d0c64d2e8a1e7d1457df2e5a3c51c73235be", "m/0'", "xprv9uPDJpEQgRQfDcW7BkF7eTya6RPxXeJCqCJGHuCJ4GiRVLzkTXBAJMu2qaMWPrS7AANYqdq6vcBcBUdJCVVFceUvJFjaPdGZ2y9WACViL4L"},
	{"3ddd5602285899a946114506157c7997e5444528f3003f6134712147db19b678", "m", "xprv9s21ZrQH143K48vGoLGRPxgo2JNkJ3J3fqkirQC2zVdk5Dgd5w14S7fRDyHH4dWNHUgkvsvNDCkvAwcSHNAQwhwgNMgZhLtQC63zxwhQmRv"},
	{"3ddd5602285899a946114506157c7997e5444528f3003f6134712147db19b678", "m/0'", "xprv9vB7xEWwNp9kh1wQRfCCQMnZUEG21LpbR9NPCNN1dwhiZkjjeGRnaALmPXCX7SgjFTiCTT6bXes17boXtjq3xLpcDjzEuGLQBM5ohqkao9G"},
	{"3ddd5602285899a946114506157c7997e5444528f3003f6134712147db19b678", "m/0'/1'", "xprv9xJocDuwtYCMNAo3Zw76WENQeAS6WGXQ55RCy7tDJ8oALr4FWkuVoHJeHVAcAqiZLE7Je3vZJHxspZdFHfnBEjHqU5hG1Jaj32dVoS6XLT1"},
}

// base58 is Bitcoin's base58 alphabet.
const base58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

// decodeXprv returns the chain code and key of a serialized extended
// private key (4 version, 1 depth, 4 fingerprint, 4 child, 32 chain code,
// 0x00 and 32 key bytes, 4 checksum bytes).
func decodeXprv(t *testing.T, s string) ExtKey {
	t.Helper()
	n := new(big.Int)
	for _, c := range s {
		i := strings.IndexRune(base58, c)
		if i < 0 {
			t.Fatalf("%q is not base58", s)
		}
		n.Mul(n, big.NewInt(58)).Add(n, big.NewInt(int64(i)))
	}
	b := n.FillBytes(make([]byte, 82))
	if b[45] != 0 {
		t.Fatalf("%s: not a private key", s)
	}
	var k ExtKey
	copy(k.Chain[:], b[13:45])
	copy(k.Key[:], b[46:78])
	return k
}

func parsePath(t *testing.T, p string) []uint32 {
	t.Helper()
	var out []uint32
	for _, part := range strings.Split(p, "/")[1:] {
		h := strings.HasSuffix(part, "'")
		n, err := strconv.ParseUint(strings.TrimSuffix(part, "'"), 10, 32)
		if err != nil {
			t.Fatal(err)
		}
		if h {
			n += Hardened
		}
		out = append(out, uint32(n))
	}
	return out
}

// TestBIP32Vectors: every key of BIP-32's vectors 1 to 4, hardened and
// normal steps, and the path written back as the vectors write it.
func TestBIP32Vectors(t *testing.T) {
	for _, v := range bip32Vectors {
		seed, _ := hex.DecodeString(v[0])
		m, err := MasterKey(seed)
		if err != nil {
			t.Fatal(err)
		}
		path := parsePath(t, v[1])
		k, err := m.Path(path...)
		if err != nil {
			t.Fatalf("%s %s: %v", v[0][:8], v[1], err)
		}
		if want := decodeXprv(t, v[2]); k != want {
			t.Errorf("seed %s… %s: key %x chain %x, want %x %x", v[0][:8], v[1], k.Key, k.Chain, want.Key, want.Chain)
		}
		if got := PathString(path); got != v[1] {
			t.Errorf("PathString %q, want %q", got, v[1])
		}
	}
}

// TestBIP39Seeds: BIP-39's English vectors (passphrase "TREZOR") give
// their seed and master key.
func TestBIP39Seeds(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "trajectory", "testdata", "bip39-vectors.json"))
	if err != nil {
		t.Fatal(err)
	}
	var vs []struct{ Mnemonic, Seed, Xprv string }
	if err := json.Unmarshal(b, &vs); err != nil || len(vs) != 24 {
		t.Fatalf("%d vectors: %v", len(vs), err)
	}
	for _, v := range vs {
		seed, err := MnemonicSeed(strings.Fields(v.Mnemonic), "TREZOR")
		if err != nil {
			t.Fatal(err)
		}
		if got := hex.EncodeToString(seed[:]); got != v.Seed {
			t.Errorf("%s: seed %s, want %s", v.Mnemonic, got, v.Seed)
			continue
		}
		m, err := MasterKey(seed[:])
		if err != nil {
			t.Fatal(err)
		}
		if want := decodeXprv(t, v.Xprv); m != want {
			t.Errorf("%s: master key differs", v.Mnemonic)
		}
	}
}

// TestEthAccounts: the development mnemonic's first accounts are the
// well-known ones (Hardhat's and Anvil's funded accounts).
func TestEthAccounts(t *testing.T) {
	seed, err := MnemonicSeed(strings.Fields("test test test test test test test test test test test junk"), "")
	if err != nil {
		t.Fatal(err)
	}
	accts, err := EthAccounts(seed[:], 3)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"f39fd6e51aad88f6f4ce6ab8827279cfffb92266",
		"70997970c51812dc3a010c7d01b50e0d17dc79c8",
		"3c44cdddb6a900fa2b585dd299e03d12fa4293bc",
	}
	if len(accts) != len(want) {
		t.Fatalf("%d accounts", len(accts))
	}
	for i, a := range accts {
		if got := hex.EncodeToString(a.Address[:]); got != want[i] {
			t.Errorf("account %d: 0x%s, want 0x%s", i, got, want[i])
		}
		if wantPath := "m/44'/60'/0'/0/" + strconv.Itoa(i); a.Path != wantPath {
			t.Errorf("account %d: path %s", i, a.Path)
		}
	}
	// Hardhat's account 0 key, well known too.
	if got := hex.EncodeToString(accts[0].Key[:]); got != "ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80" {
		t.Errorf("account 0 key %s", got)
	}
}

func TestHDErrors(t *testing.T) {
	if _, err := MasterKey(make([]byte, 15)); err == nil || !strings.Contains(err.Error(), "15 bytes") {
		t.Errorf("short seed: %v", err)
	}
	if _, err := MnemonicSeed([]string{"caf\u00e9"}, ""); err == nil || !strings.Contains(err.Error(), "not ASCII") {
		t.Errorf("non-ASCII word: %v", err)
	}
	if _, err := MnemonicSeed(nil, ""); err == nil {
		t.Error("no words: no error")
	}
	var zero ExtKey // key 0: not a key, no public key to derive from
	if _, err := zero.Child(0); !errors.Is(err, ErrInvalidChild) {
		t.Errorf("child of a zero key: %v", err)
	}
}
