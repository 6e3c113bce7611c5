package evm

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha512"
	"encoding/binary"
	"errors"
	"fmt"
	"math/big"
	"strings"
)

// MnemonicSeed returns the BIP-39 seed of a phrase: PBKDF2-HMAC-SHA512 of
// the words joined by single spaces, salted with "mnemonic" and the
// passphrase, 2048 rounds, 64 bytes. It does not check the words (their
// list and checksum are trajectory.MnemonicEntropy's); BIP-39's NFKD
// normalization is the identity on ASCII, so a word or passphrase that is
// not ASCII is an error rather than a seed no wallet would make.
func MnemonicSeed(words []string, passphrase string) ([64]byte, error) {
	var seed [64]byte
	if len(words) == 0 {
		return seed, errors.New("mnemonic seed: no words")
	}
	phrase := strings.Join(words, " ")
	for _, s := range []string{phrase, passphrase} {
		for i := 0; i < len(s); i++ {
			if s[i] >= 0x80 {
				return seed, errors.New("mnemonic seed: not ASCII (NFKD normalization is not implemented)")
			}
		}
	}
	k, err := pbkdf2.Key(sha512.New, phrase, []byte("mnemonic"+passphrase), 2048, 64)
	if err != nil {
		return seed, fmt.Errorf("mnemonic seed: %w", err)
	}
	copy(seed[:], k)
	return seed, nil
}

// Hardened is added to a BIP-32 child index for hardened derivation (').
const Hardened = 1 << 31

// ExtKey is a BIP-32 extended private key: a secp256k1 key and its chain
// code.
type ExtKey struct {
	Key   [32]byte
	Chain [32]byte
}

// ErrInvalidChild means a BIP-32 derivation step gave no valid key (a
// value not below the curve order, or zero): BIP-32 says to skip the
// index. It happens with probability below 2⁻¹²⁷.
var ErrInvalidChild = errors.New("bip32: derivation gave an invalid key")

// MasterKey is BIP-32's master key of a seed (16 to 64 bytes).
func MasterKey(seed []byte) (ExtKey, error) {
	if len(seed) < 16 || len(seed) > 64 {
		return ExtKey{}, fmt.Errorf("bip32: a seed of %d bytes, want 16 to 64", len(seed))
	}
	return split(hmac512([]byte("Bitcoin seed"), seed), nil)
}

// Child derives child i (i >= Hardened for a hardened child) of k. The
// error wraps ErrInvalidChild.
func (k ExtKey) Child(i uint32) (ExtKey, error) {
	var data []byte
	if i >= Hardened {
		data = append([]byte{0}, k.Key[:]...)
	} else {
		d := new(big.Int).SetBytes(k.Key[:])
		if d.Sign() == 0 || d.Cmp(curveN) >= 0 {
			return ExtKey{}, ErrInvalidChild
		}
		data = compressed(scalarBase(d))
	}
	data = binary.BigEndian.AppendUint32(data, i)
	return split(hmac512(k.Chain[:], data), k.Key[:])
}

// Path derives k along a path of child indexes.
func (k ExtKey) Path(path ...uint32) (ExtKey, error) {
	var err error
	for _, i := range path {
		if k, err = k.Child(i); err != nil {
			return ExtKey{}, fmt.Errorf("%s: %w", PathString(path), err)
		}
	}
	return k, nil
}

// PathString writes a path as BIP-32 does: m/44'/60'/0'/0/0.
func PathString(path []uint32) string {
	var b strings.Builder
	b.WriteString("m")
	for _, i := range path {
		if i >= Hardened {
			fmt.Fprintf(&b, "/%d'", i-Hardened)
		} else {
			fmt.Fprintf(&b, "/%d", i)
		}
	}
	return b.String()
}

// EthPath is the standard Ethereum account path of BIP-44: m/44'/60'/0'/0/i.
func EthPath(i uint32) []uint32 { return []uint32{44 + Hardened, 60 + Hardened, Hardened, 0, i} }

// Account is a key a seed derives and the address it controls.
type Account struct {
	Path    string
	Key     [32]byte
	Address [20]byte
}

// EthAccounts derives the first n standard Ethereum accounts of a seed
// (EthPath 0 to n-1), as wallets (MetaMask, Ledger Live's default, Hardhat)
// do. An index whose derivation is invalid is skipped, as BIP-32 says.
func EthAccounts(seed []byte, n int) ([]Account, error) {
	m, err := MasterKey(seed)
	if err != nil {
		return nil, err
	}
	base := EthPath(0)
	parent, err := m.Path(base[:4]...) // m/44'/60'/0'/0, derived once
	if err != nil {
		return nil, err
	}
	var out []Account
	for i := range uint32(n) {
		k, err := parent.Child(i)
		if errors.Is(err, ErrInvalidChild) {
			continue
		}
		addr, err := AddressOf(k.Key)
		if err != nil {
			continue
		}
		out = append(out, Account{Path: PathString(EthPath(i)), Key: k.Key, Address: addr})
	}
	return out, nil
}

func hmac512(key, data []byte) []byte {
	h := hmac.New(sha512.New, key)
	h.Write(data)
	return h.Sum(nil)
}

// split makes a key of an HMAC-SHA512 output: the left half (added to the
// parent key, if any, mod n) and the chain code.
func split(i []byte, parent []byte) (ExtKey, error) {
	il := new(big.Int).SetBytes(i[:32])
	if il.Cmp(curveN) >= 0 {
		return ExtKey{}, ErrInvalidChild
	}
	if parent != nil {
		il.Add(il, new(big.Int).SetBytes(parent)).Mod(il, curveN)
	}
	if il.Sign() == 0 {
		return ExtKey{}, ErrInvalidChild
	}
	var k ExtKey
	il.FillBytes(k.Key[:])
	copy(k.Chain[:], i[32:])
	return k, nil
}

// compressed is SEC 1's compressed encoding of a point: 02 or 03 (y even
// or odd) and x.
func compressed(p point) []byte {
	b := make([]byte, 33)
	b[0] = 2 + byte(p.y.Bit(0))
	p.x.FillBytes(b[1:])
	return b
}
