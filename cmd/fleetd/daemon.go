package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/qafleet/fleetd/console"
	fleetdaemon "github.com/qafleet/fleetd/daemon"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/pipeline"
	"github.com/qafleet/fleetd/poster"
	"github.com/spf13/cobra"
)

// DaemonConfig is the `daemon:` section.
type DaemonConfig struct {
	HTTPAddr        string        `yaml:"http_addr"`        // default 127.0.0.1:8787; port 0 picks one
	MaxConcurrent   int           `yaml:"max_concurrent"`   // fleet-wide cap on concurrent runs; default 2
	ShutdownTimeout time.Duration `yaml:"shutdown_timeout"` // default 30s
	Daily           DailyConfig   `yaml:"daily_budget"`     // fleet-wide per UTC day; zero fields are unlimited
	PollInterval    time.Duration `yaml:"poll_interval"`    // chain-event polling; default 2s
	Confirmations   uint64        `yaml:"confirmations"`    // blocks an event must be buried under; default 0
	// Specialists false: the daemon schedules no specialist (they run
	// elsewhere, e.g. as Kubernetes CronJobs) and only triages and serves
	// HTTP. Default true.
	Specialists *bool `yaml:"specialists"`
}

// DailyConfig is the fleet-wide spend allowed per UTC day.
type DailyConfig struct {
	MaxWrites int    `yaml:"max_writes"`
	MaxTokens int64  `yaml:"max_tokens"`
	MaxWei    uint64 `yaml:"max_wei"`
}

func (c DailyConfig) budget() fleet.Budget {
	return fleet.Budget{MaxWrites: c.MaxWrites, MaxTokens: c.MaxTokens, MaxWei: c.MaxWei}
}

// daemonOptions are how a command runs the daemon.
type daemonOptions struct {
	logger  *slog.Logger
	narrate io.Writer // human-readable narration (the demo); nil: logs only
	verbose bool      // narrate every turn, not only findings and run ends
}

// The runner's names for the daemon's own passes (no persona may take them).
const (
	triageName = fleetdaemon.TriageName
	fixName    = fleetdaemon.FixName
)

// startDaemon loads the personas, builds the tools environment and starts
// the daemon (package daemon) on a snapshot of a's config.
func (a serviceCommands) startDaemon(ctx context.Context, opts daemonOptions) (*fleetdaemon.Daemon, error) {
	snap, err := daemonSnapshot(a.app)
	if err != nil {
		return nil, err
	}
	// The node is dialled lazily: a daemon whose node is down starts
	// degraded (console, /healthz and /metrics serving, no run starting),
	// retries the node and catches up when it answers (daemon.Node).
	env, err := a.buildEnvWith(ctx, opts.logger, true)
	if err != nil {
		return nil, err
	}
	o := fleetdaemon.Options{
		Logger: opts.logger, Narrate: opts.narrate, Verbose: opts.verbose, Env: env, Snapshot: snap,
		Reload: a.reloadSnapshot, Token: a.httpToken, Version: versionString(),
	}
	if cfg, err := (findingsCommands{a.app}).triageConfig(env.FleetKey); err == nil {
		o.Trusted = cfg.Trusted
	}
	return fleetdaemon.Start(ctx, o)
}

// reloadSnapshot re-reads the config file and the personas (SIGHUP) into
// the daemon's next snapshot.
func (a serviceCommands) reloadSnapshot() (*fleetdaemon.Snapshot, error) {
	cfg, err := LoadConfig(a.configPath)
	if err != nil {
		return nil, err
	}
	for _, w := range cfg.Deprecated() {
		a.warnLogger().Warn("reload: config uses a renamed key", "warning", w)
	}
	next := *a.app // the app is a value over its config: copy it, change only the config
	next.cfg = cfg
	snap, err := daemonSnapshot(&next)
	if err != nil {
		return nil, fmt.Errorf("the specialists: %w", err)
	}
	return snap, nil
}

// daemonSnapshot is what the daemon runs on, from a's config: the daemon's
// settings, the work bound to a, and a's personas.
func daemonSnapshot(a *app) (*fleetdaemon.Snapshot, error) {
	ps, err := specialistCommands{a}.loadPersonas()
	if err != nil {
		return nil, err
	}
	return fleetdaemon.NewSnapshot(daemonConfig(a), daemonWork(a), ps), nil
}

// daemonConfig is the daemon's part of a's config.
func daemonConfig(a *app) fleetdaemon.Config {
	dc := a.cfg.Daemon
	return fleetdaemon.Config{
		HTTPAddr: dc.HTTPAddr, MaxConcurrent: dc.MaxConcurrent, Daily: dc.Daily.budget(),
		PollInterval: dc.PollInterval, Confirmations: dc.Confirmations, NoSpecialists: dc.Specialists != nil && !*dc.Specialists,
		TriageEvery: a.cfg.Triage.Every, Fix: a.cfg.Forge.Kind != "", FixEvery: a.cfg.Fixer.Every,
		ChainRPC: a.cfg.Chain.RPC, FleetName: a.cfg.Chain.FleetName,
		DataDir: a.dataDir(), ReportsDir: a.reportsDir(), FuzzDir: a.fuzzDir(), SandboxDir: a.sandboxDir(),
	}
}

// daemonWork binds the daemon's config-bound work to a.
func daemonWork(a *app) fleetdaemon.Work {
	return fleetdaemon.Work{
		Run: specialistCommands{a}.runSpecialist,
		Triage: func(ctx context.Context, fleetPoster *poster.Poster) (int, fleet.Report, error) {
			res, err := findingsCommands{a}.runTriage(ctx, a.resolve(&connFlags{cmd: &cobra.Command{}}), fleetPoster)
			return res.Sync.Read, res.Report, err
		},
		FixStage: func(ctx context.Context, env *fleetEnv, logger *slog.Logger) (*pipeline.Fix, error) {
			return fixCommands{a}.newFixStage(ctx, env, logger)
		},
		Mark: func(ctx context.Context, req console.MarkRequest, user string) (console.MarkResult, error) {
			return consoleMark(ctx, a, req, user)
		},
	}
}

// consoleMark posts a console correction through the `fleetd findings
// mark` path.
func consoleMark(ctx context.Context, a *app, req console.MarkRequest, user string) (console.MarkResult, error) {
	res, _, err := findingsCommands{a}.markEntry(ctx, a.resolve(&connFlags{cmd: &cobra.Command{}}), req, user)
	switch {
	case errors.Is(err, errBadMark):
		return console.MarkResult{}, fmt.Errorf("%w: %v", console.ErrBadRequest, err)
	case err != nil:
		return console.MarkResult{}, fmt.Errorf("%w: %v", console.ErrUnavailable, err)
	case res.Entry == nil: // queued: a correction, keyed as one action, is never a duplicate
		return console.MarkResult{Text: res.Text, Queued: true}, nil
	}
	return console.MarkResult{Index: res.Entry.Index, Tx: res.Entry.Tx, Text: res.Text}, nil
}

// validFleetName is daemon.ValidFleetName, for the config's check.
var validFleetName = fleetdaemon.ValidFleetName
