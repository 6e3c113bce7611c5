// Package doctor holds the checks of `fleetd doctor` that need no config
// loading: each takes the values it checks and returns a [Check], one line
// of the report (what was checked, whether it passed, what was seen, how to
// fix it). cmd/fleetd reads the config, calls them in order and prints the
// lines. Checks never write to the chain and never print secrets.
package doctor
