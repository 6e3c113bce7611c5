package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"time"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/qatools"
	"github.com/qafleet/fleetd/runner"
)

type (
	chainKey   = chain.Key
	chainEntry = chain.Entry
)

var loadKey = chain.LoadKey

// control returns the data dir's dial and kill switch.
func (a *app) control() *fleet.Control { return fleet.NewControl(a.dataDir()) }

// operator names who changes the dial, for the audit log.
func operator() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	if s := os.Getenv("USER"); s != "" {
		return s
	}
	return fmt.Sprintf("uid:%d", os.Getuid())
}

// fleetEnv is everything the tools share, built from the config (runner.Env).
type fleetEnv = runner.Env

// warnLogger is the logger of one-shot commands: JSON lines on stderr,
// warnings and errors only, so that stdout stays the command's output.
func (a *app) warnLogger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// buildEnv wires the tools' environment: a chain client whose write guard
// carries the admin deny-list, the fee cap and the dial hook; the fleet and
// sponsor keys; the target's registry; the poster with its outbox; the
// allowlisted fetcher. It needs target: and chain: in the config.
func (a *app) buildEnv(ctx context.Context, logger *slog.Logger) (*fleetEnv, error) {
	return a.buildEnvWith(ctx, logger, false)
}

// buildEnvWith is buildEnv; lazy dials the node lazily (chain.Options.Lazy):
// the daemon starts while its node is down and waits for it.
func (a *app) buildEnvWith(ctx context.Context, logger *slog.Logger, lazy bool) (*fleetEnv, error) {
	target, err := a.cfg.target()
	if err != nil {
		return nil, err
	}
	if err := target.Validate("target"); err != nil {
		return nil, err
	}
	cc := a.cfg.Chain
	var fleetKey, sponsor *chain.Key
	if cc.FleetKeyFile != "" {
		if fleetKey, err = chain.LoadKey(a.cfg.resolve(cc.FleetKeyFile)); err != nil {
			return nil, err
		}
	}
	if cc.SponsorKeyFile != "" {
		if sponsor, err = chain.LoadKey(a.cfg.resolve(cc.SponsorKeyFile)); err != nil {
			return nil, err
		}
	}
	accounts, err := loadAccounts(target.Auth, a.cfg.resolve)
	if err != nil {
		return nil, err
	}
	var logAddr fleet.Address
	if cc.FeedbackLog != "" {
		logAddr, _ = fleet.ParseAddress(cc.FeedbackLog) // validated at load
	}
	var trusted []fleet.Address
	for _, s := range cc.TrustedSenders {
		addr, _ := fleet.ParseAddress(s) // validated at load
		trusted = append(trusted, addr)
	}
	tc, rc := a.cfg.Tools, a.cfg.Poster
	env, err := runner.NewEnv(ctx, runner.EnvConfig{
		Target: target, Control: a.control(),
		RPC: cc.RPC, ChainID: cc.ChainID, Timeout: time.Duration(max(cc.TimeoutSeconds, 0) * float64(time.Second)), Lazy: lazy,
		FeedbackLog: logAddr, DenyFunctions: cc.DenyFunctions, MaxGasPriceGwei: cc.MaxGasPriceGwei,
		FleetKey: fleetKey, Sponsor: sponsor, Accounts: accounts,
		Limits:       qatools.Limits{CompileTimeout: tc.CompileTimeout, CallTimeout: tc.CallTimeout, MaxReply: tc.MaxBodyBytes, FundWei: tc.FundWei, RequestRate: tc.RequestRate, RequestBurst: tc.RequestBurst, FuzzWorkers: tc.FuzzWorkers},
		FetchTimeout: tc.FetchTimeout,
		FuzzDir:      a.fuzzDir(), OutboxDir: a.outboxDir(), ReporterState: filepath.Join(a.dataDir(), "reporter", "state.json"),
		Trusted: trusted, PerSource: rc.PerSource, Window: rc.Window, DedupeWindow: rc.DedupeWindow,
		Logger: logger,
	})
	if err != nil {
		return nil, err
	}
	if env.HarnessModel, err = a.harnessModel(ctx, logger); err != nil {
		env.Close()
		return nil, err
	}
	return env, nil
}
