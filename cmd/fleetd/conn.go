package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/runner"
	"github.com/spf13/cobra"
)

// connFlags are the connection settings a command may take on its command
// line; each one it sets wins over the config file's chain: section.
type connFlags struct {
	rpc, feedbackLog, keyFile, sponsorKeyFile string
	chainID                                   uint64
	cmd                                       *cobra.Command
}

// addConnFlags registers the named connection flags on cmd.
func addConnFlags(cmd *cobra.Command, names ...string) *connFlags {
	f := &connFlags{cmd: cmd}
	for _, n := range names {
		switch n {
		case "rpc":
			cmd.Flags().StringVar(&f.rpc, "rpc", "", "JSON-RPC URL of the node (config: chain.rpc)")
		case "chain-id":
			cmd.Flags().Uint64Var(&f.chainID, "chain-id", 0, "expected chain id; 0 accepts any (config: chain.chain_id)")
		case "feedback-log":
			cmd.Flags().StringVar(&f.feedbackLog, "feedback-log", "", "FeedbackLog contract address (config: chain.feedback_log)")
		case "key-file":
			cmd.Flags().StringVar(&f.keyFile, "key-file", "", "signing key file (config: chain.fleet_key_file)")
		case "sponsor-key-file":
			cmd.Flags().StringVar(&f.sponsorKeyFile, "sponsor-key-file", "", "key file of the sponsor that pays gas (config: chain.sponsor_key_file)")
		default:
			panic("unknown connection flag " + n)
		}
	}
	return f
}

// pick returns the flag value if the flag was set, else the config value.
func (f *connFlags) pick(flag, flagVal, cfgVal string) string {
	if f.cmd.Flags().Lookup(flag) != nil && f.cmd.Flags().Changed(flag) {
		return flagVal
	}
	return cfgVal
}

type conn struct {
	rpc            string
	chainID        uint64
	feedbackLog    string
	keyFile        string
	sponsorKeyFile string
}

// resolve merges flags over the config.
func (a *app) resolve(f *connFlags) conn {
	cc := a.cfg.Chain
	c := conn{
		rpc:            f.pick("rpc", f.rpc, cc.RPC),
		feedbackLog:    f.pick("feedback-log", f.feedbackLog, cc.FeedbackLog),
		keyFile:        f.pick("key-file", f.keyFile, a.cfg.resolve(cc.FleetKeyFile)),
		sponsorKeyFile: f.pick("sponsor-key-file", f.sponsorKeyFile, a.cfg.resolve(cc.SponsorKeyFile)),
		chainID:        cc.ChainID,
	}
	if f.cmd.Flags().Lookup("chain-id") != nil && f.cmd.Flags().Changed("chain-id") {
		c.chainID = f.chainID
	}
	return c
}

// dial connects with the configured guard settings.
func (a *app) dial(ctx context.Context, c conn) (*chain.Client, error) {
	if c.rpc == "" {
		return nil, errors.New("no RPC URL: pass --rpc or set chain.rpc in the config")
	}
	cc := a.cfg.Chain
	guard, err := runner.NewGuard(cc.DenyFunctions, cc.MaxGasPriceGwei)
	if err != nil {
		return nil, fmt.Errorf("chain.deny_functions: %w", err)
	}
	opts := chain.Options{ChainID: c.chainID, Guard: guard}
	if cc.TimeoutSeconds > 0 {
		opts.Timeout = time.Duration(cc.TimeoutSeconds * float64(time.Second))
	}
	return chain.Dial(ctx, c.rpc, opts)
}

// feedbackLog dials and returns the configured log, checking code exists there.
func (a *app) feedbackLog(ctx context.Context, c conn) (*chain.Client, *chain.FeedbackLog, error) {
	if c.feedbackLog == "" {
		return nil, nil, errors.New("no feedback log address: pass --feedback-log or set chain.feedback_log in the config")
	}
	addr, err := fleet.ParseAddress(c.feedbackLog)
	if err != nil {
		return nil, nil, fmt.Errorf("--feedback-log: %w", err)
	}
	cl, err := a.dial(ctx, c)
	if err != nil {
		return nil, nil, err
	}
	l := cl.FeedbackLog(addr)
	if err := l.CheckCode(ctx); err != nil {
		cl.Close()
		return nil, nil, err
	}
	return cl, l, nil
}
