package fleet

import (
	"encoding/hex"
	"fmt"
)

// Address is a 20-byte account address. fleet defines its own type so that it
// need not import go-ethereum; the chain package converts at its boundary.
type Address [20]byte

// ParseAddress parses "0x" (or "0X") followed by 40 hex digits in any case. No
// checksum is verified: mixed case is accepted as plain hex. The error names s.
func ParseAddress(s string) (Address, error) {
	var a Address
	if len(s) != 42 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X') {
		return a, fmt.Errorf("invalid address %q: want 0x followed by 40 hex digits", s)
	}
	if _, err := hex.Decode(a[:], []byte(s[2:])); err != nil {
		return Address{}, fmt.Errorf("invalid address %q: want 0x followed by 40 hex digits", s)
	}
	return a, nil
}

// String returns the address as lowercase 0x-prefixed hex.
func (a Address) String() string {
	var b [42]byte
	b[0], b[1] = '0', 'x'
	hex.Encode(b[2:], a[:])
	return string(b[:])
}

// IsZero reports whether a is the zero address.
func (a Address) IsZero() bool { return a == Address{} }

// MarshalText encodes a as String does; it never fails.
func (a Address) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// UnmarshalText decodes as ParseAddress does; on error a is unchanged.
func (a *Address) UnmarshalText(b []byte) error {
	v, err := ParseAddress(string(b))
	if err != nil {
		return err
	}
	*a = v
	return nil
}
