// Command fleetd is the autonomous QA fleet daemon and its operator CLI: it
// runs specialist probes against an on-chain app platform, posts findings to
// an append-only on-chain feedback log, and reads them back.
//
// main only wires signals and the exit code; everything else is in Main so
// tests can run whole commands in-process.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	reload := make(chan struct{}, 1)
	go func() {
		stopping := false
		for s := range sigs {
			switch {
			case s == syscall.SIGHUP:
				select {
				case reload <- struct{}{}:
				default:
				}
			case stopping:
				// The second interrupt: the operator wants out now.
				fmt.Fprintln(os.Stderr, "fleetd: second signal, exiting without waiting")
				os.Exit(130)
			default:
				stopping = true
				cancel()
			}
		}
	}()
	code := mainWithReload(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, reload)
	cancel()
	os.Exit(code)
}
