package evm

import (
	"encoding/asn1"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"strings"
)

// secp256k1's parameters (SEC 2): y² = x³ + 7 over F_p, base point G of
// order n.
var (
	curveP, _  = new(big.Int).SetString("fffffffffffffffffffffffffffffffffffffffffffffffffffffffefffffc2f", 16)
	curveN, _  = new(big.Int).SetString("fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141", 16)
	curveGx, _ = new(big.Int).SetString("79be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798", 16)
	curveGy, _ = new(big.Int).SetString("483ada7726a3c4655da4fbfc0e1108a8fd17b448a68554199c47d08ffb10d4b8", 16)
)

// ErrNotAKey means 32 bytes are not a secp256k1 private key: zero, or not
// below the curve order.
var ErrNotAKey = errors.New("not a secp256k1 private key (zero, or not below the curve order)")

// point is an affine point; nil x is the point at infinity.
type point struct{ x, y *big.Int }

func (a point) add(b point) point {
	switch {
	case a.x == nil:
		return b
	case b.x == nil:
		return a
	}
	p := curveP
	var l *big.Int
	if a.x.Cmp(b.x) == 0 {
		if s := new(big.Int).Add(a.y, b.y); s.Mod(s, p).Sign() == 0 {
			return point{}
		}
		// λ = 3x² / 2y
		num := new(big.Int).Mul(a.x, a.x)
		num.Mul(num, big.NewInt(3))
		den := new(big.Int).Lsh(a.y, 1)
		l = num.Mul(num, den.ModInverse(den.Mod(den, p), p))
	} else {
		num := new(big.Int).Sub(b.y, a.y)
		den := new(big.Int).Sub(b.x, a.x)
		den.Mod(den, p)
		l = num.Mul(num, den.ModInverse(den, p))
	}
	l.Mod(l, p)
	x := new(big.Int).Mul(l, l)
	x.Sub(x, a.x).Sub(x, b.x).Mod(x, p)
	y := new(big.Int).Sub(a.x, x)
	y.Mul(y, l).Sub(y, a.y).Mod(y, p)
	return point{x, y}
}

// scalarBase is d·G by double-and-add. It is not constant time: it derives
// addresses of keys found in public text, never of fleetd's own keys.
func scalarBase(d *big.Int) point {
	var r point
	g := point{curveGx, curveGy}
	for i := d.BitLen() - 1; i >= 0; i-- {
		r = r.add(r)
		if d.Bit(i) == 1 {
			r = r.add(g)
		}
	}
	return r
}

// AddressOf returns the Ethereum address a 32-byte secp256k1 private key
// controls: the last 20 bytes of keccak256 of its public key. The error
// wraps ErrNotAKey for zero or a value not below the curve order.
func AddressOf(priv [32]byte) ([20]byte, error) {
	d := new(big.Int).SetBytes(priv[:])
	if d.Sign() == 0 || d.Cmp(curveN) >= 0 {
		return [20]byte{}, ErrNotAKey
	}
	pub := scalarBase(d)
	var xy [64]byte
	pub.x.FillBytes(xy[:32])
	pub.y.FillBytes(xy[32:])
	h := Keccak256(xy[:])
	return [20]byte(h[12:]), nil
}

// HexKey reads 64 hex digits, with or without 0x, as a private key's bytes.
func HexKey(s string) ([32]byte, error) {
	s = strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
	var k [32]byte
	if len(s) != 64 {
		return k, fmt.Errorf("hex key: want 64 hex digits, got %d characters", len(s))
	}
	if _, err := hex.Decode(k[:], []byte(s)); err != nil {
		return k, fmt.Errorf("hex key: %w", err)
	}
	return k, nil
}

// oidSecp256k1 and oidECPublicKey identify secp256k1 keys in SEC 1 and
// PKCS #8 structures.
var (
	oidSecp256k1   = asn1.ObjectIdentifier{1, 3, 132, 0, 10}
	oidECPublicKey = asn1.ObjectIdentifier{1, 2, 840, 10045, 2, 1}
)

type sec1Key struct {
	Version    int
	PrivateKey []byte
	Curve      asn1.ObjectIdentifier `asn1:"optional,explicit,tag:0"`
	PublicKey  asn1.BitString        `asn1:"optional,explicit,tag:1"`
}

type pkcs8Key struct {
	Version    int
	Algorithm  struct{ Algorithm, Parameters asn1.ObjectIdentifier }
	PrivateKey []byte
}

// ErrNotSecp256k1 means a PEM block holds a private key of another kind
// (RSA, Ed25519, P-256, ...): it cannot control an Ethereum account.
var ErrNotSecp256k1 = errors.New("not a secp256k1 key")

// PEMKey reads the first PEM block of text as a secp256k1 private key: an
// "EC PRIVATE KEY" (SEC 1) or a "PRIVATE KEY" (PKCS #8) on the secp256k1
// curve. Another kind of key wraps ErrNotSecp256k1; an encrypted or
// malformed block is an error saying which.
func PEMKey(text string) ([32]byte, error) {
	var k [32]byte
	b, _ := pem.Decode([]byte(text))
	if b == nil {
		return k, errors.New("pem: no complete PEM block")
	}
	var der []byte
	switch b.Type {
	case "EC PRIVATE KEY":
		der = b.Bytes
	case "PRIVATE KEY":
		var p pkcs8Key
		if _, err := asn1.Unmarshal(b.Bytes, &p); err != nil {
			return k, fmt.Errorf("pem: PKCS #8: %w", err)
		}
		if !p.Algorithm.Algorithm.Equal(oidECPublicKey) || !p.Algorithm.Parameters.Equal(oidSecp256k1) {
			return k, fmt.Errorf("pem: PKCS #8 key with algorithm %v: %w", p.Algorithm.Algorithm, ErrNotSecp256k1)
		}
		der = p.PrivateKey
	case "ENCRYPTED PRIVATE KEY":
		return k, errors.New("pem: the key is encrypted")
	default:
		return k, fmt.Errorf("pem: a %q block: %w", short(b.Type), ErrNotSecp256k1)
	}
	var s sec1Key
	if _, err := asn1.Unmarshal(der, &s); err != nil {
		return k, fmt.Errorf("pem: SEC 1: %w", err)
	}
	if len(s.Curve) > 0 && !s.Curve.Equal(oidSecp256k1) {
		return k, fmt.Errorf("pem: curve %v: %w", s.Curve, ErrNotSecp256k1)
	}
	if len(s.PrivateKey) == 0 || len(s.PrivateKey) > 32 {
		return k, fmt.Errorf("pem: a private key of %d bytes", len(s.PrivateKey))
	}
	copy(k[32-len(s.PrivateKey):], s.PrivateKey)
	return k, nil
}
