// Command fleetd is the autonomous QA fleet daemon and its operator CLI: it
// runs specialist probes against an on-chain app platform, posts findings to
// an append-only on-chain feedback log, and reads them back.
//
// main only wires signals and the exit code; everything else is in Main so
// tests can run whole commands in-process.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
