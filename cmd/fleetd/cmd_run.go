package main

import (
	"fmt"
	"log/slog"

	"github.com/qafleet/fleetd/doctor"
	"github.com/spf13/cobra"
)

// serviceCommands run and operate the fleet as a service: `fleetd run` and
// the daemon it starts (cmd_run.go; package daemon, fed by daemon.go), `fleetd demo`
// (cmd_demo.go), `fleetd doctor` (cmd_doctor.go), `fleetd dial`, `pause` and
// `resume` (cmd_dial.go), `fleetd reconcile` (cmd_reconcile.go) and
// `fleetd http-token` (httptoken.go). daemon.go binds the daemon's work
// (runs, triage, the fix stage, marks) to the core app and the other groups.
type serviceCommands struct{ *app }

func (a serviceCommands) runCmd() *cobra.Command {
	var level string
	cmd := &cobra.Command{
		Use:   "run --config F",
		Short: "Run the daemon: schedule the specialists, run them, serve /healthz, /metrics and /api/status",
		Long: `The fleetd service. On start it reconciles crashed runs (names released,
funds swept, footers written) and posts the outbox; then it fires each
specialist on its trigger, never overlapping a specialist with itself and
never exceeding daemon.max_concurrent runs. SIGHUP reloads the config and the
specialists (keeping the old set if the new one is invalid). SIGTERM or
SIGINT stops the triggers, cancels runs at their next tool boundary, lets
them release their names and write their footers, flushes the outbox and
exits within daemon.shutdown_timeout; a second signal exits at once.
Before anything starts it runs fleetd doctor's checks and refuses to start,
naming the check and its fix, when a fatal one fails (no config, a node of
another chain, no FeedbackLog at chain.feedback_log, keys that do not load,
an empty sponsor, a target URL outside fetch_allow, a missing corpus, a
compiler that cannot be run, a data dir that cannot be written). A node that
does not answer is not fatal: the daemon starts degraded (console, /healthz,
/metrics and /api/status serve; "node" in /api/status and fleetd_node_up in
/metrics say it is down; no run starts), retries the node with backoff (1 s
doubling to 30 s, with jitter; every 5 s while it answers) and, when it
answers, reconciles crashed runs and posts the outbox before runs start
again. Logs are JSON on stderr.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var lv slog.Level
			if err := lv.UnmarshalText([]byte(level)); err != nil {
				return fmt.Errorf("--log-level: %w", err)
			}
			logger := slog.New(slog.NewJSONHandler(a.stderr, &slog.HandlerOptions{Level: lv}))
			ctx := cmd.Context()
			c, bad, down := doctor.FirstFatalUp(a.doctor(ctx, nil))
			if bad {
				msg := c.Detail
				if c.Fix != "" {
					msg += " (fix: " + c.Fix + ")"
				}
				return &exitError{code: 2, err: fmt.Errorf("refusing to start: %s: %s; fleetd doctor --config %s lists every check", c.Name, msg, a.configPath)}
			}
			for _, c := range down {
				logger.Warn("the chain node does not answer: starting degraded", "check", c.Name, "detail", c.Detail, "fix", c.Fix)
			}
			d, err := a.startDaemon(ctx, daemonOptions{logger: logger})
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "{\"http\":%q}\n", "http://"+d.HTTPAddr())
			for {
				select {
				case <-a.reload:
					d.Reload()
					continue
				case <-ctx.Done():
				}
				break
			}
			logger.Info("shutting down")
			err = d.Shutdown(a.cfg.Daemon.ShutdownTimeout)
			logger.Info("stopped", "err", err)
			return err
		},
	}
	cmd.Flags().StringVar(&level, "log-level", "info", "debug, info, warn or error")
	return cmd
}
