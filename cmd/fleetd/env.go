package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/big"
	"net/http"
	"os"
	"os/user"
	"path/filepath"
	"time"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/poster"
	"github.com/qafleet/fleetd/qatools"
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

// fleetEnv is everything the tools share, built from the config.
type fleetEnv struct {
	*qatools.Env
	control *fleet.Control
	client  *chain.Client
	// poster is the fleet identity's road to the log (<data_dir>/outbox):
	// qa_report's Env.Reporter, the fix stage's records; nil without a
	// fleet key.
	poster *poster.Poster
}

func (e *fleetEnv) Close() {
	if e.client != nil {
		e.client.Close()
	}
}

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
	ctl := a.control()
	var logAddr fleet.Address
	if cc.FeedbackLog != "" {
		logAddr, _ = fleet.ParseAddress(cc.FeedbackLog) // validated at load
	}
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
	gc := chain.GuardConfig{DenyFunctions: append(cc.DenyFunctions, target.AdminFunctions...)}
	if cc.MaxGasPriceGwei > 0 {
		gc.MaxFeePerGas, _ = new(big.Float).Mul(big.NewFloat(cc.MaxGasPriceGwei), big.NewFloat(1e9)).Int(nil)
	}
	guard, err := chain.NewGuard(gc)
	if err != nil {
		return nil, fmt.Errorf("chain.deny_functions or target.admin_functions: %w", err)
	}
	var sponsorAddr fleet.Address
	if sponsor != nil {
		sponsorAddr = sponsor.Address()
	}
	guard.AddHook(qatools.DialHook(ctl, logAddr, sponsorAddr))
	if cc.RPC == "" {
		return nil, errors.New("no RPC URL: set chain.rpc in the config")
	}
	opts := chain.Options{ChainID: cc.ChainID, Guard: guard, Logger: logger, Lazy: lazy}
	if cc.TimeoutSeconds > 0 {
		opts.Timeout = time.Duration(cc.TimeoutSeconds * float64(time.Second))
	}
	client, err := chain.Dial(ctx, cc.RPC, opts)
	if err != nil {
		return nil, err
	}
	e := &fleetEnv{control: ctl, client: client}
	regAddr, _ := fleet.ParseAddress(target.Registry)
	tc := a.cfg.Tools
	env := &qatools.Env{
		Target: target, Chain: client, Registry: client.Registry(regAddr),
		FleetKey: fleetKey, Sponsor: sponsor, Logger: logger, Accounts: accounts,
		Call:    &http.Client{Timeout: max(tc.CallTimeout, 15*time.Second)},
		Limits:  qatools.Limits{CompileTimeout: tc.CompileTimeout, CallTimeout: tc.CallTimeout, MaxReply: tc.MaxBodyBytes, FundWei: tc.FundWei, RequestRate: tc.RequestRate, RequestBurst: tc.RequestBurst, FuzzWorkers: tc.FuzzWorkers},
		FuzzDir: a.fuzzDir(),
	}
	if env.HarnessModel, err = a.harnessModel(ctx, logger); err != nil {
		client.Close()
		return nil, err
	}
	if !logAddr.IsZero() {
		env.Log = client.FeedbackLog(logAddr)
	}
	// One pacer for the tools and the rendering crawl's browser, so a
	// host's rate is shared by both (the tools' defaults).
	rate, burst := tc.RequestRate, tc.RequestBurst
	if rate == 0 {
		rate = qatools.DefaultRequestRate
	}
	if burst <= 0 {
		burst = max(1, int(math.Ceil(rate)))
	}
	env.Pacer = qatools.NewPacer(rate, burst)
	allow, err := qatools.NewAllowlist(target.FetchAllow)
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("target.fetch_allow: %w", err)
	}
	fetchTimeout, maxBody := tc.FetchTimeout, tc.MaxBodyBytes
	if fetchTimeout <= 0 {
		fetchTimeout = 10 * time.Second
	}
	if maxBody <= 0 {
		maxBody = 64 << 10
	}
	env.Fetcher = qatools.NewFetcher(allow, fetchTimeout, maxBody)
	if fleetKey != nil {
		rc := a.cfg.Report
		var trusted []fleet.Address
		for _, s := range cc.TrustedSenders {
			addr, _ := fleet.ParseAddress(s) // validated at load
			trusted = append(trusted, addr)
		}
		e.poster, err = poster.New(poster.Config{
			Log: env.Log, Identity: fleetKey, Sponsor: sponsor, OutboxDir: a.outboxDir(),
			StateFile: filepath.Join(a.dataDir(), "reporter", "state.json"), Trusted: trusted,
			PerSource: rc.PerSource, Window: rc.Window, DedupeWindow: rc.DedupeWindow, Logger: logger,
		})
		if err != nil {
			client.Close()
			return nil, err
		}
		env.Reporter = e.poster
	}
	e.Env = env
	return e, nil
}
