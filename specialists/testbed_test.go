package specialists

// The playbooks against the real testbed on the embedded dev chain, through
// the real loop, with test-local qa_fetch and qa_call (plain HTTP, the same
// result fields as qatools; this package may not import qatools). The chain
// and compiler tools answer "not configured" here: the testbed flaws behind
// them (admin functions, stored metadata, the compiler) are covered by the
// fixture platform in e2e_test.go and, end to end, by `fleetd probe`.

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/qafleet/fleetd/chain/devchain"
	"github.com/qafleet/fleetd/fixtures/testbed"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/fleet/fleettest"
)

// A well-known development key (the first Hardhat/Anvil account): the
// testbed's sponsor on a throwaway in-memory chain.
const (
	devKey  = "ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80"
	devAddr = "f39fd6e51aad88f6f4ce6ab8827279cfffb92266"
)

// startTestbed runs a dev chain and the testbed on it and returns its target.
func startTestbed(t *testing.T) fleet.Target {
	t.Helper()
	tg, _ := startTestbedChain(t)
	return tg
}

// startTestbedChain is startTestbed, also returning the chain's RPC URL.
// startTestbedLogin is startTestbed with the accounts side (Config.Login).
func startTestbedLogin(t *testing.T) fleet.Target {
	t.Helper()
	tg, _ := startTestbedWith(t, true)
	return tg
}

func startTestbedChain(t *testing.T) (fleet.Target, string) {
	t.Helper()
	return startTestbedWith(t, false)
}

func startTestbedWith(t *testing.T, login bool) (fleet.Target, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a dev chain and the testbed")
	}
	ctx := context.Background()
	var addr [20]byte
	if _, err := hex.Decode(addr[:], []byte(devAddr)); err != nil {
		t.Fatal(err)
	}
	wei, _ := new(big.Int).SetString("1000000000000000000000", 10)
	ch, err := devchain.Start(ctx, devchain.Config{Funded: []devchain.Account{{Address: addr, Wei: wei}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.Close() })
	keyFile := filepath.Join(t.TempDir(), "sponsor.key")
	if err := os.WriteFile(keyFile, []byte(devKey), 0o600); err != nil {
		t.Fatal(err)
	}
	tb, err := testbed.Serve(ctx, testbed.Config{RPC: ch.URL(), ChainID: ch.ChainID(), SponsorKeyFile: keyFile, FacesDir: filepath.Join(t.TempDir(), "faces"), Login: login})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tb.Close() })
	raw, err := json.Marshal(tb.Target())
	if err != nil {
		t.Fatal(err)
	}
	var tg fleet.Target
	if err := json.Unmarshal(raw, &tg); err != nil {
		t.Fatal(err)
	}
	// The compiler runs only when a binary is given (this package cannot
	// build it): PLAYBOOK_TESTBED_COMPILER=/path/to/compiler, a program
	// that runs testbed/compiler.Main.
	tg.Compiler = nil
	if bin := os.Getenv("PLAYBOOK_TESTBED_COMPILER"); bin != "" {
		tg.Compiler = []string{bin, "{src}"}
	}
	return tg, ch.URL()
}

// httpOnlyTools are real qa_fetch and qa_call over HTTP; the chain and
// compiler tools fail as unconfigured ones do.
func httpOnlyTools(tg fleet.Target) func(string, *[]map[string]any) *fleet.Registry {
	client := &http.Client{Timeout: 15 * time.Second}
	return func(runID string, findings *[]map[string]any) *fleet.Registry {
		reg := fleet.NewRegistry()
		add := func(name string, rung fleet.Dial, fn func(a map[string]any) fleet.Result) {
			tool, _ := fleettest.Tool(name, rung, func(ctx context.Context, raw json.RawMessage) (fleet.Result, error) {
				var a map[string]any
				json.Unmarshal(raw, &a)
				return fn(a), nil
			})
			reg.Add(tool)
		}
		notConfigured := func(what string) func(map[string]any) fleet.Result {
			return func(map[string]any) fleet.Result { return fleet.Fail("%s is not configured", what) }
		}
		add("qa_fetch", fleet.Observe, fetchTool(tg.FetchAllow, client))
		add("qa_call", fleet.Exercise, callTool(tg.Call, client))
		if len(tg.Compiler) > 0 {
			add("qa_compile", fleet.Observe, compileTool(tg.Compiler, 10*time.Second))
		} else {
			add("qa_compile", fleet.Observe, notConfigured("target.compiler"))
		}
		add("qa_chain", fleet.Observe, notConfigured("chain"))
		add("qa_create", fleet.Exercise, notConfigured("qa_create needs target.registry and chain.sponsor_key_file: chain"))
		add("qa_publish", fleet.Exercise, notConfigured("chain"))
		add("qa_report", fleet.Observe, func(a map[string]any) fleet.Result {
			*findings = append(*findings, a)
			return fleet.OK(map[string]any{"status": "posted"})
		})
		return reg
	}
}

