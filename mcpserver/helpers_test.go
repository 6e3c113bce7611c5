package mcpserver_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/fleet/fleettest"
	"github.com/qafleet/fleetd/mcpserver"
	"github.com/qafleet/fleetd/trajectory"
)

// rig is an MCP server over a small real tool registry, run through the
// real agent loop (fleet.Run) with real run records: the RunFunc below is
// what cmd/fleetd's does, minus the chain.
type rig struct {
	t       testing.TB
	dir     string
	reg     *fleet.Registry
	srv     *mcpserver.Server
	dial    atomic.Value // fleet.Dial
	paused  atomic.Bool
	checks  atomic.Int32 // times a run read the kill switch (paused)
	budget  fleet.Budget
	refuse  atomic.Pointer[error] // RunFunc refuses to start with it (nil: starts)
	ran     map[string]*int
	cleanup atomic.Int32
	started atomic.Int32

	mu      sync.Mutex
	results []fleet.RunResult
	clients []mcpserver.Client
	ended   chan fleet.RunResult
}

func (r *rig) Dial() (fleet.Dial, error) { return r.dial.Load().(fleet.Dial), nil }

type rigOption func(*rig, *mcpserver.Config)

func newRig(t testing.TB, opts ...rigOption) *rig {
	t.Helper()
	r := &rig{t: t, dir: t.TempDir(), reg: fleet.NewRegistry(), ran: map[string]*int{}, ended: make(chan fleet.RunResult, 16)}
	r.dial.Store(fleet.Observe)
	add := func(name string, rung fleet.Dial) {
		tool, n := fleettest.Tool(name, rung, func(_ context.Context, args json.RawMessage) (fleet.Result, error) {
			return fleet.OK(map[string]any{"echo": string(args)}), nil
		})
		tool.Description = name + " does a thing"
		if err := r.reg.Add(tool); err != nil {
			t.Fatal(err)
		}
		r.ran[name] = n
	}
	add("qa_read", fleet.Observe)
	add("qa_write", fleet.Exercise)
	typed := fleet.NewTool("qa_typed", "takes a typed argument", fleet.Observe, func(_ context.Context, a struct {
		URL string `json:"url" desc:"what to read"`
	}) (fleet.Result, error) {
		return fleet.OK(map[string]any{"url": a.URL}), nil
	})
	if err := r.reg.Add(typed); err != nil {
		t.Fatal(err)
	}
	cfg := mcpserver.Config{
		Name: "fleetd", Version: "test", Specialist: "mcp", Tools: r.reg.List(), Run: r.run,
		RunsDir: filepath.Join(r.dir, trajectory.RunsDir), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Personas: []fleet.Persona{{Name: "security", Goal: "Probe trust\nboundaries.", Prompt: "Look for secrets.", Tools: []string{"qa_read", "qa_fetch"}}},
	}
	for _, o := range opts {
		o(r, &cfg)
	}
	srv, err := mcpserver.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.srv = srv
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return r
}

// run is the rig's RunFunc: one run of the agent loop driven by the session.
func (r *rig) run(ctx context.Context, s *mcpserver.Session) (fleet.RunResult, error) {
	if err := r.refuse.Load(); err != nil {
		return fleet.RunResult{}, *err
	}
	n := r.started.Add(1)
	runID := "r-test-" + string(rune('a'+n-1))
	w, err := trajectory.Create(r.dir, runID, trajectory.Header{
		RunID: runID, Specialist: "mcp", Model: "mcp/" + s.Client.Name + "/" + s.Client.Version,
		Config: map[string]any{"mcp_client": s.Client},
	})
	if err != nil {
		return fleet.RunResult{}, err
	}
	res, err := fleet.Run(ctx, fleet.LoopConfig{
		RunID: runID, Specialist: "mcp", Model: s.Model, Narrate: s.Narrate, Tools: r.reg, Dial: r,
		Paused: r.readPaused, Meter: &fleettest.Meter{Budget: r.budget}, Record: w,
		Cleanup: func(context.Context) error { r.cleanup.Add(1); return nil },
	})
	r.mu.Lock()
	r.results = append(r.results, res)
	r.clients = append(r.clients, s.Client)
	r.mu.Unlock()
	r.ended <- res
	return res, err
}

// waitRun waits for the next run to end.
func (r *rig) waitRun() fleet.RunResult {
	r.t.Helper()
	select {
	case res := <-r.ended:
		return res
	case <-time.After(10 * time.Second):
		r.t.Fatal("no run ended within 10s")
	}
	return fleet.RunResult{}
}

// readPaused is the runs' kill switch. It counts a read once it is done, so
// a test that saw the count knows that read's answer is settled.
func (r *rig) readPaused() (bool, error) {
	p := r.paused.Load()
	r.checks.Add(1)
	return p, nil
}

// record reads a run's record.
func (r *rig) record(runID string) *trajectory.Run {
	r.t.Helper()
	run, err := trajectory.ReadAll(filepath.Join(r.dir, trajectory.RunsDir, runID+".jsonl"))
	if err != nil {
		r.t.Fatal(err)
	}
	return run
}

// stdio connects a client to the server over a pipe pair, as `fleetd mcp`
// on stdio does; done receives ServeIO's return.
func (r *rig) stdio(ctx context.Context, name string) (cs *mcp.ClientSession, done chan error) {
	r.t.Helper()
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	done = make(chan error, 1)
	go func() { done <- r.srv.ServeIO(ctx, sr, sw) }()
	client := mcp.NewClient(&mcp.Implementation{Name: name, Version: "9.9"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.IOTransport{Reader: cr, Writer: cw}, nil)
	if err != nil {
		r.t.Fatal(err)
	}
	return cs, done
}

// http connects a client over streamable HTTP to an httptest server.
func (r *rig) http(name string, o mcpserver.HTTPOptions) (*mcp.ClientSession, *httptest.Server) {
	r.t.Helper()
	ts := httptest.NewServer(r.srv.Handler(o))
	// A session a test abandoned keeps its event stream open: cut it.
	r.t.Cleanup(func() { ts.CloseClientConnections(); ts.Close() })
	return r.connectHTTP(ts.URL, name), ts
}

func (r *rig) connectHTTP(url, name string) *mcp.ClientSession {
	r.t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1.0"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		r.t.Fatal(err)
	}
	return cs
}

// call calls a tool and returns its result's JSON object and isError.
func call(t *testing.T, cs *mcp.ClientSession, tool string, args any) (map[string]any, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error %v (tool errors must be results)", tool, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("%s: %d content items, want 1", tool, len(res.Content))
	}
	text, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("%s: content %T, want text", tool, res.Content[0])
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(text.Text), &obj); err != nil {
		t.Fatalf("%s: text is not the JSON result: %q", tool, text.Text)
	}
	if sc, _ := json.Marshal(res.StructuredContent); string(sc) != text.Text {
		t.Errorf("%s: structured content %s differs from the text %s", tool, sc, text.Text)
	}
	return obj, res.IsError
}

func errText(obj map[string]any) string { s, _ := obj["error"].(string); return s }

func contains(s, sub string) bool { return strings.Contains(s, sub) }
