package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at link time (-ldflags "-X main.version=v1.2.3"); a plain
// build reports the module version or "devel".
var version = ""

// exitError carries a specific exit status out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// app is the state shared by every command of one invocation, and its
// methods are the core every command group uses: the data dir and its paths
// (paths.go), the node connection (conn.go), the fleet environment, the dial
// and the warning logger (env.go), printJSON. Each command group is a type
// of its own over it, in its own files: chainCommands (cmd_chain.go),
// findingsCommands (cmd_findings.go), specialistCommands (cmd_probe.go),
// serviceCommands (cmd_run.go) and fixCommands (cmd_fix.go). A group calls
// another's method through that group's type (fixCommands{a.app}.prLinks()),
// so the dependencies between files show where they are.
type app struct {
	reload         <-chan struct{} // SIGHUP; nil when not wired (tests)
	stdin          io.Reader
	stdout, stderr io.Writer
	configPath     string
	dataDirFlag    string
	cfg            *Config
	// cfgErr is the error loading the config, kept for commands marked
	// lazyConfig (doctor), which report it instead of failing before they run.
	cfgErr error
}

// lazyConfig marks a command (in its Annotations) that runs with the default
// config when --config does not load, and reports the error itself.
const lazyConfig = "fleetd/lazy-config"

// Main runs the fleetd CLI with args (without the program name) and returns
// the process exit status. It never calls os.Exit, so tests can run it.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return mainWithReload(ctx, args, stdin, stdout, stderr, nil)
}

// mainWithReload is Main with a channel of reload requests (SIGHUP).
func mainWithReload(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, reload <-chan struct{}) int {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr, reload: reload}
	root := a.rootCmd()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, "fleetd:", err)
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return 1
}

func (a *app) rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "fleetd",
		Short:         "fleetd runs an autonomous QA fleet against an on-chain app platform",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := LoadConfig(a.configPath)
			if err != nil {
				if _, lazy := cmd.Annotations[lazyConfig]; !lazy {
					return &exitError{code: exitConfig, err: err}
				}
				a.cfgErr, cfg = err, &Config{}
			}
			for _, w := range cfg.Deprecated() {
				fmt.Fprintf(a.stderr, "fleetd: warning: config %s: %s\n", cfg.path, w)
			}
			a.cfg = cfg
			return nil
		},
	}
	root.PersistentFlags().StringVar(&a.configPath, "config", "", "config file (YAML; see configs/fleetd.example.yaml)")
	root.PersistentFlags().StringVar(&a.dataDirFlag, "data-dir", "", "data directory (default: the config's data_dir, else ./"+DefaultDataDir+")")
	// Each command group is a type of its own over the shared app: chains
	// (cmd_chain.go), findings (cmd_findings.go), probes (cmd_probe.go),
	// service (cmd_run.go) and fix (cmd_fix.go).
	chains, findings, probes := chainCommands{a}, findingsCommands{a}, specialistCommands{a}
	service, fix := serviceCommands{a}, fixCommands{a}
	root.AddCommand(a.versionCmd(), chains.chainCmd(), findings.findingsCmd(), chains.keysCmd(), a.configCmd(),
		probes.toolsCmd(), probes.toolCmd(), service.dialCmd(), probes.specialistsCmd(), probes.runsCmd(), probes.probeCmd(), chains.testbedCmd(), service.runCmd(), service.demoCmd(), findings.triageCmd(), findings.reportCmd(), service.doctorCmd(), service.httpTokenCmd(), service.reconcileCmd(), probes.mcpCmd())
	root.AddCommand(service.pauseCmds()...)
	root.AddCommand(fix.fixCmd(), fix.prsCmd()) // the fix stage: cmd_fix.go
	root.AddCommand(probes.checkCmd())          // the CI gate: cmd_check.go
	return root
}

// printJSON writes v as one JSON line.
func (a *app) printJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(a.stdout, "%s\n", b)
	return err
}

func versionString() string {
	v, rev := version, ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v == "" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				rev = s.Value[:12]
			}
		}
		if v == "" || v == "(devel)" {
			v = "devel"
		}
		if rev != "" {
			v += " " + rev
		}
		return fmt.Sprintf("fleetd %s (%s)", v, bi.GoVersion)
	}
	return "fleetd " + v
}

func (a *app) versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the fleetd version",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintln(a.stdout, versionString())
			return err
		},
	}
}

func (a *app) configCmd() *cobra.Command {
	c := &cobra.Command{Use: "config", Short: "Inspect the configuration"}
	c.AddCommand(&cobra.Command{
		Use:   "validate",
		Short: "Check the config file; errors name the line or field",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if a.configPath == "" {
				return errors.New("config validate: no --config given")
			}
			abs, _ := filepath.Abs(a.configPath)
			_, err := fmt.Fprintf(a.stdout, "%s: ok\n", abs)
			return err
		},
	})
	return c
}
