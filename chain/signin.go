package chain

import (
	"errors"
	"fmt"

	"github.com/ethereum/go-ethereum/accounts"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/qafleet/fleetd/fleet"
)

// Sign-in with Ethereum (EIP-4361) signs its message with EIP-191
// personal_sign: secp256k1 over keccak256("\x19Ethereum Signed Message:\n"
// ‖ len ‖ message), the signature as r ‖ s ‖ v with v 27 or 28, as
// wallets return it. The signing key never leaves this package.

// ErrBadSignature is wrapped by RecoverText for a signature that names no
// signer.
var ErrBadSignature = errors.New("bad personal_sign signature")

// SignText signs msg as a wallet's personal_sign does and returns the
// 65-byte signature (v = 27 or 28).
func (k *Key) SignText(msg []byte) ([]byte, error) {
	if k == nil || k.priv == nil {
		return nil, errors.New("sign text: no key")
	}
	sig, err := crypto.Sign(accounts.TextHash(msg), k.priv)
	if err != nil {
		return nil, fmt.Errorf("sign text: %w", err)
	}
	sig[crypto.RecoveryIDOffset] += 27
	return sig, nil
}

// RecoverText returns the address whose key made sig over msg with
// personal_sign. It takes v as 27/28 or 0/1; anything else, a signature of
// another length or one no key can have made wraps ErrBadSignature.
func RecoverText(msg, sig []byte) (fleet.Address, error) {
	if len(sig) != crypto.SignatureLength {
		return fleet.Address{}, fmt.Errorf("%w: %d bytes, want %d", ErrBadSignature, len(sig), crypto.SignatureLength)
	}
	s := make([]byte, len(sig))
	copy(s, sig)
	switch v := s[crypto.RecoveryIDOffset]; v {
	case 27, 28:
		s[crypto.RecoveryIDOffset] -= 27
	case 0, 1:
	default:
		return fleet.Address{}, fmt.Errorf("%w: v is %d, want 27, 28, 0 or 1", ErrBadSignature, v)
	}
	pub, err := crypto.SigToPub(accounts.TextHash(msg), s)
	if err != nil {
		return fleet.Address{}, fmt.Errorf("%w: %v", ErrBadSignature, err)
	}
	return fleet.Address(crypto.PubkeyToAddress(*pub)), nil
}

// ChecksumAddress is a's EIP-55 mixed-case form, which EIP-4361 messages
// carry.
func ChecksumAddress(a fleet.Address) string { return common.Address(a).Hex() }
