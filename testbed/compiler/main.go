package compiler

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
)

// Exit codes of Main. A Go panic inside the compiler is not caught: it
// unwinds out of Main, and the Go runtime prints the stack trace to the
// process's stderr and exits with status 2.
const (
	ExitOK       = 0  // compiled; the module is on stdout
	ExitRejected = 1  // the source was rejected (or could not be read); one clean line on stderr
	ExitUsage    = 64 // bad arguments (EX_USAGE)
)

const usage = "usage: compile [-hex] FILE"

// Main is the compiler's command line, run by `fleetd testbed compile FILE`.
// args are the arguments after the program name: "compile", an optional
// "-hex", and the source file. On success it writes the module to stdout (raw
// bytes, or lowercase hex and a newline with -hex) and returns ExitOK; a
// rejected or unreadable source gets "FILE:line:col: message" (or the read
// error) on stderr and ExitRejected; bad arguments get the usage on stderr and
// ExitUsage. It never recovers a panic and never bounds the compile time, so
// the planted crash and hang (testbed/README.md) are a real crash and a real
// hang of the process.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "compile" {
		args = args[1:]
	}
	asHex := false
	if len(args) > 0 && args[0] == "-hex" {
		asHex, args = true, args[1:]
	}
	if len(args) != 1 || args[0] == "" {
		fmt.Fprintln(stderr, usage)
		return ExitUsage
	}
	file := args[0]
	src, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintf(stderr, "compile: %v\n", err)
		return ExitRejected
	}
	out, err := Compile(src)
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			fmt.Fprintf(stderr, "%s:%v\n", file, e)
		} else {
			fmt.Fprintf(stderr, "%s: %v\n", file, err)
		}
		return ExitRejected
	}
	if asHex {
		_, err = fmt.Fprintln(stdout, hex.EncodeToString(out))
	} else {
		_, err = stdout.Write(out)
	}
	if err != nil {
		fmt.Fprintf(stderr, "compile: write output: %v\n", err)
		return ExitRejected
	}
	return ExitOK
}
