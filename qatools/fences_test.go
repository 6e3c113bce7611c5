package qatools

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/sandbox"
)

// TestEveryToolAtEveryRung exercises every tool at each dial setting.
func TestEveryToolAtEveryRung(t *testing.T) {
	h := newHarness(t, fleet.Observe)
	calls := map[string]any{
		"qa_create":  map[string]any{},
		"qa_compile": map[string]any{"source": "let x = 1;"},
		"qa_publish": map[string]any{"name": "placeholder", "source": "let x = 1;"},
		"qa_call":    map[string]any{"target": "alice", "message": "hi"},
		"qa_fetch":   map[string]any{"url": h.web.URL + "/alice/"},
		"qa_chain":   map[string]any{"method": "eth_blockNumber"},
		"qa_report":  map[string]any{"severity": "info", "surface": "fleet", "summary": "rung test finding"},
		"qa_fuzz":    map[string]any{"engine": "builtin", "seconds": 1},
		"qa_submit":  map[string]any{"url": h.web.URL + "/echo", "fields": map[string]any{"a": "1"}},
	}
	writes := map[string]bool{"qa_create": true, "qa_publish": true, "qa_call": true, "qa_submit": true}
	for _, d := range []fleet.Dial{fleet.Observe, fleet.Exercise, fleet.Propose} {
		h.setDial(d)
		run, reg := h.newRun("r-rung-"+d.String(), fleet.Budget{})
		name := ""
		for _, tool := range []string{"qa_create", "qa_compile", "qa_publish", "qa_call", "qa_fetch", "qa_chain", "qa_report", "qa_fuzz", "qa_submit"} {
			args := calls[tool]
			if tool == "qa_publish" && name != "" {
				args = map[string]any{"name": name, "source": "let x = 1;"}
			}
			if tool == "qa_report" {
				args = map[string]any{"severity": "info", "surface": "fleet", "summary": "rung test finding at " + d.String()}
			}
			out, err := h.call(reg, tool, args)
			if err != nil {
				t.Fatalf("%s at %s: %v", tool, d, err)
			}
			if writes[tool] && d == fleet.Observe {
				if out.Verdict != fleet.VerdictRefused || !strings.Contains(out.Result.Err(), "refused: needs dial exercise, dial is observe") {
					t.Errorf("%s at observe: %s %v", tool, out.Verdict, out.Result)
				}
				continue
			}
			if out.Verdict != fleet.VerdictOK {
				t.Errorf("%s at %s: %s %v", tool, d, out.Verdict, out.Result)
			}
			if tool == "qa_create" {
				name, _ = out.Result["name"].(string)
				if !strings.HasPrefix(name, "qa-r-rung-") || out.Result["owner_verified"] != true {
					t.Errorf("qa_create result %v", out.Result)
				}
			}
		}
		if err := CleanupRun(context.Background(), h.env, run); err != nil {
			t.Fatal(err)
		}
	}
}

