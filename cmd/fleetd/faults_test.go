package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/faultnet"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/sandbox"
	"github.com/qafleet/fleetd/trajectory"
	"go.yaml.in/yaml/v3"
)

// faultFixture is a fleet fixture whose config reaches the node through a
// fault proxy (the testbed still talks to the node directly: it is the
// platform, not fleetd).
type faultFixture struct {
	*fleetFixture
	proxy *faultnet.Proxy
	logHex,
	regHex string // the FeedbackLog's and registry's addresses, lowercase hex without 0x
}

func newFaultFixture(t *testing.T, dial fleet.Dial, fast map[string]fleet.Trigger) *faultFixture {
	t.Helper()
	return wrapFaultFixture(t, newFleetFixture(t, dial, fast))
}

// wrapFaultFixture puts a fault proxy between ff's config and its node.
func wrapFaultFixture(t *testing.T, ff *fleetFixture) *faultFixture {
	t.Helper()
	f := &faultFixture{fleetFixture: ff}
	var err error
	if f.proxy, err = faultnet.Start(strings.TrimPrefix(f.dn.Info.RPC, "http://")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.proxy.Close() })
	b, err := os.ReadFile(f.config)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	ch := cfg["chain"].(map[string]any)
	ch["rpc"] = "http://" + f.proxy.Addr()
	ch["timeout_seconds"] = 2 // a blackholed request fails in 2 s, not 10
	if b, err = yaml.Marshal(cfg); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.config, b, 0o600); err != nil {
		t.Fatal(err)
	}
	f.logHex = strings.ToLower(strings.TrimPrefix(f.dn.Info.FeedbackLog, "0x"))
	f.regHex = strings.ToLower(strings.TrimPrefix(f.tb.Registry(), "0x"))
	return f
}

// rpcMethod reports whether req is a JSON-RPC call of method.
func rpcMethod(req []byte, method string) bool {
	return bytes.Contains(req, []byte(`"method":"`+method+`"`))
}

// outboxItems lists the fleet identity's outbox.
func (f *faultFixture) outboxItems(t *testing.T) []string {
	t.Helper()
	items, _ := filepath.Glob(filepath.Join(f.dataDir, "outbox", "*.json"))
	return items
}

// TestProbePostsWhatTheNodeDidNotTake: the node fails the first posts of a
// probe's findings (a reset gas estimate, then truncated answers to the
// transactions themselves, which did reach the node). The probe queues them
// and, before it exits, posts its outbox: it ends empty, every acknowledged
// finding on the log exactly once (issue 25: they waited for a reconcile a
// CronJob's throwaway volume never runs).
func TestProbePostsWhatTheNodeDidNotTake(t *testing.T) {
	f := newFaultFixture(t, fleet.Observe, nil)
	var estimates, sends atomic.Int32
	f.proxy.SetRule(func(req []byte) faultnet.Fault {
		toLog := bytes.Contains(bytes.ToLower(req), []byte(f.logHex))
		switch {
		case rpcMethod(req, "eth_estimateGas") && toLog && estimates.Add(1) <= 2:
			return faultnet.Fault{Kind: faultnet.Reset}
		case rpcMethod(req, "eth_sendRawTransaction") && toLog && sends.Add(1) <= 2:
			return faultnet.Fault{Kind: faultnet.Truncate}
		}
		return faultnet.Fault{}
	})
	out, stderr, code := run(t, "", "probe", "security", "--config", f.config)
	if code != 0 {
		t.Fatalf("probe: exit %d\n%s%s", code, out, stderr)
	}
	if !strings.Contains(out, "finding queued") {
		t.Fatalf("no finding was queued: the faults missed the posts (faults %v)\n%s", f.proxy.Counts(), out)
	}
	if items := f.outboxItems(t); len(items) != 0 {
		t.Errorf("the probe exited with %d entries in its outbox\n%s", len(items), stderr)
	}
	h := checkHistory(t, f.fleetFixture)
	if h.acked == 0 {
		t.Error("no finding acknowledged")
	}
	t.Logf("faults injected: %v; %d findings acknowledged", f.proxy.Counts(), h.acked)
}

// TestProbeSaysWhatStaysQueued: the node takes no post at all. The probe
// tries its outbox a few times, then exits 1 naming how many entries are
// still queued and what will post them; nothing is lost.
// (queuedLine: the count and its noun agree, "1 outbox entry", "2 outbox
// entries", and no "entries are could not be posted".)
var queuedLine = regexp.MustCompile(`but (1 outbox entry|[02-9]\d* outbox entries|1\d+ outbox entries) could not be posted`)

