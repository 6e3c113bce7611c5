// Package bindgen turns the committed ABI and bytecode under chain/contracts/build
// into go-ethereum abigen v2 bindings. Both `go generate ./chain/...` (through
// internal/gen) and the contracts package's up-to-date test call it, so the
// committed bindings and the test's expectation come from one code path.
package bindgen

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ethereum/go-ethereum/accounts/abi/abigen"
)

// Contract names one contract to bind: its build/<Type>.abi and .bin inputs
// and the Go file the binding is written to.
type Contract struct {
	Type string // contract name in Solidity, also the Go type name
	File string // output file name, relative to the package directory
}

// Contracts is the list of contracts bound into package contracts.
var Contracts = []Contract{
	{Type: "FeedbackLog", File: "feedbacklog.go"},
	{Type: "NameRegistry", File: "nameregistry.go"},
}

// Package is the Go package name of the generated bindings.
const Package = "contracts"

// Generate returns the gofmt-ed abigen v2 binding of c, read from
// buildDir/<Type>.abi and buildDir/<Type>.bin. It fails if either file is
// missing or abigen rejects the ABI.
func Generate(buildDir string, c Contract) ([]byte, error) {
	abiJSON, err := os.ReadFile(filepath.Join(buildDir, c.Type+".abi"))
	if err != nil {
		return nil, fmt.Errorf("bind %s: %w", c.Type, err)
	}
	bin, err := os.ReadFile(filepath.Join(buildDir, c.Type+".bin"))
	if err != nil {
		return nil, fmt.Errorf("bind %s: %w", c.Type, err)
	}
	bin = bytes.TrimPrefix(bytes.TrimSpace(bin), []byte("0x"))
	// BindV2 strips whitespace from the ABI and gofmts its output itself, as
	// the abigen command does.
	code, err := abigen.BindV2([]string{c.Type}, []string{string(abiJSON)}, []string{string(bin)}, Package, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("bind %s: %w", c.Type, err)
	}
	return []byte(code), nil
}
