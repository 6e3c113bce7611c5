// Package runner is the run core: one specialist run, the same for every
// command that runs one (`fleetd probe`, `fleetd check`, `fleetd mcp`,
// `fleetd runs replay` and the daemon). [Run] opens a fresh sandbox, writes
// the run record's header, starts the run's rendering crawl (jailed in the
// run's jail dir), builds the tools at the run's dial, drives the agent loop
// (fleet.Run) and cleans up (names released, funds swept) however the run
// ends. What depends on the configuration (the planner, the renderer, the
// budget, the data dir) comes in a [Config] that cmd/fleetd builds from the
// config snapshot the run started on.
package runner