func TestProbeSaysWhatStaysQueued(t *testing.T) {
	f := newFaultFixture(t, fleet.Observe, nil)
	f.proxy.SetRule(func(req []byte) faultnet.Fault {
		if rpcMethod(req, "eth_estimateGas") && bytes.Contains(bytes.ToLower(req), []byte(f.logHex)) {
			return faultnet.Fault{Kind: faultnet.Reset}
		}
		return faultnet.Fault{}
	})
	out, stderr, code := run(t, "", "probe", "security", "--config", f.config)
	if code != exitInfra {
		t.Fatalf("probe with no post taken: exit %d, want %d\n%s%s", code, exitInfra, out, stderr)
	}
	items := f.outboxItems(t)
	if len(items) == 0 {
		t.Fatal("nothing queued")
	}
	if !strings.Contains(stderr, "still queued in") || !strings.Contains(stderr, "could not be posted") {
		t.Errorf("stderr does not say what is still queued:\n%s", stderr)
	}
	if !queuedLine.MatchString(stderr) {
		t.Errorf("stderr does not count the queued entries in plain words (\"but N outbox entries could not be posted\"):\n%s", stderr)
	}
	f.proxy.SetRule(nil)
	if out, stderr, code := run(t, "", "reconcile", "--config", f.config); code != 0 {
		t.Fatalf("reconcile after the outage: exit %d\n%s%s", code, out, stderr)
	}
	if left := f.outboxItems(t); len(left) != 0 {
		t.Errorf("%d entries left after reconcile", len(left))
	}
	checkHistory(t, f.fleetFixture)
}

