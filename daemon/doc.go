// Package daemon is `fleetd run` (and the part of `fleetd mcp`) that is
// logic rather than commands: the daemon itself ([Daemon]: the runner, the
// triggers, the HTTP side and the console's source over one tools
// environment), the one watcher of the chain node both commands share
// ([Node]), `fleetd mcp`'s service around the MCP server ([MCP]), an
// operator's correction checked and posted ([Mark]), the adapter from the
// runner to the triggers' Starter ([Starter]), publishing the fleet's
// specialist set and name, and the fuzz statistics the console and
// /metrics show.
//
// The daemon runs on an immutable [Snapshot] swapped whole on reload: the
// daemon's [Config] and the config-bound [Work] (a run, a triage pass, the
// fix stage, a mark) that cmd/fleetd fills from the config it loaded, so
// this package never imports cmd/fleetd.
//
// It sits above the pipelines and below cmd/fleetd (layout_test.go): it
// composes the runner (fleet.Runner), the triggers, the poster and the HTTP
// side; cmd/fleetd keeps the cobra commands, the flags, loading the config
// and printing.
package daemon
