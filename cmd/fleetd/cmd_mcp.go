package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	fleetdaemon "github.com/qafleet/fleetd/daemon"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/mcpserver"
	"github.com/qafleet/fleetd/trajectory"
	"github.com/qafleet/fleetd/triage"
	"github.com/spf13/cobra"
)

// mcpOptions are `fleetd mcp`'s flags.
type mcpOptions struct {
	transport    string
	specialist   string
	addr         string
	idle         time.Duration
	maxRuns      int
	maxSessions  int
	requireToken bool
	level        string
}

// defaultMCPAddr is where the HTTP transport listens by default: loopback,
// next to the daemon's 8787.
const defaultMCPAddr = "127.0.0.1:8790"

func (a specialistCommands) mcpCmd() *cobra.Command {
	var o mcpOptions
	cmd := &cobra.Command{
		Use:   "mcp [--transport stdio|http] [--specialist NAME] [--addr HOST:PORT]",
		Short: "Serve the qa_* tools to any MCP client, under the dial, budgets and kill switch",
		Long: `Serves fleetd's jailed qa_* tools over the Model Context Protocol, so an MCP
client (a coding agent, an IDE assistant) can probe the target as a fleetd
specialist. Tools have the schemas and results ` + "`fleetd tools`" + ` shows; every call
passes the same dial gate as a planner's, and a call above the dial comes
back as a tool error ("refused: needs dial exercise, dial is observe").

One MCP session is one fleetd run: its first tool call opens a sandbox and a
run record (the header names the client), each call is a recorded turn, and
the run ends, releasing its names, sweeping its keys and writing its footer,
when the session closes, its budget (the specialist's, capped by the day's
daemon.daily_budget) or deadline is spent, fleetd is paused (at the next
call), or this process is stopped.

With the chain node down at start it serves anyway: a tool call is answered
with an error naming the node until it answers (retried with backoff), and
the next call after that starts the run.

Resources: fleetd://report/latest (Markdown and JSON), fleetd://cluster/{id},
fleetd://run/{id}, fleetd://runs; a prompt per specialist.

--transport stdio (default) serves one session on stdin/stdout, for a client
that starts fleetd itself; logs go to stderr. --transport http serves
streamable HTTP at http://ADDR/mcp and prints {"mcp":URL,...} on stdout; it
binds 127.0.0.1 by default, and on any non-loopback address (or with
--require-token) every request needs "Authorization: Bearer TOKEN" from
` + "`fleetd http-token`" + `.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.serveMCP(cmd.Context(), o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.transport, "transport", "stdio", "stdio or http")
	f.StringVar(&o.specialist, "specialist", "", "act as this specialist: its tools, budget and reporting source (default: every tool, source qa-mcp)")
	f.StringVar(&o.addr, "addr", defaultMCPAddr, "HTTP listen address (--transport http)")
	f.DurationVar(&o.idle, "idle-timeout", 10*time.Minute, "close an HTTP session idle this long; a client that vanished holds its run until then")
	f.IntVar(&o.maxRuns, "max-runs", 4, "sessions that may run a run at once")
	f.IntVar(&o.maxSessions, "max-sessions", mcpserver.DefaultMaxSessions, "HTTP sessions that may be open at once, running or not (--transport http)")
	f.BoolVar(&o.requireToken, "require-token", false, "require the bearer token on loopback too (always required elsewhere)")
	f.StringVar(&o.level, "log-level", "warn", "debug, info, warn or error (logs are JSON on stderr)")
	return cmd
}

// mcpPersona is the specialist an MCP session acts as: the named one, or
// "mcp" with every tool (a personas file named mcp.yaml replaces it).
func (a specialistCommands) mcpPersona(name string) (fleet.Persona, error) {
	if name != "" {
		return a.persona(name)
	}
	if p, err := a.persona("mcp"); err == nil {
		return p, nil
	}
	reg, err := toolsRegistry()
	if err != nil {
		return fleet.Persona{}, err
	}
	p := fleet.Persona{Name: "mcp", Source: "qa-mcp", Planner: fleet.PlannerPlaybook,
		Goal: "Probe the target platform through fleetd's tools as an outside agent's MCP session."}
	for _, t := range reg.List() {
		p.Tools = append(p.Tools, t.Name)
	}
	return p, nil
}

// serveMCP loads what `fleetd mcp` serves (the specialist, its tools, the
// personas, the tools environment) and serves it (daemon.MCP).
func (a specialistCommands) serveMCP(ctx context.Context, o mcpOptions) error {
	if o.transport != "stdio" && o.transport != "http" {
		return fmt.Errorf("--transport: %q is not stdio or http", o.transport)
	}
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(o.level)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	logger := slog.New(slog.NewJSONHandler(a.stderr, &slog.HandlerOptions{Level: lv}))
	p, err := a.mcpPersona(o.specialist)
	if err != nil {
		return err
	}
	personas, err := a.loadPersonas()
	if err != nil {
		return err
	}
	reg, err := toolsRegistry()
	if err != nil {
		return err
	}
	if reg, err = reg.Subset(p.Tools); err != nil {
		return fmt.Errorf("specialist %s: %w", p.Name, err)
	}
	// The node is dialled lazily, as the daemon's: with the node down at
	// start, fleetd mcp serves degraded and catches up when it answers.
	env, err := a.buildEnvWith(ctx, logger, true)
	if err != nil {
		return err
	}
	defer env.Close()
	m := fleetdaemon.MCP{
		Env: env, Config: daemonConfig(a.app), Run: a.runSpecialist, Persona: p, Logger: logger,
		Server: mcpserver.Config{
			Name: "fleetd", Version: versionString(), Specialist: p.Name, Tools: reg.List(),
			Library: triage.ReportLibrary{Dir: a.reportsDir()}, RunsDir: filepath.Join(a.dataDir(), trajectory.RunsDir),
			Personas: personas, MaxRuns: o.maxRuns, Logger: logger,
		},
		Stdin: a.stdin, Stdout: a.stdout, Stderr: a.stderr,
	}
	if o.transport == "http" {
		m.HTTP = &mcpserver.ListenOptions{
			Addr: o.addr, HTTP: mcpserver.HTTPOptions{IdleTimeout: o.idle, MaxSessions: o.maxSessions},
			RequireToken: o.requireToken, Token: func() (string, error) { return serviceCommands{a.app}.httpToken(true) },
			ShutdownTimeout: a.cfg.Daemon.ShutdownTimeout, Logger: logger,
			Ready: func(url string, needToken bool) {
				line, _ := json.Marshal(map[string]any{"mcp": url, "token_required": needToken})
				fmt.Fprintf(a.stdout, "%s\n", line)
				if needToken {
					fmt.Fprintf(a.stderr, "fleetd mcp: requests need \"Authorization: Bearer TOKEN\" (fleetd http-token --data-dir %s prints it)\n", a.dataDir())
				}
			},
		}
	}
	return m.Serve(ctx)
}
