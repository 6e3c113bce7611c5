package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/qafleet/fleetd/fleet"
)

// Client is the MCP client a session belongs to, as it introduced itself in
// initialize.
type Client struct {
	Name            string `json:"name"`
	Version         string `json:"version"`
	ProtocolVersion string `json:"protocol_version"`
	SessionID       string `json:"session_id,omitempty"` // the HTTP session id; empty over stdio
	Transport       string `json:"transport"`            // "stdio" or "http"
}

// Session is what a RunFunc needs to run one MCP session as a fleetd run.
type Session struct {
	Client Client
	// Model is the session: its Next returns the client's next tools/call,
	// or done when the session ends.
	Model fleet.Model
	// Narrate must be the run's fleet.LoopConfig.Narrate: it answers each
	// tools/call with its recorded turn.
	Narrate func(fleet.TurnEvent)
}

// RunFunc runs one session's run to completion: it opens the sandbox,
// writes the run record, runs fleet.Run with s.Model and s.Narrate, and
// cleans up, returning when the run is over. An error with an empty
// RunResult.RunID means no run started (the kill switch is on, the day's
// budget is spent): the call that asked is answered with that error and the
// session may try again at its next call.
type RunFunc func(ctx context.Context, s *Session) (fleet.RunResult, error)

// Library serves the health report for the resources. Errors wrapping
// fs.ErrNotExist mean there is none (yet).
type Library interface {
	// LatestReport returns the latest health report as Markdown and JSON.
	LatestReport(ctx context.Context) (markdown, json []byte, err error)
	// Cluster returns one cluster of the latest report as JSON.
	Cluster(ctx context.Context, id string) ([]byte, error)
}

// Config configures New.
type Config struct {
	// Name and Version introduce the server in initialize.
	Name, Version string
	// Specialist is whose runs the sessions are; it names the run's source.
	Specialist string
	// Tools are listed by tools/list, with their schemas and descriptions;
	// a call goes to the session's run, whose registry must hold the same.
	Tools []fleet.Tool
	Run   RunFunc
	// Library serves the report resources; nil serves none.
	Library Library
	// RunsDir holds run records (<data_dir>/runs); "" serves none.
	RunsDir string
	// Personas become prompts, one per specialist.
	Personas []fleet.Persona
	// MaxRuns caps the sessions running a run at once (default 4).
	MaxRuns int
	Logger  *slog.Logger
}

// Server is an MCP server over fleetd's tools. It owns its sessions' run
// goroutines; Close ends them.
type Server struct {
	cfg    Config
	log    *slog.Logger
	mcp    *mcp.Server
	ctx    context.Context // parent of every run; cancelled by Close
	cancel context.CancelFunc
	runs   sync.WaitGroup

	// callTaken, when set (by tests), runs in a tools/call handler after the
	// run took the call and before the handler waits for its answer.
	callTaken func(runDone <-chan struct{})

	mu       sync.Mutex
	sessions map[*mcp.ServerSession]*session
	running  int
	closed   bool
}

// legacyProtocols are the protocol versions the server speaks: those with
// sessions. The stateless protocol (2026-07-28 and later) has no session to
// be a run, so it is declined and clients fall back to initialize.
func legacyProtocols() []string {
	var out []string
	for _, v := range mcp.SupportedProtocolVersions() {
		if v < "2026-07-28" {
			out = append(out, v)
		}
	}
	return out
}

// New builds the server. It fails when a tool's schema cannot be encoded or
// required configuration is missing.
func New(cfg Config) (*Server, error) {
	if cfg.Run == nil {
		return nil, errors.New("mcpserver: no RunFunc")
	}
	if cfg.Logger == nil {
		return nil, errors.New("mcpserver: no logger")
	}
	if cfg.MaxRuns <= 0 {
		cfg.MaxRuns = 4
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{cfg: cfg, log: cfg.Logger.With("component", "mcp"), ctx: ctx, cancel: cancel, sessions: map[*mcp.ServerSession]*session{}}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: cfg.Name, Title: "fleetd QA tools", Version: cfg.Version}, &mcp.ServerOptions{
		Instructions:              instructions(cfg.Specialist),
		Logger:                    s.log,
		SupportedProtocolVersions: legacyProtocols(),
		// The default capabilities, logging included: run narration is sent
		// as log messages at the level the client sets.
	})
	for _, t := range cfg.Tools {
		mt, err := mcpTool(t)
		if err != nil {
			cancel()
			return nil, err
		}
		s.mcp.AddTool(mt, s.callTool)
	}
	s.addResources()
	s.addPrompts()
	return s, nil
}

