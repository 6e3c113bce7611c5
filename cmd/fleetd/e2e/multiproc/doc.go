// Package multiproc tests many fleetd processes on one log: daemons and
// probe loops, each with its own data dir, killed at random, then checked
// for lost, doubled or stranded anything. Slow; skipped with -short.
package multiproc
