// Command htmlfixed parses one HTML file with the fixed parser: exit 0, or
// 1 with a message on a read or parse error.
package main

import (
	"fmt"
	"os"

	"github.com/qafleet/fleetd/evaltarget/controls/htmlfixed"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: htmlfixed FILE")
		os.Exit(64)
	}
	b, err := os.ReadFile(os.Args[1])
	if err == nil {
		err = htmlfixed.Parse(b)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