// TestProbeCancelledBySignal: SIGINT or SIGTERM (main cancels the context)
// in the middle of a probe: the run stops at its next tool boundary, cleans
// up and writes its footer, and the probe exits 4 saying it was cancelled,
// not 1 (infrastructure).
func TestProbeCancelledBySignal(t *testing.T) {
	f := newFleetFixture(t, fleet.Observe, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, []string{"probe", "security", "--config", f.config}, strings.NewReader(""), &out, &errb)
	}()
	deadline := time.Now().Add(60 * time.Second)
	for strings.Count(errb.String(), "\n  ") < 3 { // three turns narrated
		if time.Now().After(deadline) {
			t.Fatalf("no turns in 60s: %s", errb.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	var code int
	select {
	case code = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the probe did not stop within 60s of cancellation")
	}
	if code != exitCancelled {
		t.Fatalf("cancelled probe: exit %d, want %d\n%s%s", code, exitCancelled, out.String(), errb.String())
	}
	if !strings.Contains(errb.String(), "cancelled by a signal") {
		t.Errorf("stderr does not say the run was cancelled:\n%s", errb.String())
	}
	files, _ := filepath.Glob(filepath.Join(f.dataDir, trajectory.RunsDir, "*.jsonl"))
	if len(files) != 1 {
		t.Fatalf("%d run records, want 1", len(files))
	}
	s, err := trajectory.Summary(files[0])
	if err != nil || s.Outcome != trajectory.OutcomeCancelled {
		t.Errorf("run record: %+v, %v; want outcome cancelled", s, err)
	}
	checkHistory(t, f)
}

// TestReconcileSaysWhatIsHeld: a `fleetd tool call qa_create` whose release
// keeps failing leaves its sandbox open, its name held and its key funded,
// and a probe killed mid-run left a record without a footer. `fleetd
// reconcile` while the release still fails exits 1 naming the held name
// (issue 25: it exited 1 printing that nothing was held) and closes the
// dead run's record with a footer; once the node answers it releases the
// name, sweeps the key and exits 0, and so does --from-chain.
func TestReconcileSaysWhatIsHeld(t *testing.T) {
	f := newFaultFixture(t, fleet.Exercise, nil)
	sel := chain.Selector("release(string)")
	relHex := []byte(hex.EncodeToString(sel[:]))
	failRelease := func(req []byte) faultnet.Fault {
		if rpcMethod(req, "eth_estimateGas") && bytes.Contains(req, relHex) {
			return faultnet.Fault{Kind: faultnet.Reset}
		}
		return faultnet.Fault{}
	}
	f.proxy.SetRule(failRelease)
	out, stderr, code := run(t, "", "tool", "call", "qa_create", "--config", f.config)
	if code == 0 {
		t.Fatalf("tool call with every release failing: exit 0\n%s%s", out, stderr)
	}
	var res struct{ Name, Owner string }
	json.Unmarshal([]byte(out), &res)
	if res.Name == "" {
		t.Fatalf("qa_create minted nothing: %s%s", out, stderr)
	}
	// A run record a killed process left without a footer.
	w, err := trajectory.Create(f.dataDir, "r-20200101-000000-dead01",
		trajectory.Header{RunID: "r-20200101-000000-dead01", Specialist: "smoke", StartedAt: time.Now().UTC()})
	if err != nil {
		t.Fatal(err)
	}
	_ = w // never closed: the process "died"

	out, stderr, code = run(t, "", "reconcile", "--config", f.config)
	if code != 1 || !strings.Contains(out, "still held: "+res.Name) || strings.Contains(out, "no crashed runs") {
		t.Errorf("reconcile with the release failing: exit %d, want 1 naming %s\n%s%s", code, res.Name, out, stderr)
	}
	if !strings.Contains(stderr, res.Name) {
		t.Errorf("the error does not name %s: %s", res.Name, stderr)
	}
	// What the history checker would say of the sandbox left open: no
	// record (a tool call keeps none), the held name's release error, the
	// funding mined, the key still funded.
	cl, err := chain.Dial(t.Context(), f.dn.Info.RPC, chain.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var open string
	dirs, _ := filepath.Glob(filepath.Join(f.dataDir, "qa-sandbox", "r-*"))
	for _, dir := range dirs {
		if !fileExists(filepath.Join(dir, "closed")) {
			open = sandboxHistory(t.Context(), cl, cl.Registry(mustParseAddr(t, f.tb.Registry())), f.fleetFixture, dir)
		}
	}
	for _, want := range []string{"no run record at all", "ledger " + res.Name + " minted", "release error", "(mined past)", "owned by " + res.Owner, "sponsor nonce mined 0x"} {
		if !strings.Contains(open, want) {
			t.Errorf("the open sandbox's history does not say %q: %s", want, open)
		}
	}
	if !strings.Contains(out, "r-20200101-000000-dead01  run record closed") {
		t.Errorf("the dead run's record was not closed:\n%s", out)
	}
	s, err := trajectory.Summary(filepath.Join(f.dataDir, trajectory.RunsDir, "r-20200101-000000-dead01.jsonl"))
	if err != nil || s.Outcome != trajectory.OutcomeHarnessError {
		t.Errorf("dead run's record: %+v, %v; want a harness_error footer", s, err)
	}

	f.proxy.SetRule(nil)
	out, stderr, code = run(t, "", "reconcile", "--config", f.config)
	if code != 0 || !strings.Contains(out, "1 names released") {
		t.Fatalf("reconcile after the faults: exit %d\n%s%s", code, out, stderr)
	}
	if out, stderr, code = run(t, "", "reconcile", "--from-chain", "--older-than", "0s", "--config", f.config); code != 0 {
		t.Fatalf("reconcile --from-chain: exit %d\n%s%s", code, out, stderr)
	}
	checkHistory(t, f.fleetFixture)
	t.Logf("faults injected: %v", f.proxy.Counts())
}

// history is what checkHistory counted.
type history struct {
	acked, onLog, runs, keys int
}

// checkHistory is the history checker: after faults stop, what fleetd
// acknowledged is checked against the chain. Every finding a run record
// acknowledged (posted, queued or deduped) is on the log exactly once under
// the fleet identity, no fingerprint twice; the outbox is empty; every run
// record ends with a footer; every sandbox is closed, every name its ledger
// records is unowned, and every throwaway key holds 0 wei.
func checkHistory(t *testing.T, f *fleetFixture) history {
	t.Helper()
	ctx := context.Background()
	var h history
	cl, err := chain.Dial(ctx, f.dn.Info.RPC, chain.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	fleetKey, _ := chain.LoadKey(f.dn.Info.FleetKeyFile)
	perFP := map[string]int{}
	if _, err := cl.FeedbackLog(mustParseAddr(t, f.dn.Info.FeedbackLog)).Scan(ctx, 0, func(p []chain.Entry) error {
		for _, e := range p {
			if e.Sender != fleetKey.Address() {
				continue
			}
			if fd, err := fleet.Parse(e.Text); err == nil && fd.Fingerprint != "" {
				perFP[fd.Fingerprint]++
				h.onLog++
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for fp, n := range perFP {
		if n != 1 {
			t.Errorf("history: finding %s is on the log %d times", fp, n)
		}
	}
	files, _ := filepath.Glob(filepath.Join(f.dataDir, trajectory.RunsDir, "*.jsonl"))
	for _, file := range files {
		rec, err := trajectory.ReadAll(file)
		if err != nil {
			t.Errorf("history: %s: %v", filepath.Base(file), err)
			continue
		}
		h.runs++
		if rec.Footer == nil {
			t.Errorf("history: %s ends without a footer", filepath.Base(file))
		}
		for _, turn := range rec.Turns() {
			if turn.ProposedAction == nil || turn.ProposedAction.Tool != "qa_report" || turn.ExecutedAction == nil {
				continue
			}
			var res struct {
				OK     bool   `json:"ok"`
				Status string `json:"status"`
				FP     string `json:"fp"`
			}
			raw, _ := turn.Result.(json.RawMessage)
			json.Unmarshal(raw, &res)
			if !res.OK || res.Status == "rate_limited" {
				continue
			}
			h.acked++
			if perFP[res.FP] != 1 {
				t.Errorf("history: %s turn %d: finding %s acknowledged (%s), on the log %d times", filepath.Base(file), turn.Index, res.FP, res.Status, perFP[res.FP])
			}
		}
	}
	if items, _ := filepath.Glob(filepath.Join(f.dataDir, "outbox", "*.json")); len(items) != 0 {
		t.Errorf("history: %d entries left in the outbox", len(items))
	}
	reg := cl.Registry(mustParseAddr(t, f.tb.Registry()))
	dirs, _ := filepath.Glob(filepath.Join(f.dataDir, "qa-sandbox", "r-*"))
	for _, dir := range dirs {
		if _, err := os.Stat(filepath.Join(dir, "closed")); err != nil {
			t.Errorf("history: sandbox %s not closed: %s", filepath.Base(dir), sandboxHistory(ctx, cl, reg, f, dir))
		}
		b, _ := os.ReadFile(filepath.Join(dir, "ledger.json"))
		var ledger []sandbox.LedgerEntry
		json.Unmarshal(b, &ledger)
		for _, e := range ledger {
			if owner, err := reg.OwnerOf(ctx, e.Name); err != nil || !owner.IsZero() {
				// What tells a name held for good from one released late:
				// the ledger's verdict, the run's end and the key's state.
				_, closed := os.Stat(filepath.Join(dir, "closed"))
				why := fmt.Sprintf("ledger %s, sandbox closed %v", e.State, closed == nil)
				if e.MintNonce != nil {
					why += fmt.Sprintf(", mint nonce %d", *e.MintNonce)
				}
				if e.ReleaseError != "" {
					why += fmt.Sprintf(", release error %q after %d attempts", e.ReleaseError, e.ReleaseAttempts)
				}
				if s, err := trajectory.Summary(filepath.Join(f.dataDir, trajectory.RunsDir, filepath.Base(dir)+".jsonl")); err == nil {
					why += fmt.Sprintf(", %s run %s, ended %s", s.Specialist, s.Outcome, s.EndedAt.Format("15:04:05.000"))
				}
				if a, aerr := fleet.ParseAddress(e.Owner); aerr == nil {
					bal, berr := cl.Balance(ctx, a)
					why += fmt.Sprintf(", key %s holds %v wei (%v)", a, bal, berr)
				}
				t.Errorf("history: %s still registered to %s (%v): %s", e.Name, owner, err, why)
			}
		}
		keys, _ := filepath.Glob(filepath.Join(dir, "keys", "*.key"))
		for _, kf := range keys {
			k, err := chain.LoadKey(kf)
			if err != nil {
				t.Error(err)
				continue
			}
			h.keys++
			if bal, err := cl.Balance(ctx, k.Address()); err != nil || bal.Sign() != 0 {
				t.Errorf("history: throwaway key %s holds %s wei (%v): %s", k.Address(), bal, err, keyHistory(ctx, cl, f, dir, filepath.Base(kf), k.Address()))
			}
		}
	}
	return h
}

// sandboxHistory says why a sandbox may have been left open: the run's
// record (none at all: the run failed before it had one; else its outcome,
// its end and the footer's summary, which says "cleanup failed: ..." when
// the run's own cleanup failed, and the harness error), whether a process
// still holds its lock, each ledger entry (state, release error and
// attempts, funding and mint nonces and whether each has been mined past,
// the name's owner now), each key's balance, and the sponsor's mined and
// pending nonces (a funding noted at a nonce the node never took keeps its
// run open until the sponsor sends again).
func sandboxHistory(ctx context.Context, cl *chain.Client, reg *chain.Registry, f *fleetFixture, dir string) string {
	var why []string
	id := filepath.Base(dir)
	rec, err := trajectory.ReadAll(filepath.Join(f.dataDir, trajectory.RunsDir, id+".jsonl"))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		why = append(why, "no run record at all")
	case err != nil:
		why = append(why, fmt.Sprintf("run record unreadable: %v", err))
	case rec.Footer == nil:
		why = append(why, fmt.Sprintf("%s run started %s, its record has no footer", rec.Header.Specialist, rec.Header.StartedAt.UTC().Format("15:04:05.000")))
	default:
		s := fmt.Sprintf("%s run %s, started %s, ended %s, summary %q", rec.Header.Specialist, rec.Footer.Outcome,
			rec.Header.StartedAt.UTC().Format("15:04:05.000"), rec.Footer.EndedAt.UTC().Format("15:04:05.000"), rec.Footer.FinalSummary)
		if rec.Footer.HarnessError != "" {
			s += fmt.Sprintf(", harness error %q", rec.Footer.HarnessError)
		}
		why = append(why, s)
	}
	if sandbox.Live(filepath.Dir(dir), id) {
		why = append(why, "its lock is held by a live process")
	}
	b, err := os.ReadFile(filepath.Join(dir, "ledger.json"))
	var ledger []sandbox.LedgerEntry
	if err == nil {
		err = json.Unmarshal(b, &ledger)
	}
	if err != nil {
		why = append(why, fmt.Sprintf("ledger: %v", err))
	}
	if len(ledger) == 0 {
		why = append(why, "ledger empty")
	}
	sponsor := f.dn.Sponsor.Address()
	settled := func(from fleet.Address, n uint64) string {
		ok, err := cl.NonceSettled(ctx, from, n)
		switch {
		case err != nil:
			return fmt.Sprintf("(%v)", err)
		case ok:
			return "(mined past)"
		}
		return "(NOT mined past)"
	}
	for _, e := range ledger {
		s := fmt.Sprintf("ledger %s %s (at %s, key %s %s)", e.Name, e.State, e.At.UTC().Format("15:04:05.000"), e.KeyFile, e.Owner)
		if e.ReleaseError != "" || e.ReleaseAttempts > 0 {
			s += fmt.Sprintf(", release error %q after %d attempts", e.ReleaseError, e.ReleaseAttempts)
		}
		if e.FundingNonce != nil {
			s += fmt.Sprintf(", funding sponsor nonce %d %s", *e.FundingNonce, settled(sponsor, *e.FundingNonce))
		}
		if a, aerr := fleet.ParseAddress(e.Owner); aerr == nil && e.MintNonce != nil {
			s += fmt.Sprintf(", mint nonce %d %s", *e.MintNonce, settled(a, *e.MintNonce))
		}
		if owner, err := reg.OwnerOf(ctx, e.Name); err != nil {
			s += fmt.Sprintf(", owner unknown (%v)", err)
		} else {
			s += ", owned by " + owner.String()
		}
		why = append(why, s)
	}
	keys, _ := filepath.Glob(filepath.Join(dir, "keys", "*.key"))
	for _, kf := range keys {
		if k, err := chain.LoadKey(kf); err != nil {
			why = append(why, fmt.Sprintf("key %s: %v", filepath.Base(kf), err))
		} else {
			bal, err := cl.Balance(ctx, k.Address())
			why = append(why, fmt.Sprintf("key %s %s holds %v wei (%v)", filepath.Base(kf), k.Address(), bal, err))
		}
	}
	var mined, pending string
	if raw, err := gethCall(f.dn.Info.RPC, "eth_getTransactionCount", sponsor.String(), "latest"); err == nil {
		json.Unmarshal(raw, &mined)
	}
	if raw, err := gethCall(f.dn.Info.RPC, "eth_getTransactionCount", sponsor.String(), "pending"); err == nil {
		json.Unmarshal(raw, &pending)
	}
	why = append(why, fmt.Sprintf("sponsor nonce mined %s, pending %s", mined, pending))
	return strings.Join(why, "; ")
}

// keyHistory says what tells a funding that landed late from a sweep
// that was missed: the key's ledger entries (state, the funding's sponsor
// nonce), the run's end and its sandbox's closing, and every funding of
// the key on chain (block, time, sponsor nonce).
func keyHistory(ctx context.Context, cl *chain.Client, f *fleetFixture, dir, keyFile string, addr fleet.Address) string {
	var why []string
	b, _ := os.ReadFile(filepath.Join(dir, "ledger.json"))
	var ledger []sandbox.LedgerEntry
	json.Unmarshal(b, &ledger)
	for _, e := range ledger {
		if e.KeyFile != keyFile {
			continue
		}
		s := fmt.Sprintf("ledger %s %s (at %s)", e.Name, e.State, e.At.Format("15:04:05.000"))
		if e.FundingNonce != nil {
			s += fmt.Sprintf(", funding nonce %d", *e.FundingNonce)
		}
		if e.MintNonce != nil {
			s += fmt.Sprintf(", mint nonce %d", *e.MintNonce)
		}
		why = append(why, s)
	}
	if st, err := os.Stat(filepath.Join(dir, "closed")); err == nil {
		why = append(why, "sandbox closed "+st.ModTime().UTC().Format("15:04:05.000"))
	}
	if s, err := trajectory.Summary(filepath.Join(f.dataDir, trajectory.RunsDir, filepath.Base(dir)+".jsonl")); err == nil {
		why = append(why, fmt.Sprintf("%s run %s, ended %s", s.Specialist, s.Outcome, s.EndedAt.UTC().Format("15:04:05.000")))
	}
	head, err := cl.BlockNumber(ctx)
	if err != nil {
		return strings.Join(append(why, err.Error()), "; ")
	}
	fundings, err := cl.FundingsBy(ctx, f.dn.Sponsor.Address(), 0, head)
	if err != nil {
		why = append(why, err.Error())
	}
	for _, fd := range fundings {
		if fd.To != addr {
			continue
		}
		s := fmt.Sprintf("funded %s wei in block %d by %s", fd.Wei, fd.Block, fd.Tx)
		if raw, err := gethCall(f.dn.Info.RPC, "eth_getTransactionByHash", fd.Tx); err == nil {
			var tx struct{ Nonce string }
			json.Unmarshal(raw, &tx)
			s += " sponsor nonce " + tx.Nonce
		}
		if raw, err := gethCall(f.dn.Info.RPC, "eth_getBlockByNumber", fmt.Sprintf("0x%x", fd.Block), false); err == nil {
			var blk struct{ Timestamp string }
			json.Unmarshal(raw, &blk)
			if ts, err := strconv.ParseUint(strings.TrimPrefix(blk.Timestamp, "0x"), 16, 64); err == nil {
				s += " at " + time.Unix(int64(ts), 0).UTC().Format("15:04:05")
			}
		}
		why = append(why, s)
	}
	return strings.Join(why, "; ")
}

// TestDaemonStartsWithTheNodeDown: `fleetd run` while its node is down
// (issue 25: it refused to start, exit 2). It starts degraded: /healthz
// answers, /api/status and /metrics say the node is down, the console's
// /api/fleet shows the chain unreachable, and no run starts. When the node
// comes back the daemon catches up (the entry queued during the outage is
// posted, once) and runs start; when the node goes away again under the
// running daemon and comes back, the same happens.
func TestDaemonStartsWithTheNodeDown(t *testing.T) {
	f := newFaultFixture(t, fleet.Observe, map[string]fleet.Trigger{"smoke": {Every: 2 * time.Second}})
	f.proxy.SetDown(true)
	const note = "an operator's note, queued while the node is down"
	if out, stderr, code := run(t, "", "findings", "post", "--text", note, "--config", f.config); code != 0 || !strings.Contains(out, "queued") {
		t.Fatalf("findings post with the node down: exit %d\n%s%s", code, out, stderr)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d := startTestDaemon(t, ctx, f.config)
	base, done, errb := d.base, d.done, d.errb
	get := func(path string) string {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
		}
		return string(b)
	}
	var st struct {
		Node    struct{ Up bool }
		Outbox  int
		Running []string
	}
	if body := get("/healthz"); !strings.Contains(body, "ok") {
		t.Errorf("/healthz: %q", body)
	}
	json.Unmarshal([]byte(get("/api/status")), &st)
	if st.Node.Up || st.Outbox != 1 {
		t.Errorf("/api/status with the node down: %+v; want node down, 1 queued", st)
	}
	if m := get("/metrics"); !strings.Contains(m, "fleetd_node_up 0") || !strings.Contains(m, "fleetd_node_outages_total 1") {
		t.Errorf("/metrics does not say the node is down:\n%s", grepLines(m, "fleetd_node"))
	}
	var fl struct{ Chain struct{ OK bool } }
	json.Unmarshal([]byte(get("/api/fleet")), &fl)
	if fl.Chain.OK {
		t.Error("/api/fleet says the chain is fine while the node is down")
	}
	time.Sleep(3 * time.Second) // smoke fires every 2 s: nothing may start
	if runs, _ := filepath.Glob(filepath.Join(f.dataDir, trajectory.RunsDir, "*.jsonl")); len(runs) != 0 {
		t.Errorf("%d runs started while the node was down", len(runs))
	}

	f.proxy.SetDown(false)
	waitFor(t, 60*time.Second, "the daemon to catch up", func() bool {
		json.Unmarshal([]byte(get("/api/status")), &st)
		return st.Node.Up && st.Outbox == 0
	})
	waitFor(t, 60*time.Second, "a run after the node came back", func() bool {
		runs, _ := filepath.Glob(filepath.Join(f.dataDir, trajectory.RunsDir, "*.jsonl"))
		return len(runs) > 0
	})
	if m := get("/metrics"); !strings.Contains(m, "fleetd_node_up 1") {
		t.Errorf("/metrics after the node came back:\n%s", grepLines(m, "fleetd_node"))
	}

	// The node goes away under the running daemon (runs in flight) and
	// comes back: the daemon sees it, starts nothing meanwhile, and catches
	// up again.
	f.proxy.SetDown(true)
	waitFor(t, 30*time.Second, "the daemon to see the node go", func() bool {
		json.Unmarshal([]byte(get("/api/status")), &st)
		return !st.Node.Up
	})
	// Starts are counted as the runner accepts them (a run's record file
	// is written later, by the run: one accepted just before the node went
	// read as started after it); every start that saw the node up is
	// accepted before the node reads down (Node.WhileUp).
	startsDuring := startedRuns(get("/metrics"))
	time.Sleep(3 * time.Second)
	if now := startedRuns(get("/metrics")); now != startsDuring {
		t.Errorf("%d runs started while the node was down", now-startsDuring)
	}
	f.proxy.SetDown(false)
	waitFor(t, 60*time.Second, "the daemon to catch up after the second outage", func() bool {
		json.Unmarshal([]byte(get("/api/status")), &st)
		return st.Node.Up && st.Outbox == 0
	})
	if m := get("/metrics"); !strings.Contains(m, "fleetd_node_outages_total 2") {
		t.Errorf("/metrics after two outages:\n%s", grepLines(m, "fleetd_node"))
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("fleetd run exited %d:\n%s", code, tail(errb.String(), 20))
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the daemon did not stop within 60s")
	}
	n := 0
	cl, err := chain.Dial(context.Background(), f.dn.Info.RPC, chain.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	cl.FeedbackLog(mustParseAddr(t, f.dn.Info.FeedbackLog)).Scan(context.Background(), 0, func(p []chain.Entry) error {
		for _, e := range p {
			if e.Text == note {
				n++
			}
		}
		return nil
	})
	if n != 1 {
		t.Errorf("the note queued during the outage is on the log %d times, want 1", n)
	}
	checkHistory(t, f.fleetFixture)
	t.Logf("faults injected: %v", f.proxy.Counts())
}

// waitFor polls cond every 50 ms until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// grepLines returns the lines of s containing sub.
// startedRuns sums fleetd_runs_started_total over specialists in a
// /metrics page.
func startedRuns(metrics string) int {
	n := 0
	for _, l := range strings.Split(metrics, "\n") {
		if strings.HasPrefix(l, "fleetd_runs_started_total{") {
			if _, v, ok := strings.Cut(l, "} "); ok {
				k, _ := strconv.Atoi(v)
				n += k
			}
		}
	}
	return n
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestFaultHarness runs probes at the exercise dial (they mint names, fund
// throwaway keys and post findings) through a fault proxy in front of the
// node that draws a fault for about one response in three: latency, a reset
// mid-response, a truncated response, a blackhole (the request arrives, the
// answer never does) or a slow close; every third probe is also stopped by
// a "signal" part-way; two probe loops run at once. Probes may fail (exit 1) or be cancelled (exit 4),
// never anything else. Then the faults stop, `fleetd reconcile` and
// `reconcile --from-chain` settle what is left, and the history checker
// holds fleetd to what it acknowledged: each acknowledged finding on the
// log exactly once, the outbox empty, every record with a footer, every
// name released, 0 wei in any throwaway key. The faults injected per kind
// are in the test log. FLEETD_FAULT_SECONDS sets how long probes run under
// faults (default 60; a probe started before the end runs to its end).
func TestFaultHarness(t *testing.T) {
	if testing.Short() {
		t.Skip("runs probes under faults for ~1 minute")
	}
	budget := 60 * time.Second
	if s := os.Getenv("FLEETD_FAULT_SECONDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("FLEETD_FAULT_SECONDS=%q: %v", s, err)
		}
		budget = time.Duration(n) * time.Second
	}
	f := newFaultFixture(t, fleet.Exercise, nil)
	seed := faultSeed(t)
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(seed, 0))
	f.proxy.SetRule(func(req []byte) faultnet.Fault {
		mu.Lock()
		defer mu.Unlock()
		if rng.IntN(3) != 0 {
			return faultnet.Fault{}
		}
		switch k := rng.IntN(20); {
		case k < 6:
			return faultnet.Fault{Kind: faultnet.Latency, Delay: time.Duration(20+rng.IntN(280)) * time.Millisecond}
		case k < 11:
			return faultnet.Fault{Kind: faultnet.Reset, Bytes: rng.IntN(64)}
		case k < 15:
			return faultnet.Fault{Kind: faultnet.Truncate, Bytes: rng.IntN(64)}
		case k < 16:
			return faultnet.Fault{Kind: faultnet.Blackhole} // costs the 2 s request timeout
		default:
			return faultnet.Fault{Kind: faultnet.SlowClose, Delay: time.Duration(10+rng.IntN(200)) * time.Millisecond}
		}
	})
	// Two probe loops at once, as two CronJobs sharing a data dir would.
	specialists := []string{"security", "smoke", "ux", "security", "perf"}
	var (
		exitMu  sync.Mutex
		exits   = map[int]int{}
		took    []time.Duration
		cancels int // probes stopped by a "signal" part-way
		wg      sync.WaitGroup
	)
	start := time.Now()
	for loop := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := loop; time.Since(start) < budget; i += 2 {
				sp := specialists[i%len(specialists)]
				ctx, cancel := context.WithCancel(context.Background())
				if i%3 == 2 {
					exitMu.Lock()
					cancels++
					exitMu.Unlock()
					mu.Lock()
					after := time.Duration(300+rng.IntN(1500)) * time.Millisecond
					mu.Unlock()
					time.AfterFunc(after, cancel)
				}
				var out, errb syncBuffer
				began := time.Now()
				code := Main(ctx, []string{"probe", sp, "--config", f.config}, strings.NewReader(""), &out, &errb)
				cancel()
				exitMu.Lock()
				exits[code]++
				took = append(took, time.Since(began).Round(100*time.Millisecond))
				exitMu.Unlock()
				if code != 0 && code != exitInfra && code != exitCancelled {
					t.Errorf("probe %d (%s): exit %d under faults\n%s", i, sp, code, tail(errb.String(), 15))
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("probe durations: %v", took)
	counts := f.proxy.Counts()
	f.proxy.SetRule(nil)
	t.Logf("faults injected in %s: %d (%v); probe exits %v", time.Since(start).Round(time.Second), f.proxy.Total(), counts, exits)
	tallyFaults(t, counts, map[string]int{"probe_cancel": cancels})
	for _, k := range []faultnet.Kind{faultnet.Latency, faultnet.Reset, faultnet.Truncate, faultnet.Blackhole, faultnet.SlowClose} {
		if counts[k] == 0 {
			t.Errorf("no %s fault was injected", k)
		}
	}

	if out, stderr, code := run(t, "", "reconcile", "--config", f.config); code != 0 {
		t.Fatalf("reconcile after the faults: exit %d\n%s%s", code, out, stderr)
	}
	if out, stderr, code := run(t, "", "reconcile", "--from-chain", "--older-than", "0s", "--config", f.config); code != 0 {
		t.Fatalf("reconcile --from-chain after the faults: exit %d\n%s%s", code, out, stderr)
	}
	h := checkHistory(t, f.fleetFixture)
	t.Logf("history: %d runs, %d findings acknowledged, %d on the log, %d throwaway keys checked", h.runs, h.acked, h.onLog, h.keys)
	if h.runs == 0 || h.acked == 0 || h.keys == 0 {
		t.Errorf("the harness exercised too little: %+v", h)
	}
}
