// Package daemon is the part of `fleetd run` (and of `fleetd mcp`) that is
// logic rather than commands: the one watcher of the chain node both
// commands share ([Node]), the adapter from the runner to the triggers'
// Starter ([Starter]), and the fuzz statistics the console and /metrics show.
//
// It sits above the pipelines and below cmd/fleetd (layout_test.go): it
// composes the runner (fleet.Runner), the triggers, the poster and the HTTP
// side; cmd/fleetd keeps the cobra commands, the flags, loading the config
// and printing.
package daemon