func instructions(specialist string) string {
	return fmt.Sprintf(`fleetd's jailed qa_* tools, for probing an on-chain app platform as fleetd's %q specialist.
Every call passes fleetd's autonomy dial (observe < exercise < propose): a call above it comes back as a tool error "refused: needs dial R, dial is D"; raising the dial is a human's decision (fleetd dial set).
This session is one fleetd run: its first tool call starts it (a sandbox, throwaway keys, a run record, a budget); the run ends when the session closes, its budget or deadline is spent, or fleetd is paused, and then names it minted are released and keys swept. Report what you find with qa_report (severity, surface, summary, repro).
Resources: fleetd://report/latest (the ranked health report), fleetd://cluster/{id}, fleetd://run/{id}, fleetd://runs.`, specialist)
}

// mcpTool declares t over MCP: the schema, name and description `fleetd
// tools` shows, with its dial rung in _meta.
func mcpTool(t fleet.Tool) (*mcp.Tool, error) {
	schema, err := json.Marshal(t.Schema)
	if err != nil {
		return nil, fmt.Errorf("mcpserver: tool %s schema: %w", t.Name, err)
	}
	return &mcp.Tool{
		Name: t.Name, Description: t.Description, InputSchema: json.RawMessage(schema),
		Meta: mcp.Meta{"fleetd/rung": t.Rung.String()},
	}, nil
}

// ServeIO serves one session over a newline-delimited JSON stream (stdio)
// and returns when the session and its run have ended: the client closed
// its end (the run ends done), or ctx was cancelled (the run ends
// cancelled). The returned error is the session's abnormal end, if any.
func (s *Server) ServeIO(ctx context.Context, r io.ReadCloser, w io.WriteCloser) error {
	ss, err := s.mcp.Connect(ctx, &mcp.IOTransport{Reader: r, Writer: w}, nil)
	if err != nil {
		return fmt.Errorf("mcp connect: %w", err)
	}
	ended := make(chan error, 1)
	go func() { ended <- ss.Wait() }()
	select {
	case err = <-ended:
		s.endSession(ss, "the client closed the session")
		s.runs.Wait()
	case <-ctx.Done():
		s.cancel()
		ss.Close()
		<-ended
		s.runs.Wait()
		err = nil
	}
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return err
}

// HTTPOptions configures Handler; zero values take the defaults.
type HTTPOptions struct {
	// IdleTimeout closes a session that sent nothing for this long (its run
	// ends as when the client closes it): a client that disappears without
	// closing its session holds its names until then. Default 10 minutes.
	IdleTimeout time.Duration
	// Token, when set, must accept the request's "Authorization: Bearer"
	// token (comparing in constant time). Each address gets 5 wrong tokens,
	// which come back one per 10 s; past them it gets 429 before its token
	// is looked at.
	Token func(token string) bool
	// MaxBodyBytes caps a request's body, declared or chunked (413 past
	// it). Default 4 MiB: room for qa_compile's 1 MiB source as JSON; each
	// tool's own limits still apply to its arguments.
	MaxBodyBytes int64
	// MaxSessions caps the HTTP sessions open at once, running a run or
	// not; a new session past it gets 503 with Retry-After. Default 64.
	MaxSessions int
	// Rate and Burst limit each client address's requests (429 with
	// Retry-After past them). Default 100 a second, 200 at once.
	Rate  float64
	Burst int
	// Now is the limiters' clock (tests); default time.Now.
	Now func() time.Time
}

// Handler serves the streamable HTTP transport. Sessions are stateful (a
// session is a run). Requests reaching a loopback address with a Host that
// is not loopback are refused (DNS rebinding), and so are cross-origin
// browser requests. Before the SDK sees a request, the door (door.go)
// limits each client address's rate, checks the bearer token when o.Token
// is set (with per-address guess limits), caps the body and the open
// sessions. Serve it with HTTPServer's connection limits.
func (s *Server) Handler(o HTTPOptions) http.Handler {
	o.defaults()
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		SessionTimeout:      o.IdleTimeout,
		Logger:              s.log,
		MaxRequestBodyBytes: o.MaxBodyBytes,
	})
	return s.newDoor(http.NewCrossOriginProtection().Handler(h), o)
}

