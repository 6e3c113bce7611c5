package chain

import (
	"crypto/ecdsa"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/qafleet/fleetd/fleet"
)

// Key is a secp256k1 signing key with its address. Its String and Format never
// reveal the private key, so a Key can be logged or printed by mistake safely.
type Key struct {
	priv *ecdsa.PrivateKey
	addr common.Address
	// Source names where the key came from (a file path) for error messages.
	Source string
}

// ErrKeyFile marks a key file that cannot be used; the message names the file
// and the problem but never includes the file's contents.
var ErrKeyFile = errors.New("bad key file")

// GenerateKey returns a fresh random key.
func GenerateKey() (*Key, error) {
	priv, err := crypto.GenerateKey()
	if err != nil {
		return nil, fmt.Errorf("generate key: %w", err)
	}
	return newKey(priv, "generated"), nil
}

func newKey(priv *ecdsa.PrivateKey, source string) *Key {
	return &Key{priv: priv, addr: crypto.PubkeyToAddress(priv.PublicKey), Source: source}
}

// Address returns the key's account address.
func (k *Key) Address() fleet.Address { return fleet.Address(k.addr) }

// String returns the address only.
func (k *Key) String() string { return "key(" + k.Address().String() + ")" }

// GoString keeps %#v from dumping the private scalar.
func (k *Key) GoString() string { return k.String() }

// LoadKey reads a key file: 64 hex digits (optionally 0x-prefixed) and an
// optional trailing newline. It refuses files other users can read, as ssh
// does. Errors wrap ErrKeyFile, name the file and never echo its contents.
func LoadKey(path string) (*Key, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrKeyFile, path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w %s: not a regular file", ErrKeyFile, path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("%w %s: readable by other users (mode %04o); run chmod 600 %s", ErrKeyFile, path, perm, path)
	}
	if fi.Size() > 4096 {
		return nil, fmt.Errorf("%w %s: %d bytes is too large for a key file", ErrKeyFile, path, fi.Size())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrKeyFile, path, err)
	}
	priv, err := parseKey(string(b))
	clear(b)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %s", ErrKeyFile, path, err)
	}
	return newKey(priv, path), nil
}

// parseKey never includes the input in its error.
func parseKey(s string) (*ecdsa.PrivateKey, error) {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
	if len(s) != 64 {
		return nil, fmt.Errorf("want 64 hex digits, found %d characters", len(s))
	}
	raw, err := hex.DecodeString(s)
	if err != nil {
		return nil, errors.New("not hexadecimal")
	}
	defer clear(raw)
	priv, err := crypto.ToECDSA(raw)
	if err != nil {
		return nil, errors.New("not a valid secp256k1 private key")
	}
	return priv, nil
}

// WriteKeyFile stores k at path with mode 0600, creating parent directories
// (0700). It refuses to overwrite an existing file, so a key is never lost.
func WriteKeyFile(path string, k *Key) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("write key %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("write key %s: file exists; refusing to overwrite a key", path)
		}
		return fmt.Errorf("write key %s: %w", path, err)
	}
	raw := crypto.FromECDSA(k.priv)
	buf := make([]byte, 0, 2+2*len(raw)+1)
	buf = append(buf, "0x"...)
	buf = hex.AppendEncode(buf, raw)
	buf = append(buf, '\n')
	_, werr := f.Write(buf)
	clear(raw)
	clear(buf)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(path)
		return fmt.Errorf("write key %s: %w", path, werr)
	}
	return nil
}

// LoadOrCreateKey loads the key at path, or generates and stores a new one if
// the file does not exist. created reports which happened.
func LoadOrCreateKey(path string) (k *Key, created bool, err error) {
	k, err = LoadKey(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return k, false, err
	}
	if k, err = GenerateKey(); err != nil {
		return nil, false, err
	}
	if err := WriteKeyFile(path, k); err != nil {
		return nil, false, err
	}
	k.Source = path
	return k, true, nil
}

// PrivateKey exposes the key to chain-internal signing and to packages that
// must custody throwaway keys (sandbox). Never log or serialize it.
func (k *Key) PrivateKey() *ecdsa.PrivateKey { return k.priv }

// KeyFromECDSA wraps an existing private key.
func KeyFromECDSA(priv *ecdsa.PrivateKey, source string) *Key { return newKey(priv, source) }

// ImportKey reads the key at src, which may be group-readable (a Kubernetes
// secret volume under an fsGroup is delivered 0440, and a non-root pod can
// read it no other way) but never world-accessible nor group-writable, and
// stores it at dst with mode 0600 for LoadKey, which accepts nothing looser.
// It refuses to overwrite dst. Errors wrap ErrKeyFile and never echo the key.
func ImportKey(src, dst string) (*Key, error) {
	fi, err := os.Stat(src)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrKeyFile, src, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w %s: not a regular file", ErrKeyFile, src)
	}
	if perm := fi.Mode().Perm(); perm&0o027 != 0 {
		return nil, fmt.Errorf("%w %s: mode %04o: group-writable or accessible to other users", ErrKeyFile, src, perm)
	}
	if fi.Size() > 4096 {
		return nil, fmt.Errorf("%w %s: %d bytes is too large for a key file", ErrKeyFile, src, fi.Size())
	}
	b, err := os.ReadFile(src)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrKeyFile, src, err)
	}
	priv, err := parseKey(string(b))
	clear(b)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %s", ErrKeyFile, src, err)
	}
	k := newKey(priv, dst)
	if err := WriteKeyFile(dst, k); err != nil {
		return nil, err
	}
	return k, nil
}
