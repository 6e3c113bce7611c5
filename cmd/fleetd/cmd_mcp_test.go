package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/trajectory"
	"go.yaml.in/yaml/v3"
)

// mcpProc is a real `fleetd mcp` process: this test binary acting as fleetd.
type mcpProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
	stderr *syncBuffer
	exited chan error
}

func startMCPProc(t *testing.T, f *fleetFixture, args ...string) *mcpProc {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := &mcpProc{t: t, stderr: &syncBuffer{}, exited: make(chan error, 1)}
	p.cmd = exec.Command(self, append([]string{"mcp", "--config", f.config, "--log-level", "info"}, args...)...)
	p.cmd.Env = append(os.Environ(), "FLEETD_TEST_MAIN=1")
	p.cmd.Stderr = p.stderr
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if p.stdout, err = p.cmd.StdoutPipe(); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.exited <- p.cmd.Wait() }()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.exited
	})
	return p
}

// connectStdio speaks MCP over the process's stdin and stdout.
func (p *mcpProc) connectStdio(name string) *mcp.ClientSession {
	p.t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: name, Version: "0.1.0"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.IOTransport{Reader: p.stdout, Writer: p.stdin}, nil)
	if err != nil {
		p.t.Fatalf("connect: %v\n%s", err, p.stderr.String())
	}
	return cs
}

// httpURL reads the {"mcp":URL} line an HTTP server prints.
func (p *mcpProc) httpURL() string {
	p.t.Helper()
	line, err := bufio.NewReader(p.stdout).ReadString('\n')
	var v struct {
		MCP string `json:"mcp"`
	}
	if err != nil || json.Unmarshal([]byte(line), &v) != nil || v.MCP == "" {
		p.t.Fatalf("no {\"mcp\":URL} line: %q %v\n%s", line, err, p.stderr.String())
	}
	return v.MCP
}

// wait waits for the process to exit by itself.
func (p *mcpProc) wait(within time.Duration) {
	p.t.Helper()
	select {
	case err := <-p.exited:
		p.exited <- err // for the cleanup
		if err != nil {
			p.t.Errorf("fleetd mcp exited: %v\n%s", err, tail(p.stderr.String(), 20))
		}
	case <-time.After(within):
		p.t.Fatalf("fleetd mcp still running after %s\n%s", within, tail(p.stderr.String(), 20))
	}
}

// callTool calls a tool and returns the result object and isError; a
// protocol error fails the test: the loop's verdicts are tool results.
func callTool(t *testing.T, cs *mcp.ClientSession, tool string, args any) (map[string]any, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	var obj map[string]any
	if err := json.Unmarshal([]byte(text), &obj); err != nil {
		t.Fatalf("%s: result text is not JSON: %q", tool, text)
	}
	return obj, res.IsError
}

// runRecords reads every run record of the fixture.
func (f *fleetFixture) runRecords(t *testing.T) []*trajectory.Run {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(f.dataDir, trajectory.RunsDir, "*.jsonl"))
	var out []*trajectory.Run
	for _, file := range files {
		run, err := trajectory.ReadAll(file)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, run)
	}
	return out
}

func (f *fleetFixture) setDial(t *testing.T, d fleet.Dial) {
	t.Helper()
	if _, err := fleet.NewControl(f.dataDir).SetDial(d, "test", "test"); err != nil {
		t.Fatal(err)
	}
}

