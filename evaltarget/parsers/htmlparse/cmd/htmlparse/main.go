// Command htmlparse parses one HTML file: exit 0 when it parses, 1 with a
// message on a read or parse error, and whatever the parser's panic does
// otherwise. It is the compiler-style target (argv: htmlparse FILE).
package main

import (
	"fmt"
	"os"

	"github.com/qafleet/fleetd/evaltarget/parsers/htmlparse"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: htmlparse FILE")
		os.Exit(64)
	}
	b, err := os.ReadFile(os.Args[1])
	if err == nil {
		err = htmlparse.Parse(b)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
