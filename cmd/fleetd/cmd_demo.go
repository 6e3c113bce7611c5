package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/qafleet/fleetd/fixtures/testbed"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/triage"
	"github.com/spf13/cobra"
)

// demoTriggers make every specialist fire within seconds of the demo start.
var demoTriggers = map[string]fleet.Trigger{
	"smoke":    {Every: 20 * time.Second},
	"security": {Every: 30 * time.Second},
	"fuzz":     {Continuous: true},
	"ux":       {Every: 25 * time.Second},
	"perf":     {Every: 40 * time.Second},
}

func (a serviceCommands) demoCmd() *cobra.Command {
	var (
		dur     time.Duration
		dial    string
		verbose bool
	)
	cmd := &cobra.Command{
		Use:   "demo [--for DURATION] [--dial RUNG] [--data-dir DIR]",
		Short: "One command: embedded dev chain, the flawed testbed, and the fleet probing it",
		Long: `Starts the embedded dev chain and deploys fleetd's feedback log, starts the
deliberately flawed testbed platform, writes the full config it runs with to
<data-dir>/fleetd.yaml (point other commands at it with --config while the
demo runs), and runs the daemon with every specialist firing every few
seconds, narrating runs and findings. With --for it stops after that long
and prints what the fleet found. The chain is ephemeral and ends with
the demo, but what it held does not: afterwards, findings, report, triage
and runs with --config <data-dir>/fleetd.yaml read what triage stored in
the data dir (saying so on stderr).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if dur > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, dur)
				defer cancel()
			}
			dataDir, _ := filepath.Abs(a.dataDir())
			out := a.stdout
			fmt.Fprintf(out, "fleetd demo: data dir %s\n", dataDir)
			dn, err := testbed.StartDevnet(ctx, dataDir, "127.0.0.1:0")
			if err != nil {
				return fmt.Errorf("demo: %w", err)
			}
			defer dn.Close()
			fmt.Fprintf(out, "  chain    %s (chain id %d), feedback log %s\n", dn.Info.RPC, dn.Info.ChainID, dn.Info.FeedbackLog)
			self, err := os.Executable()
			if err != nil {
				return err
			}
			logger := a.warnLogger()
			tb, err := testbed.Serve(ctx, testbed.Config{
				RPC: dn.Info.RPC, Sponsor: dn.Sponsor, Compiler: []string{self, "testbed", "compile", "{src}"},
				Login:     true, // a Sign-In with Ethereum login: the demo shows a signed-in finding (issue 33)
				CorpusDir: filepath.Join(dataDir, "testbed", "corpus"),
				// The testbed logs its planted panics as warnings; the demo shows findings instead.
				Logger: slog.New(slog.NewJSONHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelError})),
			})
			if err != nil {
				return fmt.Errorf("demo: testbed: %w", err)
			}
			defer tb.Close()
			fmt.Fprintf(out, "  testbed  %s (registry %s; its planted flaws: fixtures/testbed/README.md)\n", tb.URL(), tb.Registry())
			cfgPath, err := writeDemoConfig(dataDir, dn.Info, tb, demoTriggers, nil)
			if err != nil {
				return err
			}
			if d, _ := fleet.ParseDial(dial); dial != "" && d == fleet.Propose {
				if _, err := (fixCommands{a.app}).demoFixStage(ctx, out, dataDir, cfgPath); err != nil { // cmd_fix_demo.go
					return err
				}
			}
			if a.cfg, err = LoadConfig(cfgPath); err != nil {
				return fmt.Errorf("demo config: %w", err)
			}
			a.configPath = cfgPath
			if dial != "" {
				d, err := fleet.ParseDial(dial)
				if err != nil {
					return err
				}
				if _, err := a.control().SetDial(d, "fleetd demo --dial "+dial, operator()); err != nil {
					return err
				}
			}
			current, _ := a.control().Dial()
			fmt.Fprintf(out, "  config   %s\n  dial     %s", cfgPath, current)
			if current == fleet.Observe {
				fmt.Fprint(out, " (read-only probes; --dial exercise lets the fleet mint names, publish and call)")
			}
			fmt.Fprintln(out)
			d, err := a.startDaemon(ctx, daemonOptions{logger: logger, narrate: out, verbose: verbose})
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "  console  %s (pages are read-only; log in with the token from: %s http-token --config %s)\n", d.ConsoleURL(), selfCommand(), cfgPath)
			fmt.Fprintf(out, "  status   http://%s/api/status\n\n", d.HTTPAddr())
			<-ctx.Done()
			fmt.Fprintln(out, "\nstopping: runs finish their cleanup…")
			if err := d.Shutdown(30 * time.Second); err != nil {
				fmt.Fprintln(a.stderr, "fleetd demo: shutdown:", err)
			}
			fmt.Fprintln(out, d.ShareLine()) // every specialist's turns (package daemon)
			err = a.demoSummary(context.WithoutCancel(cmd.Context()))
			fixCommands{a.app}.demoFixSummary() // cmd_fix_demo.go
			return err
		},
	}
	cmd.Flags().DurationVar(&dur, "for", 0, "stop after this long and print the findings (default: until interrupted)")
	cmd.Flags().StringVar(&dial, "dial", "", "set the autonomy dial first: observe, exercise or propose")
	cmd.Flags().BoolVar(&verbose, "verbose", false, "narrate every turn, not only findings and run ends")
	return cmd
}

// writeDemoConfig writes the demo's personas and config into dataDir
// (testbed.WriteDemoConfig) for the dev chain dn, trusting the fleet key.
func writeDemoConfig(dataDir string, dn testbed.DevnetInfo, tb *testbed.Testbed, trig map[string]fleet.Trigger, budgets map[string]fleet.Budget) (string, error) {
	return testbed.WriteDemoConfig(dataDir, dn.DemoChain(), tb.Target(), trig, budgets)
}

// demoSummary triages the log and prints the ranked health report.
func (a serviceCommands) demoSummary(ctx context.Context) error {
	res, err := findingsCommands{a.app}.runTriage(ctx, a.resolve(&connFlags{cmd: &cobra.Command{}}), nil)
	if err != nil {
		return fmt.Errorf("triage: %w", err)
	}
	triage.AttachPRs(&res.Report, fixCommands{a.app}.prLinks()) // each cluster's fix-stage PR (cmd_fix.go)
	fmt.Fprintf(a.stdout, "\nhealth report (markdown in %s):\n", filepath.Join(a.reportsDir(), "latest.md"))
	if len(res.Report.Clusters) == 0 {
		fmt.Fprintln(a.stdout, "  no findings yet: run longer, or raise the dial with --dial exercise")
	} else if err := triage.Render(a.stdout, res.Report, triage.FormatTable, 20, time.Now()); err != nil {
		return err
	}
	self := selfCommand()
	if path, err := (findingsCommands{a.app}).writeHTMLReport(res.Report); err != nil {
		fmt.Fprintln(a.stderr, "fleetd demo: html report:", err)
	} else {
		fmt.Fprintf(a.stdout, "\nthe same report as one HTML file (open it in a browser, send it to anyone): %s\n", path)
	}
	fmt.Fprintf(a.stdout, "\nlook further (the chain is gone; these read what the demo left in %s):\n", a.dataDir())
	fmt.Fprintf(a.stdout, "  %s findings --config %s     every entry on the log, parsed\n", self, a.configPath)
	fmt.Fprintf(a.stdout, "  %s report --config %s       the ranked report (--format md for Markdown)\n", self, a.configPath)
	fmt.Fprintf(a.stdout, "  %s runs --config %s         the runs; runs show ID for one run's timeline\n", self, a.configPath)
	return nil
}

// selfCommand is how the user can run this binary again: "go run
// ./cmd/fleetd" when it was built by go run (a temporary file), else its path
// as a bare name when it is the one on PATH.
func selfCommand() string {
	exe, err := os.Executable()
	if err != nil || strings.Contains(exe, "go-build") {
		return "go run ./cmd/fleetd"
	}
	if p, err := exec.LookPath(filepath.Base(exe)); err == nil && p == exe {
		return filepath.Base(exe)
	}
	return exe
}
