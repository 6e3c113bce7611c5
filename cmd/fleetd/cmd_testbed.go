package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/qafleet/fleetd/fixtures/testbed"
	"github.com/qafleet/fleetd/fixtures/testbed/compiler"
	"github.com/spf13/cobra"
)

func (a chainCommands) testbedCmd() *cobra.Command {
	c := &cobra.Command{Use: "testbed", Short: "The deliberately flawed sample platform the demo and tests probe"}
	var f *connFlags
	var addr string
	serve := &cobra.Command{
		Use:   "serve --rpc URL --sponsor-key-file F",
		Short: "Deploy the testbed's registry to a chain, serve its web side, and print a ready target: section",
		Long: `Deploys the testbed's (flawed) name registry with the sponsor key as owner,
registers its public names, serves faces, the agent-call endpoint, llms.txt and
skill.md on loopback, and prints one JSON line {"target": {...}} to paste into
a config's target: section, and writes <data-dir>/testbed.yaml: the chain
settings it was given (from --config, e.g. the devnet.yaml that fleetd chain
devnet writes, or the flags) and that target, a complete config for every
other command. Every path in both is absolute. Its compiler is this binary:
fleetd testbed compile {src}. Runs until interrupted. fixtures/testbed/README.md lists
the planted flaws.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			conn := a.resolve(f)
			if conn.rpc == "" || conn.sponsorKeyFile == "" {
				return fmt.Errorf("testbed serve: --rpc and --sponsor-key-file are required")
			}
			self, err := os.Executable()
			if err != nil {
				return err
			}
			tb, err := testbed.Serve(ctx, testbed.Config{
				RPC: conn.rpc, ChainID: conn.chainID, SponsorKeyFile: conn.sponsorKeyFile, Addr: addr,
				Compiler:  []string{self, "testbed", "compile", "{src}"},
				CorpusDir: filepath.Join(a.dataDir(), "testbed", "corpus"),
				Logger:    a.warnLogger(),
			})
			if err != nil {
				return err
			}
			defer tb.Close()
			line, err := tb.TargetJSON()
			if err != nil {
				return err
			}
			cfgPath, err := a.writeTestbedConfig(conn, tb.Target())
			if err != nil {
				return err
			}
			if _, err := fmt.Fprintf(a.stdout, "%s\n", line); err != nil {
				return err
			}
			fmt.Fprintf(a.stderr, "fleetd: wrote %s: this chain and testbed as one config (check it: fleetd doctor --config %s)\n", cfgPath, cfgPath)
			<-ctx.Done()
			return nil
		},
	}
	f = addConnFlags(serve, "rpc", "chain-id", "sponsor-key-file")
	serve.Flags().StringVar(&addr, "addr", "127.0.0.1:0", "loopback host:port for the testbed's web side")
	compile := &cobra.Command{
		Use:                "compile [-hex] FILE",
		Short:              "The testbed's compiler for its tiny language (writes the module to stdout)",
		DisableFlagParsing: true,
		RunE: func(_ *cobra.Command, args []string) error {
			if code := compiler.Main(args, a.stdout, a.stderr); code != 0 {
				return &exitError{code: code, err: fmt.Errorf("compile failed (exit %d)", code)}
			}
			return nil
		},
	}
	c.AddCommand(serve, compile)
	return c
}

// writeTestbedConfig writes <data-dir>/testbed.yaml (testbed.WriteServeConfig):
// the connection it was started with (flags over the config) and the
// testbed's target, and returns its path.
func (a chainCommands) writeTestbedConfig(c conn, target testbed.TargetConfig) (string, error) {
	ch := testbed.Chain{RPC: c.rpc, ChainID: c.chainID, FeedbackLog: c.feedbackLog, FleetKeyFile: c.keyFile,
		SponsorKeyFile: c.sponsorKeyFile, TrustedSenders: a.cfg.Chain.TrustedSenders}
	return testbed.WriteServeConfig(a.dataDir(), ch, target)
}
