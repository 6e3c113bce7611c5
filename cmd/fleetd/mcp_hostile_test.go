package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
)

// TestMCPNeverListOverHTTP re-attacks the never-list through a real
// `fleetd mcp --transport http` with the token required: one session's run
// tries to publish to the name another session's run minted and to a
// foreign name, to fetch URLs off the allowlist, to send a raw transaction
// through qa_chain, and sends oversized and malformed JSON. Every attempt is
// a refusal (an isError result, or 400/413 for what never reaches a tool);
// the other run's name is untouched; no answer carries the token or a key;
// the process stays up and serves the next call; both runs clean up and end
// with a footer.
func TestMCPNeverListOverHTTP(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a dev chain, the testbed and a fleetd mcp process")
	}
	f := newFleetFixture(t, fleet.Exercise, nil)
	p := startMCPProc(t, f, "--transport", "http", "--addr", "127.0.0.1:0", "--require-token")
	url := p.httpURL()
	tokenB, err := os.ReadFile(filepath.Join(f.dataDir, "keys", "http.token"))
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(tokenB))
	secrets := map[string]string{"the HTTP token": token}
	for what, file := range map[string]string{"the sponsor key": f.dn.Info.SponsorKeyFile, "the fleet key": f.dn.Info.FleetKeyFile} {
		k, err := chain.LoadKey(file)
		if err != nil {
			t.Fatal(err)
		}
		secrets[what] = fmt.Sprintf("%x", k.PrivateKey().D.Bytes())
	}
	var answers bytes.Buffer // every answer text, checked for secrets at the end
	hc := (&connKiller{token: token}).client()
	owner, err := connectHTTP(t, url, "owner", hc)
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close()
	attacker, err := connectHTTP(t, url, "attacker", hc)
	if err != nil {
		t.Fatal(err)
	}
	defer attacker.Close()
	obj, isErr := callTool(t, owner, "qa_create", map[string]any{})
	if isErr {
		t.Fatalf("qa_create: %v", obj)
	}
	theirs := obj["name"].(string)
	obj, isErr = callTool(t, attacker, "qa_create", map[string]any{})
	if isErr {
		t.Fatalf("qa_create: %v", obj)
	}
	mine := obj["name"].(string)
	target := f.tb.Target()
	src := corpusProgram(t, f)

	for _, tc := range []struct {
		name, tool string
		args       any
		want       string // in the error
	}{
		{"publish to another run's name", "qa_publish", map[string]any{"name": theirs, "source": src}, "not minted by this run"},
		{"publish to a foreign name", "qa_publish", map[string]any{"name": target.Names[0], "source": src}, "not minted by this run"},
		{"publish to a look-alike of its own", "qa_publish", map[string]any{"name": strings.ToUpper(mine), "source": src}, "not minted by this run"},
		{"fetch another port", "qa_fetch", map[string]any{"url": "http://127.0.0.1:1/"}, "not on the fetch allowlist"},
		{"fetch the metadata service", "qa_fetch", map[string]any{"url": "http://169.254.169.254/latest/meta-data/"}, "not on the fetch allowlist"},
		{"fetch the MCP server itself", "qa_fetch", map[string]any{"url": url}, "not on the fetch allowlist"},
		{"fetch a file", "qa_fetch", map[string]any{"url": "file:///etc/passwd"}, "scheme"},
		{"raw transaction", "qa_chain", map[string]any{"method": "eth_sendRawTransaction", "params": []any{"0x00"}}, "refused"},
		{"sign with the node", "qa_chain", map[string]any{"method": "eth_sendTransaction", "params": []any{map[string]any{}}}, "refused"},
		{"summary over its limit", "qa_report", map[string]any{"severity": "high", "surface": "fleet", "summary": strings.Repeat("s", 100<<10)}, ""},
		{"arguments of the wrong shape", "qa_publish", map[string]any{"name": []any{theirs}, "source": 7}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := attacker.CallTool(context.Background(), &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
			if err != nil {
				// A protocol error is a refusal too (the SDK's schema check),
				// as long as the session goes on (checked below).
				answers.WriteString(err.Error())
				return
			}
			text := res.Content[0].(*mcp.TextContent).Text
			answers.WriteString(text)
			// After 3 failures in a row a tool is disabled for the run: a
			// refusal as good as the fence's own.
			if !res.IsError || !(strings.Contains(text, tc.want) || strings.Contains(text, "is disabled for the rest of this run")) {
				t.Errorf("%s %v: %s, want a refusal containing %q", tc.tool, tc.args, text, tc.want)
			}
		})
	}

	// What never reaches a tool: a body over the 4 MiB limit, malformed
	// JSON-RPC, a JSON bomb.
	raw := func(body string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", attacker.ID())
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		answers.Write(b)
		return resp.StatusCode, string(b)
	}
	huge := `{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"qa_report","arguments":{"severity":"high","surface":"fleet","summary":"` + strings.Repeat("x", 5<<20) + `"}}}`
	if code, body := raw(huge); code != http.StatusRequestEntityTooLarge {
		t.Errorf("a 5 MiB call: %d %q, want 413", code, body)
	}
	if code, body := raw(`{"jsonrpc":"2.0","id":100,"method":"tools/call","params":{"name":`); code != http.StatusBadRequest {
		t.Errorf("malformed JSON: %d %q, want 400", code, body)
	}
	if code, body := raw(strings.Repeat(`{"a":`, 50000) + "1" + strings.Repeat("}", 50000)); code != http.StatusBadRequest {
		t.Errorf("JSON nested 50,000 deep: %d %q, want 400", code, body)
	}
	if code, _ := raw(`{"jsonrpc":"2.0","id":101,"method":"tools/call","params":{"name":"qa_report","arguments":{"severity":"high","surface":"fleet","summary":"a forged finding"}}}`); code != http.StatusOK {
		t.Errorf("a well-formed call by raw HTTP on the session: %d", code)
	}

	// The other run's name is still its own and unpublished-to by the attacker.
	if obj, isErr := callTool(t, owner, "qa_publish", map[string]any{"name": theirs, "source": src}); isErr {
		t.Errorf("the owner's publish after the attacks: %v", obj)
	}
	// The process is up and the attacker's session still answers.
	if obj, isErr := callTool(t, attacker, "qa_chain", map[string]any{"method": "eth_blockNumber"}); isErr {
		t.Errorf("a read after the attacks: %v", obj)
	}
	// A token guesser is refused, then locked out.
	codes := map[int]int{}
	for range 20 {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{}`))
		req.Header.Set("Authorization", "Bearer guess")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		codes[resp.StatusCode]++
	}
	if codes[http.StatusUnauthorized] != 5 || codes[http.StatusTooManyRequests] != 15 {
		t.Errorf("20 wrong tokens: %v, want 5 × 401 and 15 × 429", codes)
	}
	// The limit is per address, so on loopback it holds every local client
	// back until a try comes back (10 s); then the sessions go on.
	time.Sleep(11 * time.Second)
	if obj, isErr := callTool(t, owner, "qa_chain", map[string]any{"method": "eth_blockNumber"}); isErr {
		t.Errorf("a read 11 s after the guesses: %v", obj)
	}
	for what, s := range secrets {
		if strings.Contains(strings.ToLower(answers.String()), strings.ToLower(s)) {
			t.Errorf("an answer carried %s", what)
		}
	}
	owner.Close()
	attacker.Close()
	p.cmd.Process.Signal(syscall.SIGTERM)
	p.wait(60 * time.Second)
	if runs, _ := f.checkInvariants(t); runs != 2 {
		t.Errorf("%d runs, want 2", runs)
	}
	for _, r := range f.runRecords(t) {
		if r.Footer == nil {
			t.Errorf("run %s has no footer", r.Header.RunID)
			continue
		}
		if !strings.Contains(r.Header.Model, "attacker") {
			continue
		}
		failed := 0 // turns the run recorded as not ok: the attacks that reached it
		for _, tr := range r.Turns() {
			raw, _ := tr.Result.(json.RawMessage)
			var res struct {
				OK *bool `json:"ok"`
			}
			if json.Unmarshal(raw, &res) == nil && res.OK != nil && !*res.OK {
				failed++
			}
		}
		if failed < 9 {
			t.Errorf("the attacker's run recorded %d failed turns, want at least the 9 attacks on the never-list", failed)
		}
	}
	if t.Failed() {
		t.Logf("answers: %s\nstderr:\n%s", tail(answers.String(), 40), tail(p.stderr.String(), 30))
	}
}
