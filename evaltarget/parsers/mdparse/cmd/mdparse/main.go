// Command mdparse renders one Markdown file to HTML on stdout: exit 0, or 1
// on a read error. It is the compiler-style target (argv: mdparse FILE).
package main

import (
	"fmt"
	"os"

	"github.com/qafleet/fleetd/evaltarget/parsers/mdparse"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: mdparse FILE")
		os.Exit(64)
	}
	b, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Stdout.Write(mdparse.Render(b))
}
