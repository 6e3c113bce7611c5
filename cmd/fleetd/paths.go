package main

import (
	"path/filepath"

	"github.com/qafleet/fleetd/runner"
)

// The data dir and the paths under it, shared by the command groups (core
// app methods, not a group's): a group that needs one of them reads it here.

// dataDir is --data-dir, else the config's data_dir, else the default, as
// an absolute path: every path derived from it may be printed, and a printed
// path must work from any directory.
func (a *app) dataDir() string {
	d := DefaultDataDir
	switch {
	case a.dataDirFlag != "":
		d = a.dataDirFlag
	case a.cfg != nil && a.cfg.DataDir != "":
		d = a.cfg.resolve(a.cfg.DataDir)
	}
	return abs(d)
}

// sandboxDir is where run sandboxes live.
func (a *app) sandboxDir() string { return runner.SandboxDir(a.dataDir()) }

// reportsDir is where triage writes its reports (latest.json, the HTML).
func (a *app) reportsDir() string { return filepath.Join(a.dataDir(), "reports") }

// fuzzDir is where qa_fuzz keeps each target's corpus and statistics.
func (a *app) fuzzDir() string { return filepath.Join(a.dataDir(), "fuzz") }

// fixerDir is the fix stage's state under the data dir.
func (a *app) fixerDir() string { return filepath.Join(a.dataDir(), "fixer") }

// outboxDir is the fleet identity's outbox for the configured log, flushed
// by the daemon (start and shutdown), `fleetd reconcile` and `fleetd mcp`.
func (a *app) outboxDir() string { return filepath.Join(a.dataDir(), "outbox") }

// httpTokenFile is where the token lives.
func (a *app) httpTokenFile() string { return filepath.Join(a.dataDir(), "keys", "http.token") }
