package qatools

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/qafleet/fleetd/fixtures/siwe"
	"github.com/qafleet/fleetd/fixtures/twin"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/fleet/fleettest"
	"github.com/qafleet/fleetd/sandbox"
	"github.com/qafleet/fleetd/trajectory"
)

// behind rebinds the harness's tools to front, a server in front of the
// platform: the allowlist names front's host instead.
func (h *signinHarness) behind(front *httptest.Server) {
	h.t.Helper()
	u, _ := url.Parse(front.URL)
	allow, err := NewAllowlist([]string{u.Host})
	if err != nil {
		h.t.Fatal(err)
	}
	env := *h.env
	env.Fetcher = NewFetcher(allow, 5*time.Second, 64<<10)
	reg, err := NewRegistry(&env, h.run)
	if err != nil {
		h.t.Fatal(err)
	}
	h.env, h.reg = &env, reg
}

// settingsFront is Keyring behind a front that calls hook on the first
// update of an account's settings, after the platform has applied it and
// before its answer goes back (r is the update's request).
func settingsFront(t *testing.T, app *siwe.App, hook func(r *http.Request)) *httptest.Server {
	back, _ := url.Parse(app.URL())
	proxy := httputil.NewSingleHostReverseProxy(back)
	var once sync.Once
	mux := http.NewServeMux()
	mux.Handle("/", proxy)
	mux.HandleFunc("PATCH /api/accounts/{address}/settings", func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		proxy.ServeHTTP(rec, r)
		once.Do(func() { hook(r) })
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
	})
	front := httptest.NewServer(mux)
	t.Cleanup(front.Close)
	return front
}

