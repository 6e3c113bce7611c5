package qatools

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/faultnet"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/sandbox"
)

// viaProxy puts a fault proxy between the harness's tools and the node: the
// Env's chain client and registry talk to the node through it.
func (h *harness) viaProxy() *faultnet.Proxy {
	h.t.Helper()
	p, err := faultnet.Start(strings.TrimPrefix(h.chainURL, "http://"))
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { p.Close() })
	guard, err := chain.NewGuard(chain.GuardConfig{})
	if err != nil {
		h.t.Fatal(err)
	}
	guard.AddHook(DialHook(h.ctl, h.env.Log.Address(), h.sponsor.Address()))
	c, err := chain.Dial(context.Background(), "http://"+p.Addr(), chain.Options{Guard: guard, Timeout: 2 * time.Second, ReceiptTimeout: 20 * time.Second})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(c.Close)
	reg := h.env.Registry.Address()
	h.client, h.env.Chain, h.env.Registry = c, c, c.Registry(reg)
	h.env.Log = c.FeedbackLog(h.env.Log.Address())
	return p
}

// releaseEstimate matches the gas estimate of a release(string) transaction:
// failing it means the release is never sent.
func releaseEstimate(req []byte) bool {
	sel := chain.Selector("release(string)")
	return bytes.Contains(req, []byte(`"eth_estimateGas"`)) && bytes.Contains(req, []byte(hex.EncodeToString(sel[:])))
}

// mintOne runs qa_create once in a fresh run and returns the run and the name.
func (h *harness) mintOne(id string) (*Run, string) {
	h.t.Helper()
	run, reg := h.newRun(id, fleet.Budget{MaxWrites: 10, MaxWei: 1 << 62})
	out, err := h.call(reg, "qa_create", map[string]any{})
	if err != nil || !out.Result.IsOK() {
		h.t.Fatalf("qa_create: %v %v", out.Result, err)
	}
	return run, out.Result["name"].(string)
}

func (h *harness) balance(a fleet.Address) *big.Int {
	h.t.Helper()
	b, err := h.client.Balance(context.Background(), a)
	if err != nil {
		h.t.Fatal(err)
	}
	return b
}

// TestCleanupRetriesAFailedRelease: the node truncates its answer to the
// release's gas estimate once (issue 25: the name was left owned by a key
// that cleanup then swept to zero, so it could never be released). Cleanup
// retries the release, and only then sweeps the key.
func TestCleanupRetriesAFailedRelease(t *testing.T) {
	h := newHarness(t, fleet.Exercise)
	p := h.viaProxy()
	ctx := context.Background()
	run, name := h.mintOne("r-20200101-000000-aaaaa1")
	var cut atomic.Int32
	p.SetRule(func(req []byte) faultnet.Fault {
		if releaseEstimate(req) && cut.Add(1) == 1 {
			return faultnet.Fault{Kind: faultnet.Truncate}
		}
		return faultnet.Fault{}
	})
	if err := CleanupRun(ctx, h.env, run); err != nil {
		t.Fatalf("cleanup after one truncated answer: %v", err)
	}
	if p.Counts()[faultnet.Truncate] != 1 {
		t.Fatalf("faults injected: %v, want one truncation", p.Counts())
	}
	if owner, _ := h.env.Registry.OwnerOf(ctx, name); !owner.IsZero() {
		t.Errorf("%s still owned by %s after cleanup", name, owner)
	}
	key, _ := chain.DeriveThrowawayKey(h.sponsor, run.ID, 0)
	if bal := h.balance(key.Address()); bal.Sign() != 0 {
		t.Errorf("throwaway key holds %s wei after cleanup, want 0", bal)
	}
}

