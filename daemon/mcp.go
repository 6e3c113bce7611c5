package daemon

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/mcpserver"
	"github.com/qafleet/fleetd/runner"
)

// MCP is `fleetd mcp`'s service around an MCP server: each session's run
// is the specialist's, started only while the day's budget has room and
// the chain node answers (the daemon's node watcher), and the fleet's
// outbox is flushed when it stops.
type MCP struct {
	// Env is the tools environment, built lazily (the node may be down);
	// the caller closes it after Serve returns.
	Env *runner.Env
	// Config is the daemon's config: the node watcher's and the daily
	// budget's (DataDir, Daily).
	Config Config
	// Run is one specialist run (Work.Run).
	Run func(ctx context.Context, env *runner.Env, p fleet.Persona, o runner.Options) (fleet.RunResult, error)
	// Persona is the specialist every session acts as.
	Persona fleet.Persona
	// Server is the MCP server's config; its Run is filled here.
	Server mcpserver.Config
	// HTTP serves streamable HTTP (mcpserver.ListenAndServe); nil serves
	// one session on Stdin and Stdout, saying so on Stderr.
	HTTP   *mcpserver.ListenOptions
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Logger *slog.Logger
}

// Serve builds the MCP server and serves it on stdio, or over HTTP until
// ctx is done. With the node down at start it serves degraded:
// tools/list, resources and prompts answer, a tool call is answered with
// an error naming the node, and the node is retried in the background
// (Node.Watch) until it answers; crashed runs are reconciled when it
// first does, before any run starts. The outbox is flushed at the end
// when the node is up (else the flush would only wait for it to fail
// again).
func (m MCP) Serve(ctx context.Context) error {
	node := NewNode(m.Env, m.Config, m.Logger.With("component", "mcp"))
	if up, _ := node.Check(ctx); !up {
		m.Logger.Warn("starting degraded: the chain node does not answer; it is retried with backoff, tool calls are answered with an error naming it until it does", "rpc", PublicURL(node.RPC))
		defer node.Watch(ctx, true, nil)()
	}
	daily := fleet.NewDailyBudget(m.Config.DataDir, m.Config.Daily)
	sc := m.Server
	sc.Run = func(ctx context.Context, s *mcpserver.Session) (fleet.RunResult, error) {
		if err := daily.Check(); err != nil {
			return fleet.RunResult{}, err
		}
		if err := node.Ready(ctx); err != nil {
			return fleet.RunResult{}, err
		}
		res, err := m.Run(ctx, m.Env, m.Persona, runner.Options{
			Model: s.Model, ModelName: "mcp/" + s.Client.Name + "/" + s.Client.Version, Narrate: s.Narrate,
			Logger: m.Logger, Budget: daily.Remaining, Config: map[string]any{"mcp_client": s.Client},
		})
		if res.RunID != "" {
			daily.Add(res)
		}
		if res.RunID != "" && runner.LeftOpen(m.Config.DataDir, res.RunID) {
			// Its cleanup failed once (a session cut short by the stop, a
			// reset answer): tried again at once, as the daemon's stop
			// does, rather than left held until the next start.
			FinishLeft(ctx, m.Env, m.Config.DataDir, "fleetd mcp after the run", m.Stderr)
		}
		return res, err
	}
	srv, err := mcpserver.New(sc)
	if err != nil {
		return err
	}
	defer func() {
		if node.Up() {
			FlushOutbox(m.Env, m.Logger)
		}
	}()
	if m.HTTP != nil {
		return srv.ListenAndServe(ctx, *m.HTTP)
	}
	dial, _ := m.Env.Control.Dial()
	fmt.Fprintf(m.Stderr, "fleetd mcp: serving the %s specialist's %d tools on stdio (dial %s, data dir %s)\n", m.Persona.Name, len(sc.Tools), dial, m.Config.DataDir)
	return srv.ServeIO(ctx, io.NopCloser(m.Stdin), nopWriteCloser{m.Stdout})
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// FlushOutbox posts findings queued while the chain was away, as the
// daemon does when it stops, within 15 s; what is left is posted at the
// next start.
func FlushOutbox(env *runner.Env, logger *slog.Logger) {
	if env.Poster == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if _, left, err := env.Poster.Flush(ctx); err != nil && left > 0 {
		logger.Warn("outbox not flushed; it is posted at the next start", "left", left, "err", err)
	}
}