// TestNoWriteAtObserve: nothing but feedback reaches the chain at observe,
// even a raw transaction straight through the chain layer.
func TestNoWriteAtObserve(t *testing.T) {
	h := newHarness(t, fleet.Observe)
	ctx := context.Background()
	victim, _ := chain.GenerateKey()
	if _, err := h.client.Transfer(ctx, h.sponsor, victim.Address(), big.NewInt(1)); !errors.Is(err, chain.ErrRefused) {
		t.Errorf("transfer at observe = %v, want refused", err)
	}
	regSel := chain.Selector("register(string)")
	data := append(regSel[:], make([]byte, 64)...)
	if _, err := h.client.SendRaw(ctx, h.sponsor, h.env.Registry.Address(), data, nil); !errors.Is(err, chain.ErrRefused) {
		t.Errorf("raw register at observe = %v, want refused", err)
	}
	if _, err := h.env.Registry.Register(ctx, h.sponsor, "qa-sneaky"); !errors.Is(err, chain.ErrRefused) {
		t.Errorf("binding register at observe = %v, want refused", err)
	}
	// A raw call carrying submitFeedback's selector to another contract is
	// not feedback.
	fbSel := chain.Selector("submitFeedback(string)")
	fb := append(fbSel[:], make([]byte, 64)...)
	if _, err := h.client.SendRaw(ctx, h.sponsor, h.env.Registry.Address(), fb, nil); !errors.Is(err, chain.ErrRefused) {
		t.Errorf("fake feedback at observe = %v, want refused", err)
	}
	// Feedback itself is allowed.
	if _, err := h.env.Log.SubmitFor(ctx, h.fleetKey, h.sponsor, "observe-rung feedback"); err != nil {
		t.Errorf("feedback at observe: %v", err)
	}
	// Lowering the dial mid-run stops the very next write.
	h.setDial(fleet.Exercise)
	if _, err := h.client.Transfer(ctx, h.sponsor, victim.Address(), big.NewInt(1)); err != nil {
		t.Fatalf("transfer at exercise: %v", err)
	}
	h.setDial(fleet.Observe)
	if _, err := h.client.Transfer(ctx, h.sponsor, victim.Address(), big.NewInt(1)); !errors.Is(err, chain.ErrRefused) {
		t.Errorf("transfer after lowering = %v, want refused", err)
	}
}

// TestNeverTouchForeignNames: qa_publish refuses names this run did not
// mint, including a real run's name from another run and look-alikes.
func TestNeverTouchForeignNames(t *testing.T) {
	h := newHarness(t, fleet.Exercise)
	other, otherReg := h.newRun("r-other", fleet.Budget{})
	out, _ := h.call(otherReg, "qa_create", map[string]any{})
	otherName, _ := out.Result["name"].(string)
	if otherName == "" {
		t.Fatalf("other run could not mint: %v", out.Result)
	}
	run, reg := h.newRun("r-mine", fleet.Budget{})
	out, _ = h.call(reg, "qa_create", map[string]any{})
	mine, _ := out.Result["name"].(string)
	ctx := context.Background()
	before, _ := h.env.Registry.Metadata(ctx, otherName, chain.MetadataKey("face"))
	for _, name := range []string{"alice", otherName, "qa-r-mine-9", "qa-r-mine", "qa-r-mine-0x", strings.Replace(mine, "r-mine", "r-mine2", 1), "QA-R-MINE-0"} {
		out, err := h.call(reg, "qa_publish", map[string]any{"name": name, "source": "pwned"})
		if err != nil {
			t.Fatal(err)
		}
		if out.Verdict != fleet.VerdictError || !strings.Contains(out.Result.Err(), "refused") || !strings.Contains(out.Result.Err(), "not minted by this run") {
			t.Errorf("publish to %q: %s %v", name, out.Verdict, out.Result)
		}
	}
	if after, _ := h.env.Registry.Metadata(ctx, otherName, chain.MetadataKey("face")); string(after) != string(before) {
		t.Errorf("another run's name was written: %q", after)
	}
	if owner, _ := h.env.Registry.OwnerOf(ctx, "alice"); owner != h.owner.Address() {
		t.Errorf("alice changed hands: %s", owner)
	}
	// Own name: works.
	out, _ = h.call(reg, "qa_publish", map[string]any{"name": mine, "source": "<p>hello</p>"})
	if out.Verdict != fleet.VerdictOK || out.Result["gas_used"] == nil {
		t.Errorf("publish to own name: %v", out.Result)
	}
	if v, _ := h.env.Registry.Metadata(ctx, mine, chain.MetadataKey("face")); string(v) != "<p>hello</p>" {
		t.Errorf("metadata = %q", v)
	}
	// Cleanup releases only ledger names: alice and the other run's survive.
	if err := CleanupRun(ctx, h.env, run); err != nil {
		t.Fatal(err)
	}
	if o, _ := h.env.Registry.OwnerOf(ctx, mine); !o.IsZero() {
		t.Errorf("own name still registered after cleanup: %s", o)
	}
	if o, _ := h.env.Registry.OwnerOf(ctx, otherName); o.IsZero() {
		t.Error("cleanup of one run released another run's name")
	}
	CleanupRun(ctx, h.env, other)
}