func TestTestbedHTTPSurfaces(t *testing.T) {
	tg := startTestbed(t)
	tools := httpOnlyTools(tg)
	opts, err := OptionsFor(tg)
	if err != nil {
		t.Fatal(err)
	}
	opts.Samples = 3
	compiler := len(tg.Compiler) > 0

	t.Run("security", func(t *testing.T) {
		_, got := runLoop(t, "security", fleet.Exercise, tg, tools, opts)
		wantFindings(t, got, map[string][]string{
			"S2 private key on a public path": {"web", "/.env", "hex private key", "DEPLOYER_PRIVATE_KEY"},
			"S4 spoofed from":                 {"call", `"from": "admin"`},
			"S4 spoofed header":               {"call", "X-Caller: admin"},
			"S5 cors":                         {"cors", "reflects the foreign Origin", "Access-Control-Allow-Credentials"},
			"S5 headers":                      {"headers", "Content-Security-Policy", "X-Content-Type-Options", "X-Frame-Options"},
		})
	})
	t.Run("ux", func(t *testing.T) {
		_, got := runLoop(t, "ux", fleet.Exercise, tg, tools, opts)
		wantFindings(t, got, map[string][]string{
			"U1 leaked os error": {"face", "does not exist", "no such file or directory"},
			"U2 dead link":       {"docs", "dead link", "/docs/getting-started"},
			"U3 GET promised":    {"docs", "promise GET", "/call", "405"},
			"U4 empty reply":     {"call", `"bob"`, "empty reply"},
		})
	})
	t.Run("fuzz", func(t *testing.T) {
		_, got := runLoop(t, "fuzz", fleet.Exercise, tg, tools, opts)
		want := map[string][]string{
			// One flaw, one finding: bodies that are not a JSON object of
			// strings and messages that look like JSON panic the same way.
			"F3 malformed requests": {"call", "grammar requests", "HTTP 500", "stack trace"},
		}
		if compiler {
			want["F1 crash"] = []string{"compiler", "crash", "index out of range"}
			want["F2 hang"] = []string{"compiler", "hang"}
		}
		wantFindings(t, got, want)
	})
	t.Run("perf", func(t *testing.T) {
		_, got := runLoop(t, "perf", fleet.Exercise, tg, tools, opts)
		want := map[string][]string{
			"P2 slow calls to alice": {"perf", `call to "alice"`, "over the SLO"},
			"P3 slow face of bob":    {"perf", `face of "bob"`, "over the SLO"},
		}
		if compiler {
			want["P1 quadratic compile"] = []string{"compiler", "super-linearly"}
		}
		wantFindings(t, got, want)
	})
	t.Run("smoke", func(t *testing.T) {
		_, got := runLoop(t, "smoke", fleet.Exercise, tg, tools, opts)
		wantFindings(t, got, nil)
	})
}

// wantFindings checks each want matches a finding on its surface and that
// there are no findings beyond those (no false positives on what works).
func wantFindings(t *testing.T, got []map[string]any, want map[string][]string) {
	t.Helper()
	for label, words := range want {
		r := findReport(got, words[1:]...)
		if r == nil || r["surface"] != words[0] {
			t.Errorf("missing %s (%s %v):%s", label, words[0], words[1:], summaries(got))
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d findings, want %d:%s", len(got), len(want), summaries(got))
	}
	for _, f := range got {
		if s := f["summary"].(string); leakedValue.MatchString(s) {
			t.Errorf("a summary repeats a secret: %s", s)
		}
	}
}

// leakedValue matches the testbed's secrets: its internal token and a
// 64-hex private key.
var leakedValue = regexp.MustCompile(`tbk_[0-9a-f]{8,}|[0-9a-fA-F]{64}`)

// crashStderr marks a compiler that fell over (as qatools classifies).
var crashStderr = regexp.MustCompile(`(?m)(^panic: |^goroutine \d+ \[|runtime error:|fatal error:|Segmentation fault|stack overflow)`)

// compileTool is qa_compile over a local compiler binary.
func compileTool(argv []string, timeout time.Duration) func(a map[string]any) fleet.Result {
	dir, err := os.MkdirTemp("", "playbook-compile-")
	if err != nil {
		panic(err)
	}
	n := 0
	return func(a map[string]any) fleet.Result {
		n++
		src := filepath.Join(dir, fmt.Sprintf("%d.src", n))
		source, _ := a["source"].(string)
		if err := os.WriteFile(src, []byte(source), 0o600); err != nil {
			return fleet.Fail("%v", err)
		}
		defer os.Remove(src)
		args := make([]string, len(argv))
		for i, x := range argv {
			args[i] = strings.ReplaceAll(x, "{src}", src)
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, args[0], args[1:]...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		start := time.Now()
		err := cmd.Run()
		d := time.Since(start).Milliseconds()
		code := cmd.ProcessState.ExitCode()
		outcome := "compiled"
		switch {
		case ctx.Err() != nil:
			outcome = "timeout"
		case code == 0 && err == nil:
		case code >= 2 && crashStderr.Match(stderr.Bytes()) || code < 0:
			outcome = "crashed"
		default:
			outcome = "rejected"
		}
		tail := stderr.String()
		if len(tail) > 2048 {
			tail = tail[:2048]
		}
		return fleet.OK(map[string]any{"outcome": outcome, "exit_code": code, "signal": "", "stderr_tail": tail, "bytes": stdout.Len(), "duration_ms": d})
	}
}
