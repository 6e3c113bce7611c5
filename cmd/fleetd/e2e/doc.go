// Package e2e runs fleetd the way its README says, with the built binary in
// fresh directories: the "Running it for real" walkthrough line by line, and
// the demo followed by the commands it prints. Slow; skipped with -short.
package e2e
