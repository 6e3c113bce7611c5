package specialists

import (
	"fmt"
	"os"

	"github.com/qafleet/fleetd/chain/evm"
	"github.com/qafleet/fleetd/fleet"
)

// ABI is one ABI of target.abis: where it came from and its functions.
type ABI struct {
	Source    string
	Functions []evm.Function
}

// maxABIFile bounds a target.abis file (evm.ParseABI's own limit applies
// to what is read).
const maxABIFile = 4 << 20

// LoadABIFile reads a JSON ABI file (solc's array, or a Hardhat or Foundry
// artifact holding one under "abi"). It fails, naming the file, when the
// file cannot be read, is too large, is not a JSON ABI, or holds no
// function.
func LoadABIFile(path string) (ABI, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return ABI{}, fmt.Errorf("read abi %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return ABI{}, fmt.Errorf("read abi %s: not a regular file", path)
	}
	if fi.Size() > maxABIFile {
		return ABI{}, fmt.Errorf("read abi %s: %d bytes is more than %d", path, fi.Size(), maxABIFile)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return ABI{}, fmt.Errorf("read abi %s: %w", path, err)
	}
	fns, err := evm.ParseABI(b)
	if err != nil {
		return ABI{}, fmt.Errorf("abi %s is not a JSON contract ABI: %w", path, err)
	}
	if len(fns) == 0 {
		return ABI{}, fmt.Errorf("abi %s holds no function", path)
	}
	return ABI{Source: "target.abis " + path, Functions: fns}, nil
}

// LoadABIs reads the files of target.abis, for Options.ABIs; URLs are left
// to the run, which fetches them through qa_fetch. An error names the
// entry.
func LoadABIs(t fleet.Target) ([]ABI, error) {
	var out []ABI
	for i, a := range t.ABIs {
		if fleet.IsURL(a) {
			continue
		}
		abi, err := LoadABIFile(a)
		if err != nil {
			return nil, fmt.Errorf("target.abis[%d]: %w", i, err)
		}
		out = append(out, abi)
	}
	return out, nil
}
