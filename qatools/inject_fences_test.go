package qatools

import (
	"context"
	"encoding/hex"
	"errors"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
)

// TestPublishText writes text under field names and explicit keys of an own
// name, reads it back through qa_chain, and sees the keys in metadata_events.
func TestPublishText(t *testing.T) {
	h := newHarness(t, fleet.Exercise)
	ctx := context.Background()
	run, reg := h.newRun("r-text", fleet.Budget{MaxWrites: 5})
	defer CleanupRun(ctx, h.env, run)
	out, _ := h.call(reg, "qa_create", map[string]any{})
	name, _ := out.Result["name"].(string)
	if name == "" || out.Result["writes_left"] != uint64(4) {
		t.Fatalf("create: %v", out.Result)
	}
	explicit := chain.MetadataKey("custom-field")
	hexKey := "0x" + hex.EncodeToString(explicit[:])
	for _, tc := range []struct {
		key, text string
		mkey      [32]byte
		left      uint64
	}{
		{"bio", `<qa1>" qa2="`, chain.MetadataKey("bio"), 3},
		{hexKey, "javascript:qa3()", explicit, 2},
		{strings.ToUpper(hexKey[:2]) + hexKey[2:], "", explicit, 1}, // 0X works; empty text clears
	} {
		out, err := h.call(reg, "qa_publish", map[string]any{"name": name, "key": tc.key, "text": tc.text})
		if err != nil || out.Verdict != fleet.VerdictOK {
			t.Fatalf("publish %q: %v %v", tc.key, err, out.Result)
		}
		if out.Result["key"] != "0x"+hex.EncodeToString(tc.mkey[:]) || out.Result["writes_left"] != tc.left || out.Result["bytes"] != len(tc.text) {
			t.Errorf("publish %q result: %v", tc.key, out.Result)
		}
		if v, err := h.env.Registry.Metadata(ctx, name, tc.mkey); err != nil || string(v) != tc.text {
			t.Errorf("metadata under %q = %q, %v; want %q", tc.key, v, err, tc.text)
		}
		read, _ := h.call(reg, "qa_chain", map[string]any{"method": "metadata", "params": []any{name, tc.key}})
		if read.Result["result"] != tc.text {
			t.Errorf("qa_chain metadata %q: %v", tc.key, read.Result)
		}
	}
	ev, _ := h.call(reg, "qa_chain", map[string]any{"method": "metadata_events", "params": []any{name}})
	evs, _ := ev.Result["result"].([]map[string]any)
	if ev.Verdict != fleet.VerdictOK || len(evs) != 2 || evs[0]["key"] != hexOf(chain.MetadataKey("bio")) || evs[1]["key"] != hexKey {
		t.Errorf("metadata_events: %v", ev.Result)
	}
	if names, _ := ev.Result["names"].([]string); len(names) != 1 || names[0] != name {
		t.Errorf("metadata_events names: %v", ev.Result["names"])
	}
	// The source form still works, under its field.
	out, _ = h.call(reg, "qa_publish", map[string]any{"name": name, "source": "<p>hi</p>", "field": "bio"})
	if out.Verdict != fleet.VerdictOK || out.Result["field"] != "bio" {
		t.Errorf("source form: %v", out.Result)
	}
}