func corpusProgram(t *testing.T, f *fleetFixture) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(f.tb.Target().Corpus, "arith.tl"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestMCPProbeEndToEnd is the "done when": an MCP client registered
// with `fleetd mcp` runs a probe against the testbed at dial exercise over a
// real process, and its finding lands on the chain. The client is a small
// scripted agent doing a generic check (security headers on a page it made).
func TestMCPProbeEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a dev chain, the testbed and a fleetd mcp process")
	}
	f := newFleetFixture(t, fleet.Exercise, nil)
	p := startMCPProc(t, f)
	cs := p.connectStdio("e2e-agent")

	// The tools are `fleetd tools`', schemas and descriptions included.
	list, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	reg, _ := toolsRegistry()
	type tool struct{ Name, Description, Schema string }
	var got, want []tool
	for _, mt := range list.Tools {
		s, _ := json.Marshal(mt.InputSchema)
		got = append(got, tool{mt.Name, mt.Description, string(s)})
	}
	for _, ft := range reg.List() {
		var m any
		s, _ := json.Marshal(ft.Schema)
		json.Unmarshal(s, &m)
		s, _ = json.Marshal(m)
		want = append(want, tool{ft.Name, ft.Description, string(s)})
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("MCP tools differ from fleetd tools (-fleetd +mcp):\n%s", diff)
	}

	// The agent's probe: make a page, look at it, report what is missing.
	created, isErr := callTool(t, cs, "qa_create", map[string]any{})
	name, _ := created["name"].(string)
	if isErr || name == "" {
		t.Fatalf("qa_create: %v\n%s", created, tail(p.stderr.String(), 20))
	}
	if res, isErr := callTool(t, cs, "qa_publish", map[string]any{"name": name, "source": corpusProgram(t, f)}); isErr {
		t.Fatalf("qa_publish: %v", res)
	}
	face := strings.ReplaceAll(f.tb.Target().Faces, "{name}", name)
	page, isErr := callTool(t, cs, "qa_fetch", map[string]any{"url": face})
	if isErr {
		t.Fatalf("qa_fetch: %v", page)
	}
	headers, _ := page["headers"].(map[string]any)
	var missing []string
	for _, h := range []string{"content-security-policy", "x-content-type-options", "x-frame-options"} {
		if _, ok := headers[h]; !ok {
			missing = append(missing, h)
		}
	}
	if len(missing) == 0 {
		t.Fatalf("the page sets every security header; the scripted agent has nothing to report: %v", headers)
	}
	rep, isErr := callTool(t, cs, "qa_report", map[string]any{
		"severity": "low", "surface": "face",
		"summary": "pages are served without " + strings.Join(missing, ", ") + "; expected browser hardening headers on user content",
		"repro":   map[string]any{"tool": "qa_fetch", "args": map[string]any{"url": face}},
	})
	if isErr || rep["status"] != "posted" {
		t.Fatalf("qa_report: %v", rep)
	}
	cs.Close()
	p.wait(30 * time.Second)

	runs, findings := f.checkInvariants(t) // names released, keys swept, footers, acknowledged findings on chain
	if runs != 1 || findings != 1 {
		t.Errorf("%d runs, %d findings on chain; want 1 and 1", runs, findings)
	}
	rec := f.runRecords(t)[0]
	if rec.Header.Model != "mcp/e2e-agent/0.1.0" || rec.Header.Specialist != "mcp" || rec.Header.Dial != "exercise" {
		t.Errorf("header: model %q specialist %q dial %q", rec.Header.Model, rec.Header.Specialist, rec.Header.Dial)
	}
	var cfg struct {
		MCPClient struct{ Name, Version, Transport string } `json:"mcp_client"`
	}
	json.Unmarshal(rec.Header.Config.(json.RawMessage), &cfg)
	if cfg.MCPClient.Name != "e2e-agent" || cfg.MCPClient.Version != "0.1.0" || cfg.MCPClient.Transport != "stdio" {
		t.Errorf("header config mcp_client %+v", cfg.MCPClient)
	}
	if rec.Footer.Outcome != trajectory.OutcomeDone || rec.Footer.Totals.ToolCalls != 4 || rec.Footer.Totals.Findings != 1 {
		t.Errorf("footer %+v", rec.Footer)
	}
}

