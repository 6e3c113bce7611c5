package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fixtures/testbed"
	"github.com/spf13/cobra"
)

// chainCommands set up the chain side: `fleetd chain devnet` and
// `fleetd chain deploy` (cmd_chain.go), `fleetd keys` (cmd_keys.go) and
// `fleetd testbed` (cmd_testbed.go).
type chainCommands struct{ *app }

func (a chainCommands) chainCmd() *cobra.Command {
	c := &cobra.Command{Use: "chain", Short: "Run a dev chain or deploy fleetd's contracts"}
	c.AddCommand(a.devnetCmd(), a.deployCmd())
	return c
}

// abs is p made absolute (p itself when that fails).
func abs(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

func (a chainCommands) devnetCmd() *cobra.Command {
	var addr string
	cmd := &cobra.Command{
		Use:   "devnet",
		Short: "Run the embedded dev chain (go-ethereum, simulated beacon) on loopback with the FeedbackLog deployed",
		Long: `Starts go-ethereum's own node with the simulated beacon (the machinery behind
geth --dev), serving JSON-RPC over HTTP on 127.0.0.1, mining a block as soon as
a transaction arrives, with today's mainnet gas rules. The data dir's sponsor
key (created if absent) is funded; the fleet key (created if absent) holds
nothing. Prints one JSON line describing the chain, writes a config for other
commands to <data-dir>/devnet.yaml, and runs until interrupted. The chain is
ephemeral: its database is a temporary directory, removed when the process
exits (or, after a crash, by the next chain that starts).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			d, err := testbed.StartDevnet(ctx, a.dataDir(), addr)
			if err != nil {
				return fmt.Errorf("devnet: %w", err)
			}
			defer d.Close()
			if err := a.printJSON(d.Info); err != nil {
				return err
			}
			<-ctx.Done()
			return nil
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:0", "loopback host:port for JSON-RPC (port 0 picks a free one)")
	return cmd
}

func (a chainCommands) deployCmd() *cobra.Command {
	var f *connFlags
	var version int
	cmd := &cobra.Command{
		Use:   "deploy --rpc URL --key-file F",
		Short: "Deploy a new FeedbackLog to any node, paid by the key in F",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			c := a.resolve(f)
			keyFile := c.keyFile
			if !f.cmd.Flags().Changed("key-file") && a.cfg.Chain.SponsorKeyFile != "" {
				keyFile = a.cfg.resolve(a.cfg.Chain.SponsorKeyFile) // the sponsor pays by default
			}
			if keyFile == "" {
				return errors.New("deploy: pass --key-file (the deployer pays gas)")
			}
			key, err := chain.LoadKey(keyFile)
			if err != nil {
				return err
			}
			cl, err := a.dial(ctx, c)
			if err != nil {
				return err
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
			defer cancel()
			deploy := cl.DeployFeedbackLog
			switch version {
			case 1:
			case 2:
				deploy = cl.DeployFeedbackLogV2 // texts in events: a third of the gas per finding
			default:
				return fmt.Errorf("deploy: --version %d: want 1 or 2", version)
			}
			log, r, err := deploy(ctx, key)
			if err != nil {
				return err
			}
			return a.printJSON(map[string]any{"feedback_log": log.Address().String(), "version": version, "chain_id": cl.ChainID(), "tx": r.Tx, "block": r.Block, "gas_used": r.GasUsed})
		},
	}
	f = addConnFlags(cmd, "rpc", "chain-id", "key-file")
	cmd.Flags().IntVar(&version, "version", 1, "FeedbackLog version: 1 (texts in storage) or 2 (texts in events, hashes in storage; docs/architecture.md)")
	return cmd
}