// TestPublishTextFences tries to break each fence of the text form: foreign
// names, the dial, the write budget, the gas price cap, bad argument
// combinations and oversized text. Nothing may reach the chain.
func TestPublishTextFences(t *testing.T) {
	h := newHarness(t, fleet.Exercise)
	ctx := context.Background()
	other, otherReg := h.newRun("r-other", fleet.Budget{})
	defer CleanupRun(ctx, h.env, other)
	out, _ := h.call(otherReg, "qa_create", map[string]any{})
	otherName, _ := out.Result["name"].(string)
	run, reg := h.newRun("r-mine", fleet.Budget{MaxWrites: 2})
	defer CleanupRun(ctx, h.env, run)
	out, _ = h.call(reg, "qa_create", map[string]any{})
	mine, _ := out.Result["name"].(string)
	if otherName == "" || mine == "" {
		t.Fatalf("mint failed: %q %q", otherName, mine)
	}
	bio := chain.MetadataKey("bio")

	t.Run("foreign names", func(t *testing.T) {
		for _, name := range []string{"alice", otherName, "qa-r-mine-9", "QA-R-MINE-0", mine + " ", strings.Replace(mine, "r-mine", "r-mine2", 1)} {
			out, err := h.call(reg, "qa_publish", map[string]any{"name": name, "key": "bio", "text": "<qa-pwn>"})
			if err != nil || out.Verdict != fleet.VerdictError || !strings.Contains(out.Result.Err(), "not minted by this run") {
				t.Errorf("publish text to %q: %v %v", name, err, out.Result)
			}
		}
		for _, name := range []string{"alice", otherName} {
			if v, _ := h.env.Registry.Metadata(ctx, name, bio); len(v) != 0 {
				t.Errorf("%s's bio was written: %q", name, v)
			}
		}
	})
	t.Run("arguments", func(t *testing.T) {
		for _, tc := range []struct {
			args    map[string]any
			verdict fleet.Verdict
			want    string
		}{
			{map[string]any{"name": mine, "key": "bio"}, fleet.VerdictError, "key without text"},
			{map[string]any{"name": mine, "text": "x"}, fleet.VerdictError, "text without key"},
			{map[string]any{"name": mine, "key": "bio", "text": "x", "source": "y"}, fleet.VerdictError, "source and text together"},
			{map[string]any{"name": mine, "key": "bio", "text": "x", "field": "face"}, fleet.VerdictError, "field goes with source"},
			{map[string]any{"name": mine}, fleet.VerdictError, "no source and no text"},
			{map[string]any{"name": mine, "key": "0x1234", "text": "x"}, fleet.VerdictError, "64 hex digits, got 4"},
			{map[string]any{"name": mine, "key": "bio", "text": strings.Repeat("x", 4097)}, fleet.VerdictInvalid, "longer than the maximum"},
			{map[string]any{"name": mine, "key": strings.Repeat("k", 129), "text": "x"}, fleet.VerdictInvalid, "longer than the maximum"},
			{map[string]any{"name": mine, "key": "bio", "text": 7}, fleet.VerdictInvalid, "want string"},
		} {
			out, err := h.call(reg, "qa_publish", tc.args)
			if err != nil || out.Verdict != tc.verdict || !strings.Contains(out.Result.Err(), tc.want) {
				t.Errorf("%v: %v %s %v, want %s %q", tc.args, err, out.Verdict, out.Result, tc.verdict, tc.want)
			}
		}
		if v, _ := h.env.Registry.Metadata(ctx, mine, bio); len(v) != 0 {
			t.Errorf("a refused call wrote %q", v)
		}
	})
	t.Run("gas price cap", func(t *testing.T) {
		guard, _ := chain.NewGuard(chain.GuardConfig{MaxFeePerGas: bigOne})
		guard.AddHook(DialHook(h.ctl, h.env.Log.Address(), h.sponsor.Address()))
		capped, err := chain.Dial(ctx, h.chainURL, chain.Options{Guard: guard})
		if err != nil {
			t.Fatal(err)
		}
		defer capped.Close()
		env := *h.env
		env.Chain, env.Registry = capped, capped.Registry(h.env.Registry.Address())
		tools, _ := NewRegistry(&env, run)
		out, err := h.call(tools, "qa_publish", map[string]any{"name": mine, "key": "bio", "text": "over the cap"})
		if err != nil || out.Verdict != fleet.VerdictError || !strings.Contains(out.Result.Err(), "refused") {
			t.Errorf("publish over the gas price cap: %v %v", err, out.Result)
		}
		if v, _ := h.env.Registry.Metadata(ctx, mine, bio); len(v) != 0 {
			t.Errorf("written over the cap: %q", v)
		}
	})
	t.Run("budget", func(t *testing.T) {
		// The create took one write; the capped attempt above reserved the
		// other (a refused transaction is not refunded: the budget errs
		// towards writing less). The next write ends the run.
		_, err := h.call(reg, "qa_publish", map[string]any{"name": mine, "key": "bio", "text": "past the budget"})
		if !errors.Is(err, fleet.ErrBudget) {
			t.Errorf("write past the budget: %v", err)
		}
		if v, _ := h.env.Registry.Metadata(ctx, mine, bio); len(v) != 0 {
			t.Errorf("written past the budget: %q", v)
		}
	})
	t.Run("observe", func(t *testing.T) {
		h.setDial(fleet.Observe)
		defer h.setDial(fleet.Exercise)
		_, reg := h.newRun("r-observe", fleet.Budget{})
		out, _ := h.call(reg, "qa_publish", map[string]any{"name": mine, "key": "bio", "text": "at observe"})
		if out.Verdict != fleet.VerdictRefused {
			t.Errorf("publish at observe: %s %v", out.Verdict, out.Result)
		}
		// Even a handler reached some other way cannot write: the chain
		// guard's dial hook refuses the transaction.
		key := mustRunKey(t, run, mine)
		if _, err := h.env.Registry.SetMetadata(ctx, key, mine, bio, []byte("at observe")); !errors.Is(err, chain.ErrRefused) {
			t.Errorf("raw setMetadata at observe: %v", err)
		}
		// Reads stay allowed.
		out, _ = h.call(reg, "qa_chain", map[string]any{"method": "metadata_events", "params": []any{}})
		if out.Verdict != fleet.VerdictOK {
			t.Errorf("metadata_events at observe: %v", out.Result)
		}
	})
}