// TestMCPToolsAtEachRung calls every tool at every rung in one session: a
// call above the dial is a tool error naming both rungs and never runs;
// the dial is read at every call.
func TestMCPToolsAtEachRung(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a dev chain, the testbed and a fleetd mcp process")
	}
	f := newFleetFixture(t, fleet.Observe, nil)
	p := startMCPProc(t, f)
	cs := p.connectStdio("rung-agent")
	target := f.tb.Target()
	reg, _ := toolsRegistry()
	for _, dial := range []fleet.Dial{fleet.Observe, fleet.Exercise, fleet.Propose} {
		f.setDial(t, dial)
		name := "qa-none-1" // a name this run did not mint: qa_publish must refuse it past the dial gate
		for _, tl := range reg.List() {
			args := map[string]any{}
			switch tl.Name {
			case "qa_create":
			case "qa_compile":
				args["source"] = corpusProgram(t, f)
			case "qa_publish":
				args["name"], args["source"] = name, corpusProgram(t, f)
			case "qa_call":
				args["target"], args["message"] = target.Names[0], "ping"
			case "qa_fetch":
				args["url"] = target.Docs[0]
			case "qa_submit":
				args["url"], args["fields"] = target.Docs[0], map[string]any{"q": "rung test"}
			case "qa_login":
				args["identity"] = "a" // the testbed documents no sign-in: the tool says so
			case "qa_authz":
				args["check"], args["url"] = "function", target.Docs[0] // no sign-in either
			case "qa_chain":
				args["method"] = "eth_blockNumber"
			case "qa_fuzz":
				args["seconds"] = 1 // the tool's default session is 20 s
			case "qa_report":
				args = map[string]any{"severity": "info", "surface": "fleet", "summary": "rung test at " + dial.String()}
			}
			obj, isErr := callTool(t, cs, tl.Name, args)
			refusal := fmt.Sprintf("refused: needs dial %s, dial is %s", tl.Rung, dial)
			if !dial.Allows(tl.Rung) {
				if !isErr || obj["error"] != refusal {
					t.Errorf("%s at %s: %v, want the refusal %q", tl.Name, dial, obj, refusal)
				}
				continue
			}
			if e, _ := obj["error"].(string); strings.HasPrefix(e, "refused: needs dial") {
				t.Errorf("%s at %s refused: %v", tl.Name, dial, obj)
			}
			switch tl.Name {
			case "qa_create":
				if isErr {
					t.Fatalf("qa_create at %s: %v", dial, obj)
				}
				name = obj["name"].(string)
			case "qa_publish":
				// Runs after qa_create (sorted names): the name is this run's.
				if isErr {
					t.Errorf("qa_publish at %s: %v", dial, obj)
				}
			case "qa_login", "qa_authz":
				if e, _ := obj["error"].(string); !isErr || !strings.Contains(e, "no nonce_url and verify_url") {
					t.Errorf("%s at %s: %v, want it to name the missing flow", tl.Name, dial, obj)
				}
			default:
				if isErr {
					t.Errorf("%s at %s: %v", tl.Name, dial, obj)
				}
			}
		}
	}
	cs.Close()
	p.wait(30 * time.Second)
	if runs, _ := f.checkInvariants(t); runs != 1 {
		t.Errorf("%d run records for one session", runs)
	}
	rec := f.runRecords(t)[0]
	if rec.Footer.Totals.Refusals != 6 {
		t.Errorf("%d refusals recorded, want 6 (qa_create, qa_publish, qa_call, qa_submit, qa_login, qa_authz at observe)", rec.Footer.Totals.Refusals)
	}
}

// TestMCPBudgetAndPause: the session's budget is the specialist's (here a
// personas file mcp.yaml with max_turns 3); the kill switch ends a session's
// run at its next call. Each session is one run record.
func TestMCPBudgetAndPause(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a dev chain, the testbed and two fleetd mcp processes")
	}
	f := newFleetFixture(t, fleet.Exercise, nil)
	persona := "name: mcp\nsource: qa-mcp\ngoal: an outside agent\nplanner: playbook\nplaybook: smoke\n" +
		"tools: [qa_fetch, qa_chain, qa_create, qa_report]\nbudget:\n  max_turns: 3\n"
	if err := os.WriteFile(filepath.Join(f.dataDir, "personas", "mcp.yaml"), []byte(persona), 0o600); err != nil {
		t.Fatal(err)
	}
	docs := map[string]any{"url": f.tb.Target().Docs[0]}

	p := startMCPProc(t, f)
	cs := p.connectStdio("spender")
	if list, _ := cs.ListTools(context.Background(), nil); len(list.Tools) != 4 {
		t.Errorf("the mcp persona's 4 tools, got %d", len(list.Tools))
	}
	callTool(t, cs, "qa_create", map[string]any{})
	for range 2 {
		if obj, isErr := callTool(t, cs, "qa_fetch", docs); isErr {
			t.Fatalf("within budget: %v", obj)
		}
	}
	obj, isErr := callTool(t, cs, "qa_fetch", docs)
	if e, _ := obj["error"].(string); !isErr || !strings.Contains(e, "has ended (budget_exhausted: budget exhausted: turns limit 3") {
		t.Errorf("fourth call: %v", obj)
	}
	cs.Close()
	p.wait(30 * time.Second)

	p = startMCPProc(t, f)
	cs = p.connectStdio("pausee")
	callTool(t, cs, "qa_create", map[string]any{})
	if err := fleet.NewControl(f.dataDir).Pause("test", "test"); err != nil {
		t.Fatal(err)
	}
	obj, isErr = callTool(t, cs, "qa_fetch", docs)
	if !isErr || obj["error"] != "cancelled: the kill switch is on (fleetd pause)" {
		t.Errorf("call after pause: %v", obj)
	}
	obj, _ = callTool(t, cs, "qa_fetch", docs)
	if e, _ := obj["error"].(string); !strings.Contains(e, "has ended (cancelled") {
		t.Errorf("call after the run ended: %v", obj)
	}
	cs.Close()
	p.wait(30 * time.Second)
	fleet.NewControl(f.dataDir).Resume("test", "test")

	runs, _ := f.checkInvariants(t) // both minted names released, both keys swept
	var outcomes []string
	for _, r := range f.runRecords(t) {
		outcomes = append(outcomes, string(r.Footer.Outcome))
	}
	if runs != 2 || !strings.Contains(strings.Join(outcomes, " "), "budget_exhausted") || !strings.Contains(strings.Join(outcomes, " "), "cancelled") {
		t.Errorf("%d runs, outcomes %v", runs, outcomes)
	}
}

