package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/big"
	"net/http"
	"slices"
	"time"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/poster"
	"github.com/qafleet/fleetd/qatools"
)

// EnvConfig is what a run's Env is built from: the config's values with
// the key files already loaded (cmd/fleetd's buildEnv reads them).
type EnvConfig struct {
	// Target is the validated target: section.
	Target fleet.Target
	// Control is the data dir's dial and kill switch.
	Control *fleet.Control
	// RPC is the node's JSON-RPC URL; ChainID the expected chain id (0:
	// any); Timeout bounds one node call (0: chain's default); Lazy dials
	// the node lazily (chain.Options.Lazy: the daemon starts while its
	// node is down).
	RPC     string
	ChainID uint64
	Timeout time.Duration
	Lazy    bool
	// FeedbackLog is the log's address (zero: none).
	FeedbackLog fleet.Address
	// DenyFunctions (chain.deny_functions) join the target's admin
	// functions on the write guard's deny-list; MaxGasPriceGwei caps the
	// fee (0: no cap).
	DenyFunctions   []string
	MaxGasPriceGwei float64
	// FleetKey and Sponsor are the fleet identity and the sponsor paying
	// its gas (nil: none); Accounts the operators' test accounts by role.
	FleetKey, Sponsor *chain.Key
	Accounts          map[string]*chain.Key
	// Limits are the tools' (tools:); FetchTimeout bounds one fetch (0:
	// 10s).
	Limits       qatools.Limits
	FetchTimeout time.Duration
	// FuzzDir is the fuzz engines' state; OutboxDir and ReporterState the
	// fleet poster's outbox and state file.
	FuzzDir, OutboxDir, ReporterState string
	// Trusted are the senders triage trusts (chain.trusted_senders);
	// PerSource, Window and DedupeWindow the reporter's limits (report:).
	Trusted              []fleet.Address
	PerSource            int
	Window, DedupeWindow time.Duration
	Logger               *slog.Logger
}

// NewEnv wires the tools' environment: a chain client whose write guard
// carries the admin deny-list, the fee cap and the dial hook; the fleet and
// sponsor keys; the target's registry; the poster with its outbox (with a
// fleet key); one pacer for the tools and the rendering crawl; the
// allowlisted fetcher.
func NewEnv(ctx context.Context, c EnvConfig) (*Env, error) {
	guard, err := NewGuard(slices.Concat(c.DenyFunctions, c.Target.AdminFunctions), c.MaxGasPriceGwei)
	if err != nil {
		return nil, fmt.Errorf("chain.deny_functions or target.admin_functions: %w", err)
	}
	var sponsorAddr fleet.Address
	if c.Sponsor != nil {
		sponsorAddr = c.Sponsor.Address()
	}
	guard.AddHook(qatools.DialHook(c.Control, c.FeedbackLog, sponsorAddr))
	if c.RPC == "" {
		return nil, errors.New("no RPC URL: set chain.rpc in the config")
	}
	client, err := chain.Dial(ctx, c.RPC, chain.Options{ChainID: c.ChainID, Guard: guard, Logger: c.Logger, Lazy: c.Lazy, Timeout: c.Timeout})
	if err != nil {
		return nil, err
	}
	e := &Env{Control: c.Control, Client: client}
	regAddr, _ := fleet.ParseAddress(c.Target.Registry)
	lim := c.Limits
	env := &qatools.Env{
		Target: c.Target, Chain: client, Registry: client.Registry(regAddr),
		FleetKey: c.FleetKey, Sponsor: c.Sponsor, Logger: c.Logger, Accounts: c.Accounts,
		Call:    &http.Client{Timeout: max(lim.CallTimeout, 15*time.Second)},
		Limits:  lim,
		FuzzDir: c.FuzzDir,
	}
	if !c.FeedbackLog.IsZero() {
		env.Log = client.FeedbackLog(c.FeedbackLog)
	}
	// One pacer for the tools and the rendering crawl's browser, so a
	// host's rate is shared by both (the tools' defaults).
	rate, burst := lim.RequestRate, lim.RequestBurst
	if rate == 0 {
		rate = qatools.DefaultRequestRate
	}
	if burst <= 0 {
		burst = max(1, int(math.Ceil(rate)))
	}
	env.Pacer = qatools.NewPacer(rate, burst)
	allow, err := qatools.NewAllowlist(c.Target.FetchAllow)
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("target.fetch_allow: %w", err)
	}
	fetchTimeout, maxBody := c.FetchTimeout, lim.MaxReply
	if fetchTimeout <= 0 {
		fetchTimeout = 10 * time.Second
	}
	if maxBody <= 0 {
		maxBody = 64 << 10
	}
	env.Fetcher = qatools.NewFetcher(allow, fetchTimeout, maxBody)
	if c.FleetKey != nil {
		e.Poster, err = poster.New(poster.Config{
			Log: env.Log, Identity: c.FleetKey, Sponsor: c.Sponsor, OutboxDir: c.OutboxDir,
			StateFile: c.ReporterState, Trusted: c.Trusted,
			PerSource: c.PerSource, Window: c.Window, DedupeWindow: c.DedupeWindow, Logger: c.Logger,
		})
		if err != nil {
			client.Close()
			return nil, err
		}
		env.Reporter = e.Poster
	}
	e.Env = env
	return e, nil
}

// NewGuard is the write guard a node connection carries: deny, the
// functions it never calls (beside chain's defaults), and the fee cap
// (maxGasPriceGwei; 0: none).
func NewGuard(deny []string, maxGasPriceGwei float64) (*chain.Guard, error) {
	gc := chain.GuardConfig{DenyFunctions: deny}
	if maxGasPriceGwei > 0 {
		gc.MaxFeePerGas, _ = new(big.Float).Mul(big.NewFloat(maxGasPriceGwei), big.NewFloat(1e9)).Int(nil)
	}
	return chain.NewGuard(gc)
}