// TestAdminDenyList: a transaction to any admin function is refused by the
// guard at every rung, by selector, before it is signed.
func TestAdminDenyList(t *testing.T) {
	h := newHarness(t, fleet.Propose)
	ctx := context.Background()
	for _, sig := range []string{"adminBurn(string[])", "adminResetAll()", "transferOwnership(address)", "upgradeTo(address)", "upgradeToAndCall(address,bytes)", "diamondCut((address,uint8,bytes4[])[],address,bytes)"} {
		sel := chain.Selector(sig)
		data := append(sel[:], make([]byte, 96)...)
		_, err := h.client.SendRaw(ctx, h.owner, h.env.Registry.Address(), data, nil)
		if !errors.Is(err, chain.ErrRefused) {
			t.Errorf("%s: %v, want refused", sig, err)
		}
	}
	if o, _ := h.env.Registry.OwnerOf(ctx, "alice"); o != h.owner.Address() {
		t.Error("an admin function ran")
	}
}

// TestBudgets: no tool can spend past the run's budget.
func TestBudgets(t *testing.T) {
	h := newHarness(t, fleet.Exercise)
	ctx := context.Background()

	t.Run("writes", func(t *testing.T) {
		run, reg := h.newRun("r-writes", fleet.Budget{MaxWrites: 2})
		defer CleanupRun(ctx, h.env, run)
		out, err := h.call(reg, "qa_create", map[string]any{})
		if err != nil || out.Verdict != fleet.VerdictOK {
			t.Fatalf("first create: %v %v", err, out.Result)
		}
		name := out.Result["name"].(string)
		if out, err := h.call(reg, "qa_publish", map[string]any{"name": name, "source": "a"}); err != nil || out.Verdict != fleet.VerdictOK {
			t.Fatalf("publish within budget: %v %v", err, out.Result)
		}
		_, err = h.call(reg, "qa_publish", map[string]any{"name": name, "source": "b"})
		if !errors.Is(err, fleet.ErrBudget) {
			t.Errorf("third write = %v, want ErrBudget", err)
		}
		if _, err := h.call(reg, "qa_create", map[string]any{}); !errors.Is(err, fleet.ErrBudget) {
			t.Errorf("create past the budget = %v", err)
		}
		if len(run.Sandbox.Entries()) != 1 {
			t.Errorf("ledger has %d names; the refused create must not reserve one", len(run.Sandbox.Entries()))
		}
	})
	t.Run("wei", func(t *testing.T) {
		run, reg := h.newRun("r-wei", fleet.Budget{MaxWei: 1_500_000_000_000_000}) // 1.5 fundings
		defer CleanupRun(ctx, h.env, run)
		var funded uint64
		for range 3 {
			out, err := h.call(reg, "qa_create", map[string]any{})
			if err != nil {
				if !errors.Is(err, fleet.ErrBudget) {
					t.Fatalf("create: %v", err)
				}
				continue
			}
			w, _ := strconv.ParseUint(out.Result["funded_wei"].(string), 10, 64)
			funded += w
			bal, _ := h.client.Balance(ctx, fleet.Address(mustAddr(t, out.Result["owner"].(string))))
			if bal.Uint64() > w {
				t.Errorf("throwaway key holds %s, funded %d", bal, w)
			}
		}
		if funded > 1_500_000_000_000_000 {
			t.Errorf("funded %d wei, budget 1.5e15", funded)
		}
	})
	t.Run("deadline", func(t *testing.T) {
		run, reg := h.newRun("r-deadline", fleet.Budget{Deadline: time.Nanosecond})
		defer CleanupRun(ctx, h.env, run)
		time.Sleep(time.Millisecond)
		if _, err := h.call(reg, "qa_create", map[string]any{}); !errors.Is(err, fleet.ErrBudget) {
			t.Errorf("create after the deadline = %v", err)
		}
	})
}