// TestMCPClientKilled: a client that dies mid-session (its pipes close, as
// when it is killed) ends the run: names released, keys swept, footer.
func TestMCPClientKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a dev chain, the testbed and a fleetd mcp process")
	}
	f := newFleetFixture(t, fleet.Exercise, nil)
	p := startMCPProc(t, f)
	cs := p.connectStdio("doomed")
	if obj, isErr := callTool(t, cs, "qa_create", map[string]any{}); isErr {
		t.Fatalf("qa_create: %v", obj)
	}
	_ = cs // never closed: the client "dies"
	p.stdin.Close()
	p.stdout.Close()
	p.wait(30 * time.Second)
	if runs, _ := f.checkInvariants(t); runs != 1 {
		t.Errorf("%d runs", runs)
	}
	if out := f.runRecords(t)[0].Footer; out.Outcome != trajectory.OutcomeDone || !strings.Contains(out.FinalSummary, "MCP session of doomed 0.1.0 ended") {
		t.Errorf("footer %+v", out)
	}
}

// connKiller is an HTTP client whose connections can all be cut at once,
// as when the client process dies.
type connKiller struct {
	mu    sync.Mutex
	conns []net.Conn
	token string
}

func (k *connKiller) client() *http.Client {
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			k.mu.Lock()
			k.conns = append(k.conns, c)
			k.mu.Unlock()
		}
		return c, err
	}}
	return &http.Client{Transport: roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		if k.token != "" {
			r = r.Clone(r.Context())
			r.Header.Set("Authorization", "Bearer "+k.token)
		}
		return tr.RoundTrip(r)
	})}
}

func (k *connKiller) kill() {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, c := range k.conns {
		c.Close()
	}
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func connectHTTP(t *testing.T, url, name string, hc *http.Client) (*mcp.ClientSession, error) {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: name, Version: "2.0"}, nil)
	return client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, MaxRetries: -1}, nil)
}