// TestCleanupNeverSweepsAKeyHoldingAName: the release keeps failing. Cleanup
// must not sweep the key that still owns the name (it would need gas to
// release it later); it records the failure in the ledger and leaves the
// sandbox for reconcile, which releases the name and then sweeps the key
// once the node answers again.
func TestCleanupNeverSweepsAKeyHoldingAName(t *testing.T) {
	h := newHarness(t, fleet.Observe) // cleanup works at any dial
	h.setDial(fleet.Exercise)
	p := h.viaProxy()
	ctx := context.Background()
	run, name := h.mintOne("r-20200101-000000-aaaaa2")
	h.setDial(fleet.Observe)
	p.SetRule(func(req []byte) faultnet.Fault {
		if releaseEstimate(req) {
			return faultnet.Fault{Kind: faultnet.Reset}
		}
		return faultnet.Fault{}
	})
	err := CleanupRun(ctx, h.env, run)
	if err == nil || !strings.Contains(err.Error(), name) {
		t.Fatalf("cleanup with every release failing: %v, want an error naming %s", err, name)
	}
	if n := p.Counts()[faultnet.Reset]; n < 2 {
		t.Errorf("the release was tried %d times, want retries", n)
	}
	key, _ := chain.DeriveThrowawayKey(h.sponsor, run.ID, 0)
	if owner, _ := h.env.Registry.OwnerOf(ctx, name); owner != key.Address() {
		t.Fatalf("%s owned by %s, want the run's key", name, owner)
	}
	if bal := h.balance(key.Address()); bal.Sign() == 0 {
		t.Fatal("the key holding the name was swept to zero: the name can never be released")
	}
	base := filepath.Join(h.dataDir, "qa-sandbox")
	crashed, err := sandbox.FindCrashed(base)
	if err != nil || len(crashed) != 1 {
		t.Fatalf("sandboxes left for reconcile: %d (%v), want 1", len(crashed), err)
	}
	e := crashed[0].Names[0]
	crashed[0].Release()
	if e.State != sandbox.StateMinted || e.ReleaseError == "" || e.ReleaseAttempts < 2 {
		t.Errorf("ledger entry %+v: want minted with the release error and attempts recorded", e)
	}

	// Reconcile while the node still fails: it says the name is held.
	res, err := Reconcile(ctx, h.env, base)
	if err == nil || len(res) != 1 || len(res[0].Held) != 1 || res[0].Held[0] != name || res[0].Closed {
		t.Fatalf("reconcile under faults: %+v, %v; want %s held and an error", res, err, name)
	}
	p.SetRule(nil)
	res, err = Reconcile(ctx, h.env, base)
	if err != nil || len(res) != 1 || len(res[0].Released) != 1 || len(res[0].Held) != 0 || !res[0].Closed {
		t.Fatalf("reconcile after the faults: %+v, %v; want %s released and the run closed", res, err, name)
	}
	if owner, _ := h.env.Registry.OwnerOf(ctx, name); !owner.IsZero() {
		t.Errorf("%s still owned by %s after reconcile", name, owner)
	}
	if bal := h.balance(key.Address()); bal.Sign() != 0 {
		t.Errorf("key holds %s wei after reconcile, want 0", bal)
	}
}

// TestReconcileTopsUpASweptKey: a name held by a key an older fleetd swept
// to zero (the state issue 25 found). Reconcile, from the data dir and from
// the chain, funds the key with what a release costs, releases the name and
// sweeps the key to zero again, at the observe dial.
func TestReconcileTopsUpASweptKey(t *testing.T) {
	for _, from := range []string{"data dir", "chain"} {
		t.Run(from, func(t *testing.T) {
			h := newHarness(t, fleet.Exercise)
			ctx := context.Background()
			run, name := h.mintOne("r-20200101-000000-aaaaa3")
			key, _ := chain.DeriveThrowawayKey(h.sponsor, run.ID, 0)
			ctxClean := context.WithValue(ctx, cleanupKey{}, true)
			if _, _, err := h.client.SweepAll(ctxClean, key, h.sponsor.Address()); err != nil {
				t.Fatal(err)
			}
			if h.balance(key.Address()).Sign() != 0 {
				t.Fatal("setup: the key is not empty")
			}
			run.Sandbox.Abandon() // the process died
			h.setDial(fleet.Observe)
			switch from {
			case "data dir":
				res, err := Reconcile(ctx, h.env, filepath.Join(h.dataDir, "qa-sandbox"))
				if err != nil || len(res) != 1 || len(res[0].Released) != 1 {
					t.Fatalf("reconcile: %+v, %v", res, err)
				}
			case "chain":
				head, _ := h.client.BlockNumber(ctx)
				got, err := ReconcileChain(ctx, h.env, 0, head, time.Hour, time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), nil)
				if err != nil || len(got) != 1 || len(got[0].Released) != 1 || len(got[0].Held) != 0 || !got[0].Stranded() {
					t.Fatalf("reconcile from the chain: %+v, %v", got, err)
				}
			}
			if owner, _ := h.env.Registry.OwnerOf(ctx, name); !owner.IsZero() {
				t.Errorf("%s still owned by %s", name, owner)
			}
			if bal := h.balance(key.Address()); bal.Sign() != 0 {
				t.Errorf("key holds %s wei, want 0", bal)
			}
		})
	}
}

