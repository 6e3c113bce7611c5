package main

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"path/filepath"
	"time"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/chain/devchain"
	"github.com/qafleet/fleetd/fleet"
	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"
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

// devnetInfo is the one JSON line `fleetd chain devnet` prints.
type devnetInfo struct {
	RPC            string `json:"rpc"`
	ChainID        uint64 `json:"chain_id"`
	FeedbackLog    string `json:"feedback_log"`
	SponsorKeyFile string `json:"sponsor_key_file"`
	FleetKeyFile   string `json:"fleet_key_file"`
	Config         string `json:"config"`
}

// sponsorFunds is what the dev chain's genesis gives the sponsor: plenty.
var sponsorFunds = new(big.Int).Mul(big.NewInt(1_000_000), new(big.Int).Exp(big.NewInt(10), big.NewInt(18), nil))

// devnet is a running embedded chain with fleetd's log deployed.
type devnet struct {
	chain   *devchain.Chain
	client  *chain.Client
	log     *chain.FeedbackLog
	sponsor *chain.Key
	info    devnetInfo
}

func (d *devnet) Close() {
	d.client.Close()
	d.chain.Close()
}

// startDevnet starts the embedded chain with the data dir's sponsor key
// funded (creating the sponsor and fleet keys if absent), deploys the
// FeedbackLog and writes a config for other commands to <dataDir>/devnet.yaml.
func startDevnet(ctx context.Context, dataDir, addr string) (*devnet, error) {
	keys := filepath.Join(dataDir, "keys")
	sponsorFile, fleetFile := filepath.Join(keys, "sponsor.key"), filepath.Join(keys, "fleet.key")
	sponsor, _, err := chain.LoadOrCreateKey(sponsorFile)
	if err != nil {
		return nil, err
	}
	if _, _, err := chain.LoadOrCreateKey(fleetFile); err != nil {
		return nil, err
	}
	ch, err := devchain.Start(ctx, devchain.Config{
		Addr:   addr,
		Funded: []devchain.Account{{Address: sponsor.Address(), Wei: sponsorFunds}},
		// State in a temporary pebble database, off the Go heap: reading
		// a 100k-entry log takes a third less time (BENCHMARKS.md, issue 14).
		OnDisk: true,
	})
	if err != nil {
		return nil, err
	}
	cl, err := chain.Dial(ctx, ch.URL(), chain.Options{ChainID: ch.ChainID()})
	if err != nil {
		ch.Close()
		return nil, err
	}
	log, _, err := cl.DeployFeedbackLog(ctx, sponsor)
	if err != nil {
		cl.Close()
		ch.Close()
		return nil, err
	}
	d := &devnet{chain: ch, client: cl, log: log, sponsor: sponsor}
	d.info = devnetInfo{RPC: ch.URL(), ChainID: ch.ChainID(), FeedbackLog: log.Address().String(),
		SponsorKeyFile: abs(sponsorFile), FleetKeyFile: abs(fleetFile), Config: abs(filepath.Join(dataDir, "devnet.yaml"))}
	if err := writeDevnetConfig(d.info, dataDir); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

func abs(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// writeDevnetConfig writes a config pointing at the running devnet, replacing
// any previous one atomically (the chain is ephemeral, so old ones are stale).
func writeDevnetConfig(info devnetInfo, dataDir string) error {
	// Only what devnet knows; other sections keep their defaults.
	cfg := struct {
		DataDir string         `yaml:"data_dir"`
		Chain   map[string]any `yaml:"chain"`
	}{abs(dataDir), map[string]any{
		"rpc": info.RPC, "chain_id": info.ChainID, "feedback_log": info.FeedbackLog,
		"fleet_key_file": info.FleetKeyFile, "sponsor_key_file": info.SponsorKeyFile,
	}}
	b, err := yaml.Marshal(cfg)
	if err != nil {
		return err
	}
	b = append([]byte("# Written by `fleetd chain devnet`; valid while that process runs.\n"), b...)
	return fleet.WriteFileAtomic(info.Config, b, 0o600)
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
			d, err := startDevnet(ctx, a.dataDir(), addr)
			if err != nil {
				return fmt.Errorf("devnet: %w", err)
			}
			defer d.Close()
			if err := a.printJSON(d.info); err != nil {
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