// TestMCPHTTP: the streamable HTTP transport with the bearer token required;
// a client killed mid-session holds its run until the idle timeout; SIGTERM
// ends the sessions still open as cancelled. Every run cleans up.
func TestMCPHTTP(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a dev chain, the testbed and a fleetd mcp process")
	}
	f := newFleetFixture(t, fleet.Exercise, nil)
	p := startMCPProc(t, f, "--transport", "http", "--addr", "127.0.0.1:0", "--require-token", "--idle-timeout", "2s")
	url := p.httpURL()
	token, err := os.ReadFile(filepath.Join(f.dataDir, "keys", "http.token"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := connectHTTP(t, url, "stranger", http.DefaultClient); err == nil {
		t.Error("a client without the token connected")
	}
	doomed := &connKiller{token: strings.TrimSpace(string(token))}
	a, err := connectHTTP(t, url, "doomed", doomed.client())
	if err != nil {
		t.Fatal(err)
	}
	stays := &connKiller{token: doomed.token}
	b, err := connectHTTP(t, url, "stays", stays.client())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, cs := range []*mcp.ClientSession{a, b} {
		if obj, isErr := callTool(t, cs, "qa_create", map[string]any{}); isErr {
			t.Fatalf("qa_create: %v", obj)
		}
	}
	doomed.kill()
	// The doomed session idles out (2s) and its run ends on its own.
	deadline := time.Now().Add(20 * time.Second)
	for {
		var done bool
		for _, r := range f.runRecords(t) {
			if r.Footer != nil && strings.Contains(r.Footer.FinalSummary, "doomed") {
				done = true
			}
		}
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the killed client's run did not end\n%s", tail(p.stderr.String(), 20))
		}
		time.Sleep(200 * time.Millisecond)
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	p.wait(30 * time.Second)
	runs, _ := f.checkInvariants(t)
	outcomes := map[string]string{}
	for _, r := range f.runRecords(t) {
		outcomes[strings.Split(r.Header.Model, "/")[1]] = string(r.Footer.Outcome)
	}
	if want := map[string]string{"doomed": "done", "stays": "cancelled"}; runs != 2 || !cmp.Equal(want, outcomes) {
		t.Errorf("%d runs, outcomes %v, want %v", runs, outcomes, want)
	}
}

// TestMCPStartsWithTheNodeDown: `fleetd mcp` whose chain node does not
// answer at start (it exited 1) serves degraded: the tools are listed, a
// tool call is answered with an error naming the node and starts no run,
// and the process stays up. It retries the node; once the node is back the
// next call starts the run, which ends cleaned up. A bad config still stops
// it at once, non-zero, with an error naming what is wrong.
func TestMCPStartsWithTheNodeDown(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a dev chain, the testbed and a fleetd mcp process")
	}
	f := newFaultFixture(t, fleet.Exercise, nil)
	f.proxy.SetDown(true)
	p := startMCPProc(t, f.fleetFixture)
	cs := p.connectStdio("early-agent")
	if list, err := cs.ListTools(context.Background(), nil); err != nil || len(list.Tools) == 0 {
		t.Fatalf("tools/list with the node down: %v %v", list, err)
	}
	obj, isErr := callTool(t, cs, "qa_create", map[string]any{})
	msg, _ := obj["error"].(string)
	if want := "chain node http://" + f.proxy.Addr() + " does not answer"; !isErr || !strings.Contains(msg, want) {
		t.Errorf("qa_create with the node down: isError %v, %q; want an error containing %q", isErr, msg, want)
	}
	t.Logf("a tool call with the node down: %s", msg)
	if n := len(f.runRecords(t)); n != 0 {
		t.Errorf("%d runs started while the node was down", n)
	}
	select {
	case err := <-p.exited:
		p.exited <- err
		t.Fatalf("fleetd mcp exited with the node down: %v\n%s", err, tail(p.stderr.String(), 20))
	default:
	}

	f.proxy.SetDown(false)
	// It sees the node back by itself (the first retries come within
	// seconds), before any tool call asks.
	waitFor(t, 30*time.Second, "fleetd mcp to see the node back", func() bool {
		return strings.Contains(p.stderr.String(), "chain node answers")
	})
	created, isErr := callTool(t, cs, "qa_create", map[string]any{})
	if name, _ := created["name"].(string); isErr || name == "" {
		t.Fatalf("qa_create once the node is back: %v\n%s", created, tail(p.stderr.String(), 20))
	}
	cs.Close()
	p.wait(30 * time.Second)
	if runs, _ := f.checkInvariants(t); runs != 1 {
		t.Errorf("%d runs, want 1", runs)
	}

	// Bad configs: the process stops with an error naming the fault.
	for _, c := range []struct {
		name string
		set  func(ch map[string]any)
		want string
	}{
		{"no rpc", func(ch map[string]any) { delete(ch, "rpc") }, "chain.rpc"},
		{"wrong chain id", func(ch map[string]any) { ch["chain_id"] = 7 }, "wrong chain id"},
	} {
		b, err := os.ReadFile(f.config)
		if err != nil {
			t.Fatal(err)
		}
		var cfg map[string]any
		if err := yaml.Unmarshal(b, &cfg); err != nil {
			t.Fatal(err)
		}
		c.set(cfg["chain"].(map[string]any))
		b, _ = yaml.Marshal(cfg)
		bad := filepath.Join(t.TempDir(), "fleetd.yaml")
		if err := os.WriteFile(bad, b, 0o600); err != nil {
			t.Fatal(err)
		}
		_, stderr, code := run(t, "", "mcp", "--config", bad)
		if code == 0 || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: exit %d, stderr %q; want non-zero naming %q", c.name, code, tail(stderr, 5), c.want)
		}
		t.Logf("%s: exit %d, %s", c.name, code, tail(stderr, 1))
	}
}
