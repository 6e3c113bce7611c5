// Command gen writes the abigen v2 bindings of package contracts from the
// committed build/*.abi and build/*.bin. It is run by `go generate ./chain/...`
// from the chain/contracts directory.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/qafleet/fleetd/chain/contracts/internal/bindgen"
)

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
	for _, c := range bindgen.Contracts {
		code, err := bindgen.Generate(build, c)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(out, c.File), code, 0o644); err != nil {
			return fmt.Errorf("write %s: %w", c.File, err)
		}
	}
	return nil
}