// viaRPC puts front, an HTTP handler standing in for the node's JSON-RPC
// endpoint, between the harness's tools and the node.
func (h *harness) viaRPC(front http.Handler) {
	h.t.Helper()
	srv := httptest.NewServer(front)
	h.t.Cleanup(srv.Close)
	guard, err := chain.NewGuard(chain.GuardConfig{})
	if err != nil {
		h.t.Fatal(err)
	}
	guard.AddHook(DialHook(h.ctl, h.env.Log.Address(), h.sponsor.Address()))
	c, err := chain.Dial(context.Background(), srv.URL, chain.Options{Guard: guard, Timeout: 2 * time.Second, ReceiptTimeout: 20 * time.Second})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(c.Close)
	reg := h.env.Registry.Address()
	h.client, h.env.Chain, h.env.Registry = c, c, c.Registry(reg)
	h.env.Log = c.FeedbackLog(h.env.Log.Address())
}

// forward passes one JSON-RPC request body to the node and copies its answer.
func forward(w http.ResponseWriter, nodeURL string, body []byte) {
	resp, err := http.Post(nodeURL, "application/json", bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(resp.StatusCode)
	io.Copy(w, resp.Body)
}

// TestCleanupWaitsForAFundingThatMayStillLand is the money lost in
// TestNodeRestartUnderDaemon (a throwaway key held its 0.01 ETH funding
// after the run had closed): geth took the funding, the node restarted
// before mining it and the send's answer was lost, so qa_create failed; the
// run's cleanup found the key empty and closed the run; then geth put the
// funding back in its pool from its journal (10 s after start) and mined
// it, into a key nobody would sweep again. Here the front holds the
// funding and cuts the connection (the node has it, the client does not
// know), and sends it to the node only after the cleanup, as geth's journal
// does. Cleanup must not close the run while the sponsor's nonce has not
// passed the funding's; once the funding lands, reconcile sweeps the key
// and closes the run. A funding the node refused outright cannot land and
// does not hold the run open.
func TestCleanupWaitsForAFundingThatMayStillLand(t *testing.T) {
	for _, tc := range []struct {
		name    string
		refused bool // the node answers the funding with an error instead of losing the answer
	}{{"answer lost", false}, {"refused", true}} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, fleet.Exercise)
			ctx := context.Background()
			const runID = "r-20200101-000000-aaaab1"
			marker := hex.EncodeToString(chain.ThrowawayMarker(runID, 0))
			var mu sync.Mutex
			var held []byte // the funding's request, kept back from the node
			nodeURL := h.chainURL
			h.viaRPC(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				var req struct {
					ID     json.RawMessage `json:"id"`
					Method string          `json:"method"`
				}
				json.Unmarshal(body, &req)
				mu.Lock()
				hold := req.Method == "eth_sendRawTransaction" && bytes.Contains(body, []byte(marker)) && held == nil
				if hold {
					held = body
				}
				mu.Unlock()
				if !hold {
					forward(w, nodeURL, body)
					return
				}
				if tc.refused {
					fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32000,"message":"txpool is full"}}`, req.ID)
					return
				}
				conn, _, err := w.(http.Hijacker).Hijack()
				if err == nil {
					conn.Close() // the answer is lost
				}
			}))
			run, reg := h.newRun(runID, fleet.Budget{MaxWrites: 10, MaxWei: 1 << 62})
			out, err := h.call(reg, "qa_create", map[string]any{})
			mu.Lock()
			caught := held != nil
			mu.Unlock()
			if err != nil || out.Result.IsOK() || !caught {
				t.Fatalf("qa_create with the funding held back: %v, %v (held %v); want a failed funding", out.Result, err, caught)
			}
			key, _ := chain.DeriveThrowawayKey(h.sponsor, runID, 0)
			base := filepath.Join(h.dataDir, "qa-sandbox")

			err = CleanupRun(ctx, h.env, run)
			if tc.refused {
				if err != nil || !sandbox.Closed(base, runID) {
					t.Fatalf("cleanup after a refused funding: %v, closed %v; want the run closed", err, sandbox.Closed(base, runID))
				}
				if bal := h.balance(key.Address()); bal.Sign() != 0 {
					t.Errorf("the key holds %s wei after a refused funding", bal)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "may still land") || sandbox.Closed(base, runID) {
				t.Fatalf("cleanup with the funding in flight: %v, closed %v; want an error and the run left open", err, sandbox.Closed(base, runID))
			}
			// Reconcile while it is still in flight: the run stays open.
			if res, err := Reconcile(ctx, h.env, base); err == nil || len(res) != 1 || res[0].Closed {
				t.Fatalf("reconcile with the funding in flight: %+v, %v; want the run left open", res, err)
			}

			// The node's journal puts the funding back; it lands.
			rec := httptest.NewRecorder()
			forward(rec, nodeURL, held)
			if rec.Code != 200 || strings.Contains(rec.Body.String(), `"error"`) {
				t.Fatalf("sending the held funding: %d %s", rec.Code, rec.Body)
			}
			waitBalance := time.Now().Add(10 * time.Second)
			for h.balance(key.Address()).Sign() == 0 {
				if time.Now().After(waitBalance) {
					t.Fatal("the held funding did not land")
				}
				time.Sleep(20 * time.Millisecond)
			}
			res, err := Reconcile(ctx, h.env, base)
			if err != nil || len(res) != 1 || !res[0].Closed || res[0].Swept != 1 {
				t.Fatalf("reconcile after the funding landed: %+v, %v; want the key swept and the run closed", res, err)
			}
			if bal := h.balance(key.Address()); bal.Sign() != 0 {
				t.Errorf("the key holds %s wei after reconcile, want 0", bal)
			}
		})
	}
}

// TestCleanupWaitsForAMintThatMayStillLand is the name held in
// TestNodeRestartUnderDaemon's history check: a register whose answer never
// came back (lost, or its wait cancelled by the run's end) left the name
// "minting"; cleanup read the name unowned and called it failed, swept the
// key at the nonce after the mint's, and closed the run; then the mint
// landed, into a name nobody would release again, owned by an empty key.
// Here the front holds the register and cuts its connection (the node has
// it, the client does not know) and hands it to the node either while
// cleanup's first read of the owner is on its way back ("lands after
// cleanup looked": the read says unowned, the mint is mined an instant
// later), or only after cleanup ("lands after the run closed", as geth's
// journal does after a restart). Either way the name must end unowned, the
// key empty and the run closed, after cleanup and at most one reconcile.
func TestCleanupWaitsForAMintThatMayStillLand(t *testing.T) {
	for _, tc := range []struct {
		name  string
		early bool // deliver the mint while cleanup's first owner read returns
	}{{"lands after cleanup looked", true}, {"lands after the run closed", false}} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, fleet.Exercise)
			ctx := context.Background()
			runID := "r-20200101-000000-aaaac1"
			if tc.early {
				runID = "r-20200101-000000-aaaac2"
			}
			name := sandbox.NamePrefix(runID) + "0"
			regSel, ownerSel := chain.Selector("register(string)"), chain.Selector("ownerOf(string)")
			regHex, ownerHex := []byte(hex.EncodeToString(regSel[:])), []byte(hex.EncodeToString(ownerSel[:]))
			nameHex := []byte(hex.EncodeToString([]byte(name)))
			nodeURL := h.chainURL
			direct, err := chain.Dial(ctx, nodeURL, chain.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer direct.Close()
			nodeReg := direct.Registry(h.env.Registry.Address())
			key, _ := chain.DeriveThrowawayKey(h.sponsor, runID, 0)

			var mu sync.Mutex
			var held []byte // the mint's request, kept back from the node
			var cleaning, delivered bool
			// deliver hands the held mint to the node and says whether it
			// landed (the node mines what it takes at once).
			deliver := func() (landed bool, answer string) {
				rec := httptest.NewRecorder()
				forward(rec, nodeURL, held)
				if rec.Code != 200 || strings.Contains(rec.Body.String(), `"error"`) {
					return false, rec.Body.String()
				}
				for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
					if owner, err := nodeReg.OwnerOf(ctx, name); err == nil && owner == key.Address() {
						return true, rec.Body.String()
					}
				}
				return false, rec.Body.String()
			}
			h.viaRPC(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case held == nil && bytes.Contains(body, []byte(`"eth_sendRawTransaction"`)) && bytes.Contains(body, regHex) && bytes.Contains(body, nameHex):
					held = body
					if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
						conn.Close() // the answer is lost
					}
					return
				case tc.early && cleaning && !delivered && bytes.Contains(body, []byte(`"eth_call"`)) && bytes.Contains(body, ownerHex) && bytes.Contains(body, nameHex):
					// Cleanup's first look: the node says unowned; the
					// mint lands before the answer is back.
					rec := httptest.NewRecorder()
					forward(rec, nodeURL, body)
					delivered = true
					if landed, answer := deliver(); !landed {
						t.Errorf("the held mint did not land: %s", answer)
					}
					for k, v := range rec.Header() {
						w.Header()[k] = v
					}
					w.WriteHeader(rec.Code)
					w.Write(rec.Body.Bytes())
					return
				}
				forward(w, nodeURL, body)
			}))
			run, reg := h.newRun(runID, fleet.Budget{MaxWrites: 10, MaxWei: 1 << 62})
			out, err := h.call(reg, "qa_create", map[string]any{})
			mu.Lock()
			caught := held != nil
			cleaning = true
			mu.Unlock()
			if err != nil || out.Result.IsOK() || !caught {
				t.Fatalf("qa_create with the mint held back: %v, %v (held %v); want a failed mint", out.Result, err, caught)
			}
			if e := run.Sandbox.Entries()[0]; e.State != sandbox.StateMinting || e.MintNonce == nil || *e.MintNonce != 0 {
				t.Fatalf("ledger entry after the lost mint: %+v; want minting with the mint's nonce 0", e)
			}

			base := filepath.Join(h.dataDir, "qa-sandbox")
			cerr := CleanupRun(ctx, h.env, run)
			mu.Lock()
			if tc.early && !delivered {
				t.Fatal("cleanup never read the name's owner")
			}
			if !tc.early {
				// geth's journal, after cleanup: the mint must not land in
				// a run that closed, nor in one left for reconcile.
				delivered = true
				landed, answer := deliver()
				t.Logf("the held mint sent after cleanup: landed %v, node answered %s", landed, answer)
			}
			mu.Unlock()
			if !sandbox.Closed(base, runID) {
				// Left open for reconcile: it must finish the job.
				res, err := Reconcile(ctx, h.env, base)
				if err != nil || len(res) != 1 || !res[0].Closed {
					t.Fatalf("cleanup: %v; then reconcile: %+v, %v; want the run closed", cerr, res, err)
				}
			}
			if owner, err := nodeReg.OwnerOf(ctx, name); err != nil || !owner.IsZero() {
				t.Errorf("%s is owned by %s (%v) after the run closed: held for good", name, owner, err)
			}
			if bal := h.balance(key.Address()); bal.Sign() != 0 {
				t.Errorf("the key holds %s wei after the run closed, want 0", bal)
			}
		})
	}
}

// TestCleanupAfterACancelledMint is the daemon's SIGTERM (or the kill
// switch, or a deadline) arriving while a run's register is on its way:
// the node has the mint, the run's context is cancelled before its answer
// is read, qa_create ends the run with the name "minting", and cleanup
// starts at once, racing the node's block. Whichever wins, the name must
// end unowned and the key empty, in a closed run (before the fix, cleanup
// that read the owner first called the name failed and swept the key
// behind the mint, which then landed: held for good).
func TestCleanupAfterACancelledMint(t *testing.T) {
	h := newHarness(t, fleet.Exercise)
	regSel := chain.Selector("register(string)")
	regHex := []byte(hex.EncodeToString(regSel[:]))
	nodeURL := h.chainURL
	var mu sync.Mutex
	var cancelRun context.CancelFunc
	h.viaRPC(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rec := httptest.NewRecorder()
		forward(rec, nodeURL, body)
		if bytes.Contains(body, []byte(`"eth_sendRawTransaction"`)) && bytes.Contains(body, regHex) {
			mu.Lock()
			if cancelRun != nil {
				cancelRun() // the node has the mint; the run ends before the answer is read
			}
			mu.Unlock()
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
	}))
	base := filepath.Join(h.dataDir, "qa-sandbox")
	held := 0
	const runs = 8
	for i := range runs {
		runID := fmt.Sprintf("r-20200101-000000-cccc%02d", i)
		run, reg := h.newRun(runID, fleet.Budget{MaxWrites: 10, MaxWei: 1 << 62})
		ctx, cancel := context.WithCancel(context.Background())
		mu.Lock()
		cancelRun = cancel
		mu.Unlock()
		raw, _ := json.Marshal(map[string]any{})
		out, err := reg.Dispatch(ctx, h.ctl, "qa_create", raw)
		cancel()
		if err == nil && out.Result.IsOK() {
			t.Logf("run %d: the mint's answer came back before the cancel was seen", i)
		}
		cerr := CleanupRun(context.Background(), h.env, run)
		if !sandbox.Closed(base, runID) {
			if res, err := Reconcile(context.Background(), h.env, base); err != nil || len(res) != 1 || !res[0].Closed {
				t.Fatalf("run %d: cleanup %v, then reconcile %+v, %v: the run stays open", i, cerr, res, err)
			}
		}
		name := sandbox.NamePrefix(runID) + "0"
		key, _ := chain.DeriveThrowawayKey(h.sponsor, runID, 0)
		// The node mines what it took within milliseconds: give a mint
		// that cleanup called never landed the time to show up.
		deadline := time.Now().Add(time.Second)
		for time.Now().Before(deadline) {
			if owner, err := h.env.Registry.OwnerOf(context.Background(), name); err == nil && !owner.IsZero() {
				held++
				t.Errorf("run %d: %s is owned by %s after its run closed: held for good", i, name, owner)
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if bal := h.balance(key.Address()); bal.Sign() != 0 {
			t.Errorf("run %d: the key holds %s wei after its run closed", i, bal)
		}
	}
	t.Logf("%d of %d cancelled mints held their name for good", held, runs)
}

// TestCleanupTakesTheNonceOfAnUnfundedMint: a restarted node dropped both
// the key's funding and its mint, and the sponsor's later transactions took
// the funding's nonce: the key is empty, the name unowned, and the mint's
// nonce not yet used. Cleanup funds the key for the sweep that takes that
// nonce, and then calls the name never minted. Before, every try said "the
// key cannot pay" and the run stayed abandoned for good (seen once in
// TestNodeRestartUnderDaemon under load).
func TestCleanupTakesTheNonceOfAnUnfundedMint(t *testing.T) {
	h := newHarness(t, fleet.Exercise)
	ctx := context.Background()
	runID := "r-20200101-000000-aaaac3"
	key, _ := chain.DeriveThrowawayKey(h.sponsor, runID, 0)
	if bal, err := h.env.Chain.Balance(ctx, key.Address()); err != nil || bal.Sign() != 0 {
		t.Fatalf("the key should start empty: %v %v", bal, err)
	}
	var zero uint64
	e := sandbox.LedgerEntry{Name: sandbox.NamePrefix(runID) + "0", Owner: key.Address().String(), State: sandbox.StateMinting, MintNonce: &zero}
	state, _, err := releaseName(ctx, h.env, runID, 0, key, e)
	if err != nil || state != sandbox.StateFailed {
		t.Fatalf("release of an unfunded, unminted name: state %q, err %v; want %q (never minted)", state, err, sandbox.StateFailed)
	}
	settled, err := h.env.Chain.NonceSettled(ctx, key.Address(), 0)
	if err != nil || !settled {
		t.Errorf("the mint's nonce is still free (%v, %v): a late mint could still land", settled, err)
	}
	if owner, err := h.env.Registry.OwnerOf(ctx, e.Name); err != nil || owner != (fleet.Address{}) {
		t.Errorf("the name is owned by %v (%v)", owner, err)
	}
	if bal, err := h.env.Chain.Balance(ctx, key.Address()); err != nil || bal.Sign() != 0 {
		t.Errorf("the top-up was not swept back: %v wei left (%v)", bal, err)
	}
}
