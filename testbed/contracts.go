package testbed

import (
	"bytes"
	_ "embed"
	"encoding/hex"
	"fmt"
	"sync"

	"github.com/ethereum/go-ethereum/accounts/abi"
)

// The registry is compiled with the pinned solc of chain/contracts; its output
// under contracts/build is committed, so building needs no node. contracts/
// holds no Go package: the testbed package embeds the build, and a parent
// package may not import its subpackage (layout_test.go).
//
//go:generate sh -c "cd ../chain/contracts && node compile.js --out ../../testbed/contracts/build ../../testbed/contracts/FlawedRegistry.sol"

//go:embed contracts/build/FlawedRegistry.abi
var registryABIJSON []byte

//go:embed contracts/build/FlawedRegistry.bin
var registryBinHex []byte

var registryABI = sync.OnceValues(func() (*abi.ABI, error) {
	a, err := abi.JSON(bytes.NewReader(registryABIJSON))
	if err != nil {
		return nil, fmt.Errorf("parse FlawedRegistry ABI: %w", err)
	}
	return &a, nil
})

// registryBytecode is FlawedRegistry's creation bytecode.
func registryBytecode() ([]byte, error) {
	b, err := hex.DecodeString(string(bytes.TrimSpace(registryBinHex)))
	if err != nil {
		return nil, fmt.Errorf("decode FlawedRegistry bytecode: %w", err)
	}
	return b, nil
}