func mustRunKey(t *testing.T, run *Run, name string) *chain.Key {
	t.Helper()
	e, err := run.Sandbox.Owned(name)
	if err != nil {
		t.Fatal(err)
	}
	k, err := chain.LoadKey(run.Sandbox.KeysDir() + "/" + e.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestFetchNoFollow: follow_redirects false returns the redirect itself with
// every header, without a request to where it points; the default still
// follows and re-checks every hop.
func TestFetchNoFollow(t *testing.T) {
	var offList int
	var mu sync.Mutex
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		offList++
		mu.Unlock()
	}))
	defer elsewhere.Close()
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Qa-Injected", "qa7f")
		if to := r.URL.Query().Get("to"); to != "" {
			http.Redirect(w, r, to, http.StatusFound)
			return
		}
		io.WriteString(w, "<p>landing</p>")
	}))
	defer site.Close()
	u, _ := url.Parse(site.URL)
	allow, _ := NewAllowlist([]string{u.Host})
	f := NewFetcher(allow, 2*time.Second, 1024)
	ctx := context.Background()

	target := site.URL + "/go?to=" + url.QueryEscape(elsewhere.URL+"/x")
	res, err := f.Do(ctx, Request{URL: target, NoFollow: true})
	hd, _ := res["headers"].(map[string]any)
	if err != nil || res["status"] != http.StatusFound || hd["location"] != elsewhere.URL+"/x" || hd["x-qa-injected"] != "qa7f" || res["redirected"] != false {
		t.Errorf("no-follow: %v %v", res, err)
	}
	res, _ = f.Get(ctx, target)
	if res.IsOK() || !strings.Contains(res.Err(), "not on the fetch allowlist") {
		t.Errorf("following off the list: %v", res)
	}
	if _, ok := res["headers"]; ok {
		t.Errorf("a refused fetch has headers: %v", res)
	}
	res, _ = f.Get(ctx, site.URL+"/go?to=/landing")
	if res["status"] != 200 || res["redirected"] != true || !strings.Contains(res["body"].(string), "landing") {
		t.Errorf("following on the list: %v", res)
	}
	if hd, _ := res["headers"].(map[string]any); hd["x-qa-injected"] != nil {
		t.Errorf("a followed fetch reports headers off the kept list: %v", hd)
	}
	mu.Lock()
	defer mu.Unlock()
	if offList != 0 {
		t.Errorf("the off-list host got %d requests", offList)
	}
	// The fence before any request holds for no-follow too.
	if res, _ := f.Do(ctx, Request{URL: elsewhere.URL + "/", NoFollow: true}); res.IsOK() {
		t.Errorf("no-follow fetched an off-list host: %v", res)
	}
}

var bigOne = big.NewInt(1)

func hexOf(k [32]byte) string { return "0x" + hex.EncodeToString(k[:]) }