func mustAddr(t *testing.T, s string) fleet.Address {
	t.Helper()
	a, err := fleet.ParseAddress(s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestFetchFences: qa_fetch reaches only the allowlist and never a special
// address through a wildcard, DNS or a redirect.
func TestFetchFences(t *testing.T) {
	h := newHarness(t, fleet.Observe)
	_, reg := h.newRun("r-fetch", fleet.Budget{})
	u, _ := url.Parse(h.web.URL)
	port := u.Port()
	for _, tc := range []struct{ name, url, want string }{
		{"allowed", h.web.URL + "/alice/", ""},
		{"other port", "http://127.0.0.1:1/", "not on the fetch allowlist"},
		{"localhost name", "http://localhost:" + port + "/", "not on the fetch allowlist"},
		{"metadata", "http://169.254.169.254/latest/meta-data/", "not on the fetch allowlist"},
		{"ipv6 loopback", "http://[::1]:" + port + "/", "not on the fetch allowlist"},
		{"file scheme", "file:///etc/passwd", "scheme"},
		{"credentials", "http://user:pw@" + u.Host + "/", "credentials"},
		{"redirect off list", h.web.URL + "/redirect?to=" + url.QueryEscape("http://127.0.0.1:1/"), "not on the fetch allowlist"},
		{"redirect to metadata", h.web.URL + "/redirect?to=" + url.QueryEscape("http://169.254.169.254/"), "not on the fetch allowlist"},
		{"redirect on list", h.web.URL + "/redirect?to=" + url.QueryEscape(h.web.URL+"/bob/"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := h.call(reg, "qa_fetch", map[string]any{"url": tc.url})
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" {
				if out.Verdict != fleet.VerdictOK || out.Result["status"] != 200 {
					t.Errorf("fetch %s: %v", tc.url, out.Result)
				}
				return
			}
			if out.Verdict != fleet.VerdictError || !strings.Contains(out.Result.Err(), tc.want) {
				t.Errorf("fetch %s: %s %v, want error containing %q", tc.url, out.Verdict, out.Result, tc.want)
			}
		})
	}

	// A wildcard entry whose name resolves to a special address is refused
	// at dial time: hostile DNS cannot steer a fetch into the host.
	allow, _ := NewAllowlist([]string{"*.example.test:" + port})
	f := NewFetcher(allow, 2*time.Second, 1024)
	f.lookup = func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	res, err := f.Get(context.Background(), "http://evil.example.test:"+port+"/")
	if err != nil || res.IsOK() || !strings.Contains(res.Err(), "loopback, private, link-local or metadata") {
		t.Errorf("wildcard to loopback: %v %v", res, err)
	}
	f.lookup = func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("169.254.169.254")}, nil
	}
	if res, _ := f.Get(context.Background(), "http://meta.example.test:"+port+"/"); res.IsOK() {
		t.Errorf("wildcard to metadata fetched: %v", res)
	}
	if res, _ := f.Get(context.Background(), "http://example.test:"+port+"/"); res.IsOK() || !strings.Contains(res.Err(), "not on the fetch allowlist") {
		t.Errorf("apex of a wildcard: %v", res)
	}
	for _, ip := range []string{"127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0", "::1", "fe80::1", "fd00:ec2::254", "::ffff:127.0.0.1", "224.0.0.1"} {
		if !special(netip.MustParseAddr(ip)) {
			t.Errorf("%s not treated as special", ip)
		}
	}
	for _, ip := range []string{"8.8.8.8", "1.1.1.1", "2001:4860:4860::8888"} {
		if special(netip.MustParseAddr(ip)) {
			t.Errorf("%s treated as special", ip)
		}
	}
}

