// Command gen writes the abigen v2 bindings of package contracts from the
// compiled build/<Name>.abi and build/<Name>.bin. `go generate ./chain/...`
// runs it in chain/contracts, and the package's TestBindingsUpToDate runs it
// into a temporary directory to compare with the committed bindings, so both
// come from this one code path. (It is a command rather than a library
// because the layout rule lets chain/contracts import no fleetd package.)
//
// Usage: go run ./internal/gen [-build DIR] [-out DIR]
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ethereum/go-ethereum/accounts/abi/abigen"
)

// contract names one contract to bind: its build/<typ>.abi and .bin inputs
// and the Go file its binding is written to.
type contract struct {
	typ  string // contract name in Solidity, also the Go type name
	file string // output file name
}

// contracts is the list of contracts bound into package contracts.
var contracts = []contract{
	{typ: "FeedbackLog", file: "feedbacklog.go"},
	{typ: "FeedbackLogV2", file: "feedbacklogv2.go"},
	{typ: "NameRegistry", file: "nameregistry.go"},
}

// pkg is the Go package name of the generated bindings.
const pkg = "contracts"

func main() {
	build := flag.String("build", "build", "directory holding <Name>.abi and <Name>.bin")
	out := flag.String("out", ".", "directory the bindings are written to")
	flag.Parse()
	if err := run(*build, *out); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(build, out string) error {
	for _, c := range contracts {
		code, err := generate(build, c)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(out, c.file), code, 0o644); err != nil {
			return fmt.Errorf("write %s: %w", c.file, err)
		}
	}
	return nil
}

// generate returns the gofmt-ed abigen v2 binding of c. It fails if an input
// file is missing or abigen rejects the ABI.
func generate(build string, c contract) ([]byte, error) {
	abiJSON, err := os.ReadFile(filepath.Join(build, c.typ+".abi"))
	if err != nil {
		return nil, fmt.Errorf("bind %s: %w", c.typ, err)
	}
	bin, err := os.ReadFile(filepath.Join(build, c.typ+".bin"))
	if err != nil {
		return nil, fmt.Errorf("bind %s: %w", c.typ, err)
	}
	bin = bytes.TrimPrefix(bytes.TrimSpace(bin), []byte("0x"))
	// BindV2 strips whitespace from the ABI and gofmts its output itself, as
	// the abigen command does.
	code, err := abigen.BindV2([]string{c.typ}, []string{string(abiJSON)}, []string{string(bin)}, pkg, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("bind %s: %w", c.typ, err)
	}
	return []byte(code), nil
}