// TestPacer checks the token bucket and the back-off with a fake clock.
func TestPacer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		p := NewPacer(2, 1) // one request per 500 ms
		var waits []time.Duration
		for range 3 {
			w, err := p.Wait(ctx, "Host:1")
			if err != nil {
				t.Fatal(err)
			}
			waits = append(waits, w)
		}
		if waits[0] != 0 || waits[1] != 500*time.Millisecond || waits[2] != 500*time.Millisecond {
			t.Errorf("waits %v, want 0, 500ms, 500ms", waits)
		}
		if w, _ := p.Wait(ctx, "other:1"); w != 0 {
			t.Errorf("another host waited %s", w)
		}
		time.Sleep(time.Second) // the bucket refills (to its burst of 1)
		// A 429 without Retry-After: 1 s, then 2 s; an answer resets it.
		for i, want := range []time.Duration{time.Second, 2 * time.Second} {
			if d := p.Observe("host:1", 429, ""); d != want {
				t.Errorf("back-off %d = %s, want %s", i, d, want)
			}
		}
		start := time.Now()
		if _, err := p.Wait(ctx, "host:1"); err != nil || time.Since(start) != 2*time.Second {
			t.Errorf("waited %s (%v) after a 2 s back-off", time.Since(start), err)
		}
		p.Observe("host:1", 200, "")
		if d := p.Observe("host:1", 429, ""); d != time.Second {
			t.Errorf("back-off after a success = %s, want 1s again", d)
		}
		// Retry-After wins; 503 counts only with it; too long fails at once.
		if d := p.Observe("h2", 429, "3"); d != 3*time.Second {
			t.Errorf("Retry-After 3 = %s", d)
		}
		if d := p.Observe("h3", 503, ""); d != 0 {
			t.Errorf("503 without Retry-After backed off %s", d)
		}
		if d := p.Observe("h3", 503, time.Now().Add(45*time.Second).UTC().Format(http.TimeFormat)); d != 45*time.Second {
			t.Errorf("503 with a date = %s", d)
		}
		start = time.Now()
		if _, err := p.Wait(ctx, "h3"); !errors.Is(err, ErrRateLimited) || time.Since(start) != 0 {
			t.Errorf("45 s wait: %v after %s, want ErrRateLimited at once", err, time.Since(start))
		}
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := p.Wait(cctx, "h2"); !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled wait: %v", err)
		}
	})
}

// TestPacedTools: qa_fetch and qa_call space their requests per host, back
// off a platform answering 429 instead of hammering it, and report the
// platform's own latency.
func TestPacedTools(t *testing.T) {
	var mu sync.Mutex
	var seen []time.Time
	busy := 1 // the first request is refused
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, time.Now())
		refuse := busy > 0
		busy--
		mu.Unlock()
		if refuse {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "slow down", http.StatusTooManyRequests)
			return
		}
		if r.Method == http.MethodPost {
			io.WriteString(w, `{"reply":"ok"}`)
			return
		}
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	allow, _ := NewAllowlist([]string{u.Host})
	env := &Env{
		Target:  fleet.Target{Call: srv.URL + "/call", FetchAllow: []string{u.Host}},
		Fetcher: NewFetcher(allow, 2*time.Second, 1024),
		Limits:  Limits{RequestRate: 4, RequestBurst: 1},
	}
	reg, err := NewRegistry(env, &Run{ID: "r-pace"}, "qa_fetch", "qa_call")
	if err != nil {
		t.Fatal(err)
	}
	ctl := fleet.NewControl(t.TempDir())
	ctl.SetDial(fleet.Exercise, "test", "test")
	ctx := context.Background()
	first, _ := reg.Dispatch(ctx, ctl, "qa_fetch", []byte(`{"url":"`+srv.URL+`/a"}`))
	if first.Result["status"] != 429 || first.Result["backoff_ms"] != int64(1000) {
		t.Fatalf("first fetch: %v", first.Result)
	}
	second, _ := reg.Dispatch(ctx, ctl, "qa_call", []byte(`{"target":"x","message":"hi"}`))
	third, _ := reg.Dispatch(ctx, ctl, "qa_fetch", []byte(`{"url":"`+srv.URL+`/b"}`))
	if second.Result["status"] != 200 || third.Result["status"] != 200 {
		t.Fatalf("after the back-off: %v / %v", second.Result, third.Result)
	}
	mu.Lock()
	gap1, gap2 := seen[1].Sub(seen[0]), seen[2].Sub(seen[1])
	mu.Unlock()
	// Arrival times at the server jitter under load (a late first arrival
	// shortens the gap after it); without pacing the gaps would be ~1 ms,
	// so these bounds still catch a pacer that does not wait.
	if gap1 < 800*time.Millisecond {
		t.Errorf("the platform asked for 1 s and got the next request after %s", gap1)
	}
	// The third is sent at least 250 ms (4 requests/s) after the second,
	// which is sent at least 1 s after the first's 429 came back: it
	// arrives at least 1.25 s after the first did, however the second's
	// arrival jitters (a late one made gap2 108 ms under load, though
	// the pacer waited).
	if total := gap1 + gap2; total < 1200*time.Millisecond {
		t.Errorf("4 requests/s allowed the third request %s after the first (gaps %s, %s); want ≥ 1.25 s", total, gap1, gap2)
	}
	paced, _ := second.Result["paced_ms"].(int64)
	lat, _ := second.Result["latency_ms"].(int64)
	if paced < 900 || lat > 500 || second.Latency < time.Duration(paced)*time.Millisecond {
		t.Errorf("qa_call paced_ms %d latency_ms %d outcome latency %s: latency_ms must be the request's own", paced, lat, second.Latency)
	}
}