// authzRun runs one qa_authz call (args) through the agent loop over the
// harness's tools, recording the run, and returns the record.
func authzRun(t *testing.T, ctx context.Context, h *signinHarness, args map[string]any) *trajectory.Run {
	t.Helper()
	dir := t.TempDir()
	w, err := trajectory.Create(dir, h.run.ID, trajectory.Header{RunID: h.run.ID, Specialist: "security", Goal: "qa_authz cut short", Dial: "exercise"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fleet.Run(ctx, fleet.LoopConfig{RunID: h.run.ID, Specialist: "security", Model: &fleettest.Script{Steps: []any{fleettest.Calls("qa_authz", args)}},
		Tools: h.reg, Dial: h.ctl, Meter: h.run.Meter, Record: w}); err != nil {
		t.Fatal(err)
	}
	run, err := trajectory.ReadAll(w.Path())
	if err != nil {
		t.Fatal(err)
	}
	if run.Footer == nil || len(run.Turns()) != 1 {
		t.Fatalf("the run record holds %d turns and footer %v, want one turn and a footer", len(run.Turns()), run.Footer)
	}
	return run
}

// authzTurn is the qa_authz turn's result as the run record holds it.
type authzTurn struct {
	OK      bool     `json:"ok"`
	Error   string   `json:"error"`
	Outcome string   `json:"outcome"`
	Written []string `json:"written"`
	Undone  []string `json:"undone"`
	Left    []string `json:"left_on_platform"`
}

func turnOf(t *testing.T, run *trajectory.Run) (authzTurn, string) {
	t.Helper()
	raw, _ := run.Turns()[0].Result.(json.RawMessage)
	var r authzTurn
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("the turn's result %s: %v", raw, err)
	}
	return r, string(raw)
}

// TestAuthzCutShortKeepsItsAccount: a qa_authz call that ends the run
// between a write and its undo still records what it wrote, undid and
// left, by method and URL, with no address, session or value, and the
// run's footer lists what it left. On Keyring (flawed), identity a's
// PATCH of its display name reaches the platform, and then:
//   - budget: the run's last writes are spent before the undo (as the
//     run's deadline passing does): the mark stays, listed as left with
//     why; the run ends budget_exhausted;
//   - cancelled: the run is cancelled while the PATCH's answer is on its
//     way: the undo still runs (as cleanup does) and writes the display
//     name back; the run ends cancelled;
//   - sign-in: the budget holds one write, so b's sign-in is refused: a's
//     sign-in is what was written, and a's account what is left.
//
// Before, the call returned no result when it failed mid-check (the run
// record held only the error, what was left went to the log alone) and
// the footer listed nothing.
func TestAuthzCutShortKeepsItsAccount(t *testing.T) {
	for _, tc := range []string{"budget", "cancelled", "sign-in"} {
		t.Run(tc, func(t *testing.T) {
			h := newSigninHarness(t, twin.Flawed, fleet.Exercise, nil)
			h.run.Meter = sandbox.NewMeter(fleet.Budget{MaxWrites: 10})
			if tc == "sign-in" {
				h.run.Meter = sandbox.NewMeter(fleet.Budget{MaxWrites: 1})
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			hook := func(r *http.Request) {
				left, _ := h.run.Meter.Remaining(fleet.ResWrites)
				if err := h.run.Meter.Spend(fleet.ResWrites, left); err != nil {
					t.Error(err)
				}
			}
			if tc == "cancelled" {
				hook = func(r *http.Request) {
					cancel()
					// Answer only once the caller gave up: the call sees
					// its cancellation, never the answer.
					select {
					case <-r.Context().Done():
					case <-time.After(20 * time.Second):
						t.Error("the caller did not give up the request after its run was cancelled")
					}
				}
			}
			front := settingsFront(t, h.app, hook)
			h.behind(front)
			run := authzRun(t, ctx, h, map[string]any{"check": "object", "url": front.URL + "/api/accounts/{address}/settings", "write_method": "PATCH", "write_json": `{"display_name":"qa-authz-mark"}`,
				"nonce_url": front.URL + "/api/auth/nonce", "verify_url": front.URL + "/api/auth/verify", "chain_id": siwe.ChainID})
			res, raw := turnOf(t, run)
			for _, bad := range []string{"0x", siwe.SessionCookie + "=", "Bearer", "qa-authz-mark"} {
				if strings.Contains(raw, bad) {
					t.Errorf("the recorded result carries %q: %s", bad, raw)
				}
			}
			wantWritten := []string{
				"POST /api/auth/verify: sign-in of fresh identity authz1a",
				"POST /api/auth/verify: sign-in of fresh identity authz1b",
				"PATCH /api/accounts/{address}/settings as authz1a (fields display_name",
			}
			if tc == "sign-in" {
				wantWritten = wantWritten[:1]
			}
			if len(res.Written) != len(wantWritten) {
				t.Errorf("written %q, want %q", res.Written, wantWritten)
			} else {
				for i, w := range wantWritten {
					if !strings.HasPrefix(res.Written[i], w) {
						t.Errorf("written[%d] = %q, want %q...", i, res.Written[i], w)
					}
				}
			}
			accounts := "the accounts of fresh identities authz1a, authz1b, if the sign-in at /api/auth/verify made one"
			if tc == "sign-in" {
				accounts = "the accounts of fresh identities authz1a, if the sign-in at /api/auth/verify made one"
			}
			marked := slices.ContainsFunc(h.app.DisplayNames(), func(n string) bool { return n == "qa-authz-mark" })
			f := run.Footer
			switch tc {
			case "budget":
				if res.OK || !strings.Contains(res.Error, "budget") || f.Outcome != trajectory.OutcomeBudgetExhausted {
					t.Errorf("ok %v error %q outcome %s, want the budget's error and budget_exhausted", res.OK, res.Error, f.Outcome)
				}
				// The mark is on the platform, and the record says so.
				if !marked {
					t.Errorf("display names %q: the mark is gone, though the undo had no write left", h.app.DisplayNames())
				}
				if len(res.Undone) != 0 || len(res.Left) != 2 || !strings.Contains(res.Left[0], "the fields display_name of /api/accounts/{address}/settings (fresh identity authz1a's own resource) hold what qa_authz's PATCH wrote (restoring them: ") ||
					!strings.Contains(res.Left[0], "budget") || !strings.HasPrefix(res.Left[1], accounts) {
					t.Errorf("undone %q, left %q: want the display name left with the budget's reason, and the accounts", res.Undone, res.Left)
				}
			case "sign-in":
				if res.OK || !strings.Contains(res.Error, "budget") || f.Outcome != trajectory.OutcomeBudgetExhausted || len(res.Undone) != 0 || len(res.Left) != 1 || !strings.HasPrefix(res.Left[0], accounts) {
					t.Errorf("ok %v error %q outcome %s undone %q left %q, want the budget's error and a's account left", res.OK, res.Error, f.Outcome, res.Undone, res.Left)
				}
			case "cancelled":
				if res.OK || !strings.Contains(res.Error, "context canceled") || f.Outcome != trajectory.OutcomeCancelled {
					t.Errorf("ok %v error %q outcome %s, want the cancellation and cancelled", res.OK, res.Error, f.Outcome)
				}
				// The undo ran after the cancellation: the name is back.
				if marked {
					t.Errorf("display names %q: the mark stayed after the run was cancelled", h.app.DisplayNames())
				}
				if len(res.Undone) != 1 || !strings.HasPrefix(res.Undone[0], "restored display_name of /api/accounts/{address}/settings with PATCH as authz1a") ||
					len(res.Left) != 1 || !strings.HasPrefix(res.Left[0], accounts) {
					t.Errorf("undone %q, left %q: want the display name restored, and the accounts left", res.Undone, res.Left)
				}
			}
			// The footer lists what the call left (the run ended in the
			// call: no summary of the model's says it).
			for _, l := range res.Left {
				if !strings.Contains(f.FinalSummary, "left on the platform by its calls: ") || !strings.Contains(f.FinalSummary, l) {
					t.Errorf("the footer's summary %q does not list %q", f.FinalSummary, l)
				}
			}
		})
	}
}