// TestChainReadOnly: qa_chain refuses every write or privileged method.
func TestChainReadOnly(t *testing.T) {
	h := newHarness(t, fleet.Propose)
	_, reg := h.newRun("r-chain", fleet.Budget{})
	for _, m := range []string{"eth_sendRawTransaction", "eth_sendTransaction", "eth_sign", "personal_unlockAccount", "personal_sendTransaction", "debug_traceCall", "debug_setHead", "admin_addPeer", "miner_setEtherbase", "txpool_content", "dev_addWithdrawal"} {
		out, err := h.call(reg, "qa_chain", map[string]any{"method": m, "params": []any{}})
		if err != nil {
			t.Fatal(err)
		}
		if out.Verdict != fleet.VerdictError || !strings.Contains(out.Result.Err(), "not a read-only method") {
			t.Errorf("qa_chain %s: %v", m, out.Result)
		}
	}
	out, _ := h.call(reg, "qa_chain", map[string]any{"method": "owner_of", "params": []any{"alice"}})
	if out.Result["result"] != strings.ToLower(h.owner.Address().String()) {
		t.Errorf("owner_of alice: %v", out.Result)
	}
	for _, sig := range []string{"adminBurn(string[])", "adminResetAll()"} {
		out, _ := h.call(reg, "qa_chain", map[string]any{"method": "simulate", "params": []any{sig}})
		if out.Verdict != fleet.VerdictOK || out.Result["reverted"] != true {
			t.Errorf("simulate %s from a stranger: %v", sig, out.Result)
		}
	}
	out, _ = h.call(reg, "qa_chain", map[string]any{"method": "feedback_range", "params": []any{0, 1000}})
	if out.Verdict != fleet.VerdictOK || out.Result["clamped"] != true {
		t.Errorf("feedback_range: %v", out.Result)
	}
	out, _ = h.call(reg, "qa_chain", map[string]any{"method": "owner_of", "params": map[string]any{"x": 1}})
	if out.Verdict != fleet.VerdictInvalid || !strings.Contains(out.Result.Err(), `"params": want array`) {
		t.Errorf("object params: %v", out.Result)
	}
}

// TestCompile classifies outcomes and kills what outlives the timeout.
func TestCompile(t *testing.T) {
	h := newHarness(t, fleet.Observe)
	run, reg := h.newRun("r-compile", fleet.Budget{})
	for _, tc := range []struct{ source, outcome string }{
		{"let x = 1;", Compiled},
		{"ERR", Rejected},
		{"PANIC", Crashed},
		{"HANG", TimedOut},
		{"OOM", Resource},
		{"BIN", Rejected},
	} {
		out, err := h.call(reg, "qa_compile", map[string]any{"source": tc.source})
		if err != nil {
			t.Fatal(err)
		}
		if out.Result["outcome"] != tc.outcome {
			t.Errorf("%s: outcome %v, want %s (%v)", tc.source, out.Result["outcome"], tc.outcome, out.Result)
		}
		if !json.Valid(mustJSON(t, out.Result)) {
			t.Errorf("%s: result is not valid JSON", tc.source)
		}
	}
	// A crash carries its normalized crash state: literals masked, the
	// target's frames.
	out, _ := h.call(reg, "qa_compile", map[string]any{"source": "PANIC 1"})
	if got, want := out.Result["crash_state"], "panic: runtime error: index out of range [N] with length N @ main.parse"; got != want {
		t.Errorf("crash_state %q, want %q", got, want)
	}
	// timeout_ms only shortens the configured timeout (minimizing hangs).
	start := time.Now()
	out, _ = h.call(reg, "qa_compile", map[string]any{"source": "HANG", "timeout_ms": 300})
	if out.Result["outcome"] != TimedOut || time.Since(start) > 3*time.Second || out.Result["timeout_ms"] != int64(300) {
		t.Errorf("HANG with timeout_ms 300: %v after %s", out.Result, time.Since(start))
	}
	start = time.Now()
	out, _ = h.call(reg, "qa_compile", map[string]any{"source": "FORK"})
	if out.Result["outcome"] != TimedOut || time.Since(start) > 10*time.Second {
		t.Fatalf("FORK: %v after %s", out.Result, time.Since(start))
	}
	b, err := os.ReadFile(filepath.Join(run.Sandbox.JailDir(), "child.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	for deadline := time.Now().Add(3 * time.Second); processAlive(pid); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the compiler's child %d outlived the timeout", pid)
		}
	}
	big := strings.Repeat("x", (1<<20)+1)
	out, _ = h.call(reg, "qa_compile", map[string]any{"source": big})
	if out.Verdict != fleet.VerdictInvalid || !strings.Contains(out.Result.Err(), "longer than the maximum") {
		t.Errorf("oversize source: %v", out.Result["error"])
	}
	// A binary input travels as base64 and reaches the compiler byte for
	// byte (a JSON string would have replaced its invalid UTF-8).
	bin := []byte("let x = 1;\xff\xfe\x00\x80")
	out, _ = h.call(reg, "qa_compile", map[string]any{"source_base64": base64.StdEncoding.EncodeToString(bin)})
	if out.Verdict != fleet.VerdictOK || out.Result["source_bytes"] != int64(len(bin)) && out.Result["source_bytes"] != len(bin) {
		t.Errorf("source_base64: %v", out.Result)
	}
	if got, err := os.ReadFile(filepath.Join(run.Sandbox.JailDir(), "src", "input.src")); err != nil || !bytes.Equal(got, bin) {
		t.Errorf("the compiler read %q (%v), want %q", got, err, bin)
	}
	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"source": "x", "source_base64": "eA=="}, "not both"},
		{map[string]any{"source_base64": "not base64!"}, "source_base64 is not base64"},
	} {
		out, _ = h.call(reg, "qa_compile", tc.args)
		if out.Result.IsOK() || !strings.Contains(out.Result.Err(), tc.want) {
			t.Errorf("qa_compile %v: %v, want an error naming %q", tc.args, out.Result, tc.want)
		}
	}
	h.env.Target.Compiler = nil
	out, _ = h.call(reg, "qa_compile", map[string]any{"source": "x"})
	if out.Verdict != fleet.VerdictError || !strings.Contains(out.Result.Err(), "target.compiler is not configured") {
		t.Errorf("no compiler: %v", out.Result)
	}
}

func processAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(b))
	return len(f) > 2 && f[2] != "Z"
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCallAndBadInput covers qa_call's answers and malformed arguments.
func TestCallAndBadInput(t *testing.T) {
	h := newHarness(t, fleet.Exercise)
	_, reg := h.newRun("r-call", fleet.Budget{})
	for _, tc := range []struct {
		args map[string]any
		hint string
	}{
		{map[string]any{"target": "alice", "message": "hi"}, "ok"},
		{map[string]any{"target": "silent", "message": "hi"}, "empty_reply"},
		{map[string]any{"target": "x", "message": "", "raw_body": "{not json"}, "server_error_with_trace"},
	} {
		out, _ := h.call(reg, "qa_call", tc.args)
		if out.Verdict != fleet.VerdictOK || out.Result["hint"] != tc.hint {
			t.Errorf("qa_call %v: %v", tc.args, out.Result)
		}
	}
	out, _ := h.call(reg, "qa_call", map[string]any{"target": "a", "message": "b", "headers": map[string]string{"Host": "evil"}})
	if out.Verdict != fleet.VerdictError {
		t.Errorf("Host header accepted: %v", out.Result)
	}
	out, _ = h.call(reg, "qa_call", map[string]any{"target": 7, "message": "b"})
	if out.Verdict != fleet.VerdictInvalid || !strings.Contains(out.Result.Err(), `"target": want string`) {
		t.Errorf("bad arg type: %v", out.Result)
	}
	// An unreachable platform: a clear error, no hang past the timeout.
	h.env.Target.Call = "http://127.0.0.1:1/call"
	start := time.Now()
	out, _ = h.call(reg, "qa_call", map[string]any{"target": "a", "message": "b"})
	if out.Verdict != fleet.VerdictError || out.Result["hint"] != "unreachable" || time.Since(start) > 5*time.Second {
		t.Errorf("unreachable: %v after %s", out.Result, time.Since(start))
	}
}