// sessionByID is the open session with the HTTP session id, or nil.
func (s *Server) sessionByID(id string) *mcp.ServerSession {
	if id == "" {
		return nil
	}
	for ss := range s.mcp.Sessions() {
		if ss.ID() == id {
			return ss
		}
	}
	return nil
}

// Close ends every session: runs are cancelled (they stop at their next tool
// boundary, clean up and write their footers), sessions are closed, and
// Close waits for the runs, bounded by ctx.
func (s *Server) Close(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	for ss := range s.mcp.Sessions() {
		ss.Close()
	}
	done := make(chan struct{})
	go func() { s.runs.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("mcpserver close: runs still cleaning up: %w", ctx.Err())
	}
}

// Running reports how many sessions are running a run now.
func (s *Server) Running() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running
}

// clientOf reads who a session's client is.
func clientOf(ss *mcp.ServerSession, transport string) Client {
	c := Client{Transport: transport, SessionID: ss.ID()}
	if p := ss.InitializeParams(); p != nil {
		c.ProtocolVersion = p.ProtocolVersion
		if p.ClientInfo != nil {
			c.Name, c.Version = p.ClientInfo.Name, p.ClientInfo.Version
		}
	}
	if c.Name == "" {
		c.Name = "unknown"
	}
	if transport == "stdio" {
		c.SessionID = ""
	}
	return c
}

// session returns the state of ss, making it on the session's first call.
func (s *Server) session(ss *mcp.ServerSession) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sess, ok := s.sessions[ss]; ok {
		return sess
	}
	transport := "http"
	if ss.ID() == "" {
		transport = "stdio"
	}
	sess := &session{srv: s, ss: ss, client: clientOf(ss, transport), calls: make(chan *pending), gone: make(chan struct{})}
	s.sessions[ss] = sess
	go func() {
		ss.Wait()
		s.endSession(ss, "the session closed")
	}()
	return sess
}

// hasRun reports whether ss has called a tool (it runs, ran or tried to
// start a run): such a session is never closed to make room.
func (s *Server) hasRun(ss *mcp.ServerSession) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.sessions[ss]
	return ok
}

// endSession tells a session's run that its client is gone; the run then
// finishes (done) and cleans up. Safe to call more than once.
func (s *Server) endSession(ss *mcp.ServerSession, why string) {
	s.mu.Lock()
	sess, ok := s.sessions[ss]
	delete(s.sessions, ss)
	s.mu.Unlock()
	if ok {
		sess.end(why)
	}
}

// reserveRun takes a run slot; it fails when MaxRuns sessions are running
// or the server is closing.
func (s *Server) reserveRun() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return errors.New("fleetd mcp is shutting down")
	case s.running >= s.cfg.MaxRuns:
		return fmt.Errorf("%d sessions are already running a run (the limit): try again when one ends", s.running)
	}
	s.running++
	s.runs.Add(1)
	return nil
}

func (s *Server) releaseRun() {
	s.mu.Lock()
	s.running--
	s.mu.Unlock()
	s.runs.Done()
}

// callTool is every tool's tools/call handler: the session's run decides.
func (s *Server) callTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	args := req.Params.Arguments
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	return s.session(req.Session).call(ctx, fleet.Call{Tool: req.Params.Name, Args: args})
}

// toolError is a tool result with isError set, for what the agent must
// read: the run ended, could not start, or the request was cancelled.
func toolError(runID string, format string, args ...any) *mcp.CallToolResult {
	return toolResult(runID, fleet.VerdictError, fleet.Result{"ok": false, "error": fmt.Sprintf(format, args...), "latency_ms": 0})
}

// toolResult renders a tool's result: its JSON as text (what `fleetd tool
// call` prints), the same object as structured content, isError when not ok.
func toolResult(runID string, v fleet.Verdict, r fleet.Result) *mcp.CallToolResult {
	text, err := json.Marshal(r)
	if err != nil {
		text = fmt.Appendf(nil, `{"ok":false,"error":%q}`, "unencodable result: "+err.Error())
		r = fleet.Result{"ok": false, "error": "unencodable result: " + err.Error()}
	}
	meta := mcp.Meta{"fleetd/verdict": string(v)}
	if runID != "" {
		meta["fleetd/run_id"] = runID
	}
	return &mcp.CallToolResult{
		Meta:              meta,
		Content:           []mcp.Content{&mcp.TextContent{Text: string(text)}},
		StructuredContent: map[string]any(r),
		IsError:           !r.IsOK(),
	}
}
