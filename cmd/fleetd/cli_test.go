package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/qafleet/fleetd/fixtures/testbed"
)

// syncBuffer is a bytes.Buffer safe to read while a command writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// run executes the CLI in-process and returns stdout, stderr and the exit code.
func run(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	var out, errb syncBuffer
	code := Main(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return out.String(), errb.String(), code
}

// startDevnetCmd runs `fleetd chain devnet` in the background until the test
// ends and returns the JSON line it printed.
func startDevnetCmd(t *testing.T, dataDir string) testbed.DevnetInfo {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb syncBuffer
	// exited is closed once Main returned code, so that both the early-exit
	// check below and the cleanup can see it.
	exited, code := make(chan struct{}), 0
	go func() {
		defer close(exited)
		code = Main(ctx, []string{"chain", "devnet", "--data-dir", dataDir}, strings.NewReader(""), &out, &errb)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-exited:
			if code != 0 {
				t.Errorf("devnet exited %d: %s", code, errb.String())
			}
		case <-time.After(10 * time.Second):
			t.Error("devnet did not stop within 10s of cancellation")
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), "\n") {
		select {
		case <-exited:
			t.Fatalf("devnet exited %d early: %s", code, errb.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("devnet printed nothing in 30s; stderr: %s", errb.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	var info testbed.DevnetInfo
	if err := json.Unmarshal([]byte(out.String()), &info); err != nil {
		t.Fatalf("devnet output %q: %v", out.String(), err)
	}
	return info
}

func TestDevnetPostAndList(t *testing.T) {
	dir := t.TempDir()
	info := startDevnetCmd(t, filepath.Join(dir, "data"))
	if !strings.HasPrefix(info.RPC, "http://127.0.0.1:") || info.ChainID != 1337 || len(info.FeedbackLog) != 42 {
		t.Fatalf("devnet info = %+v", info)
	}
	for _, f := range []string{info.SponsorKeyFile, info.FleetKeyFile} {
		if fi, err := os.Stat(f); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("key file %s: %v %v", f, fi, err)
		}
	}

	// An operator's own identity, unfunded; the sponsor pays.
	opKey := filepath.Join(dir, "op.key")
	out, stderr, code := run(t, "", "keys", "new", "--out", opKey)
	if code != 0 {
		t.Fatalf("keys new: %s", stderr)
	}
	var k struct{ Address string }
	json.Unmarshal([]byte(out), &k)

	out, stderr, code = run(t, "", "findings", "post", "--rpc", info.RPC, "--feedback-log", info.FeedbackLog,
		"--key-file", opKey, "--sponsor-key-file", info.SponsorKeyFile, "--text", "the face of alice is blank",
		"--data-dir", filepath.Join(dir, "op")) // the outbox every post goes through
	if code != 0 {
		t.Fatalf("findings post: %s", stderr)
	}
	var posted struct {
		Index     uint64
		Sender    string
		Sponsored bool
	}
	if err := json.Unmarshal([]byte(out), &posted); err != nil || posted.Sender != k.Address || !posted.Sponsored {
		t.Fatalf("post output %q (%v), want sender %s sponsored", out, err, k.Address)
	}

	// Through the written config, from stdin, as the fleet identity.
	envelope := "qa/v1 source=qa-fuzz sev=high surface=compiler run=r-1\ncompile panic on `enum E{}`\nrepro: qa_compile {\"source\":\"enum E{}\"}"
	if _, stderr, code = run(t, envelope, "findings", "post", "--config", info.Config, "--text", "-"); code != 0 {
		t.Fatalf("findings post via config: %s", stderr)
	}
	if _, stderr, code = run(t, "", "findings", "post", "--config", info.Config, "--text", "qa/v1 source=x sev=bogus surface=y"); code == 0 || !strings.Contains(stderr, `invalid severity "bogus"`) {
		t.Errorf("malformed envelope: code %d, %s", code, stderr)
	}
	if _, stderr, code = run(t, "", "findings", "post", "--config", info.Config, "--text", strings.Repeat("x", 2049)); code == 0 || !strings.Contains(stderr, "too long") {
		t.Errorf("2049 bytes: code %d, %s", code, stderr)
	}

	out, stderr, code = run(t, "", "findings", "--config", info.Config, "--json")
	if code != 0 {
		t.Fatalf("findings: %s", stderr)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("findings --json printed %d lines, want 2:\n%s", len(lines), out)
	}
	var first, second findingJSON
	json.Unmarshal([]byte(lines[0]), &first)
	json.Unmarshal([]byte(lines[1]), &second)
	if first.Sender.String() != k.Address || !first.FreeForm || first.Severity != "unknown" {
		t.Errorf("first = %+v", first)
	}
	if second.Source != "qa-fuzz" || second.Severity != "high" || second.Surface != "compiler" || second.Repro == "" || second.Index != 1 {
		t.Errorf("second = %+v", second)
	}

	out, _, code = run(t, "", "findings", "--config", info.Config, "--from", "1")
	if code != 0 || !strings.Contains(out, "qa-fuzz") || strings.Contains(out, "alice") {
		t.Errorf("table from 1:\n%s", out)
	}

	// Flags win over the config: a wrong chain id on the command line fails.
	if _, stderr, code = run(t, "", "findings", "--config", info.Config, "--chain-id", "5"); code == 0 || !strings.Contains(stderr, "wrong chain id") {
		t.Errorf("--chain-id 5: code %d, %s", code, stderr)
	}
	// A log address with no contract is a clear error.
	if _, stderr, code = run(t, "", "findings", "--config", info.Config, "--feedback-log", "0x00000000000000000000000000000000000000aa"); code == 0 || !strings.Contains(stderr, "no contract") {
		t.Errorf("empty address: code %d, %s", code, stderr)
	}
}

func TestDeployToAnyNode(t *testing.T) {
	info := startDevnetCmd(t, t.TempDir())
	out, stderr, code := run(t, "", "chain", "deploy", "--rpc", info.RPC, "--key-file", info.SponsorKeyFile)
	if code != 0 {
		t.Fatalf("deploy: %s", stderr)
	}
	var d struct {
		FeedbackLog string `json:"feedback_log"`
		GasUsed     uint64 `json:"gas_used"`
	}
	if err := json.Unmarshal([]byte(out), &d); err != nil || len(d.FeedbackLog) != 42 || d.FeedbackLog == info.FeedbackLog || d.GasUsed == 0 {
		t.Errorf("deploy output %q", out)
	}
	// The fleet key holds no funds: deploying with it fails with a clear error.
	if _, stderr, code = run(t, "", "chain", "deploy", "--rpc", info.RPC, "--key-file", info.FleetKeyFile); code == 0 || !strings.Contains(stderr, "insufficient funds") {
		t.Errorf("unfunded deploy: code %d, %s", code, stderr)
	}
}

func TestKeysAndErrors(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "k")
	if _, stderr, code := run(t, "", "keys", "new", "--out", p); code != 0 {
		t.Fatal(stderr)
	}
	if _, stderr, code := run(t, "", "keys", "new", "--out", p); code == 0 || !strings.Contains(stderr, "refusing to overwrite") {
		t.Errorf("overwrite: %d %s", code, stderr)
	}
	bad := filepath.Join(dir, "bad.key")
	os.WriteFile(bad, []byte("0xdeadbeefcafe"), 0o600)
	_, stderr, code := run(t, "", "findings", "post", "--rpc", "http://127.0.0.1:1", "--feedback-log", "0x00000000000000000000000000000000000000aa", "--key-file", bad, "--text", "x")
	if code == 0 || !strings.Contains(stderr, bad) || strings.Contains(stderr, "deadbeef") {
		t.Errorf("bad key file: code %d, %q", code, stderr)
	}
	if _, stderr, code := run(t, "", "findings"); code == 0 || !strings.Contains(stderr, "--feedback-log") {
		t.Errorf("no log address: %d %s", code, stderr)
	}
	if out, _, code := run(t, "", "version"); code != 0 || !strings.HasPrefix(out, "fleetd ") {
		t.Errorf("version: %q", out)
	}
	cfg := writeConfig(t, "chain:\n  rpc: http://127.0.0.1:1\n")
	if out, _, code := run(t, "", "config", "validate", "--config", cfg); code != 0 || !strings.Contains(out, "ok") {
		t.Errorf("config validate: %q", out)
	}
	cfg = writeConfig(t, "chain:\n  rcp: http://127.0.0.1:1\n")
	if _, stderr, code := run(t, "", "config", "validate", "--config", cfg); code == 0 || !strings.Contains(stderr, "line 2") {
		t.Errorf("config validate bad: %q", stderr)
	}
}