// TestCrashMidMint kills the run's process (simulated by abandoning the
// sandbox at each step of a mint) and checks the next start's
// reconciliation releases the names and sweeps the funds.
func TestReconcileAfterCrash(t *testing.T) {
	h := newHarness(t, fleet.Exercise)
	ctx := context.Background()
	run, reg := h.newRun("r-crash", fleet.Budget{})
	// One fully minted name, and one reserved whose mint was never sent.
	out, _ := h.call(reg, "qa_create", map[string]any{})
	minted := out.Result["name"].(string)
	key, _ := chain.GenerateKey()
	chain.WriteKeyFile(filepath.Join(run.Sandbox.KeysDir(), "k9.key"), key)
	half, _ := run.Sandbox.Reserve(key.Address().String(), "k9.key")
	h.client.Transfer(ctx, h.sponsor, key.Address(), big.NewInt(1e15))
	run.Sandbox.Abandon() // the process died here

	done, err := Reconcile(ctx, h.env, filepath.Join(h.dataDir, "qa-sandbox"))
	if err != nil {
		t.Fatal(err)
	}
	if len(done) != 1 || done[0].RunID != "r-crash" {
		t.Fatalf("reconciled %+v", done)
	}
	for _, n := range []string{minted, half} {
		if o, _ := h.env.Registry.OwnerOf(ctx, n); !o.IsZero() {
			t.Errorf("%s still registered to %s", n, o)
		}
	}
	assertSwept(t, h, filepath.Join(run.Sandbox.Dir(), "keys"))
	if again, _ := sandbox.FindCrashed(filepath.Join(h.dataDir, "qa-sandbox")); len(again) != 0 {
		t.Errorf("still crashed after reconcile: %+v", again)
	}
}

// assertSwept checks every key in dir holds less than one transfer's fee.
func assertSwept(t *testing.T, h *harness, dir string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.key"))
	if len(files) == 0 {
		t.Fatal("no keys to check")
	}
	dust := big.NewInt(21_000 * 10_000_000_000) // 21000 gas at 10 gwei
	for _, f := range files {
		k, err := chain.LoadKey(f)
		if err != nil {
			t.Fatal(err)
		}
		bal, _ := h.client.Balance(context.Background(), k.Address())
		if bal.Cmp(dust) > 0 {
			t.Errorf("key %s still holds %s wei", k.Address(), bal)
		}
	}
}

// TestNoKeyMaterialLeaks greps the whole data dir, and every tool result,
// for private keys: they may only appear in key files.
func TestNoKeyMaterialLeaks(t *testing.T) {
	h := newHarness(t, fleet.Exercise)
	run, reg := h.newRun("r-leak", fleet.Budget{})
	var results []byte
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"qa_create", map[string]any{}},
		{"qa_compile", map[string]any{"source": "PANIC"}},
		{"qa_report", map[string]any{"severity": "low", "surface": "compiler", "summary": "leak test", "repro": map[string]any{"tool": "qa_compile", "args": map[string]any{"source": "PANIC"}}}},
	} {
		out, _ := h.call(reg, c.tool, c.args)
		results = append(results, mustJSON(t, out.Result)...)
		if c.tool == "qa_create" {
			results = append(results, mustJSON(t, out.Result)...)
		}
	}
	CleanupRun(context.Background(), h.env, run)
	var secrets []string
	for _, k := range []*chain.Key{h.sponsor, h.fleetKey, h.owner} {
		secrets = append(secrets, hex.EncodeToString(k.PrivateKey().D.FillBytes(make([]byte, 32))))
	}
	keyFiles, _ := filepath.Glob(filepath.Join(run.Sandbox.KeysDir(), "*.key"))
	for _, f := range keyFiles {
		k, _ := chain.LoadKey(f)
		secrets = append(secrets, hex.EncodeToString(k.PrivateKey().D.FillBytes(make([]byte, 32))))
	}
	if len(secrets) < 4 {
		t.Fatalf("only %d secrets to look for", len(secrets))
	}
	check := func(where string, b []byte) {
		low := strings.ToLower(string(b))
		for _, s := range secrets {
			if strings.Contains(low, s) {
				t.Errorf("private key material in %s", where)
			}
		}
	}
	check("tool results", results)
	filepath.WalkDir(h.dataDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Base(filepath.Dir(p)) == "keys" {
			return nil
		}
		b, _ := os.ReadFile(p)
		check(p, b)
		return nil
	})
}
