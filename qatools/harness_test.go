package qatools

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/chain/devchain"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/poster"
	"github.com/qafleet/fleetd/sandbox"
)

var ether = new(big.Int).Exp(big.NewInt(10), big.NewInt(18), nil)

// harness is a dev chain with fleetd's log and a reference name registry,
// a web server standing in for the platform, a fake compiler, and an Env.
type harness struct {
	t        testing.TB
	dataDir  string
	ctl      *fleet.Control
	chainURL string
	client   *chain.Client
	sponsor  *chain.Key
	fleetKey *chain.Key
	owner    *chain.Key // the registry's admin
	env      *Env
	web      *httptest.Server
	secrets  []string // every private key created, for the leak check
}

// fakeCompiler behaves by the markers in its input: PANIC crashes like a Go
// panic, HANG never ends, OOM runs out of memory like a Go program, FORK leaves a sleeping child behind, ERR is a clean
// rejection, BIN prints non-UTF-8; anything else compiles to itself.
const fakeCompiler = `#!/bin/sh
src="$1"
if grep -q PANIC "$src"; then printf 'panic: runtime error: index out of range [0] with length 0\n\ngoroutine 1 [running]:\nmain.parse()\n\t/src/parse.go:42\n' >&2; exit 2; fi
if grep -q HANG "$src"; then while :; do :; done; fi
if grep -q OOM "$src"; then printf 'runtime: out of memory: cannot allocate 4294967296-byte block\nfatal error: out of memory\n' >&2; exit 2; fi
if grep -q FORK "$src"; then sleep 300 & echo $! > "$HOME/child.pid"; wait; fi
if grep -q BIN "$src"; then printf 'bad \377\376 byte\n' >&2; exit 1; fi
if grep -q ERR "$src"; then echo "1:5: unexpected token" >&2; exit 1; fi
cat "$src"
`

func newHarness(t testing.TB, dial fleet.Dial) *harness {
	t.Helper()
	h := &harness{t: t, dataDir: t.TempDir()}
	h.ctl = fleet.NewControl(h.dataDir)
	if _, err := h.ctl.SetDial(dial, "test", "test"); err != nil {
		t.Fatal(err)
	}
	var err error
	h.sponsor, _ = chain.GenerateKey()
	h.fleetKey, _ = chain.GenerateKey()
	h.owner, _ = chain.GenerateKey()
	ch, err := devchain.Start(context.Background(), devchain.Config{Funded: []devchain.Account{
		{Address: h.sponsor.Address(), Wei: new(big.Int).Mul(ether, big.NewInt(1000))},
		{Address: h.owner.Address(), Wei: new(big.Int).Mul(ether, big.NewInt(10))},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.Close() })
	h.chainURL = ch.URL()
	ctx := context.Background()

	// Deploy with an unguarded client (the platform's own deployment).
	admin, err := chain.Dial(ctx, ch.URL(), chain.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	log, _, err := admin.DeployFeedbackLog(ctx, h.sponsor)
	if err != nil {
		t.Fatal(err)
	}
	reg, _, err := admin.DeployNameRegistry(ctx, h.owner)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Register(ctx, h.owner, "alice"); err != nil {
		t.Fatal(err)
	}

	// The fleet's client: every write passes the guard with the dial hook.
	guard, err := chain.NewGuard(chain.GuardConfig{})
	if err != nil {
		t.Fatal(err)
	}
	guard.AddHook(DialHook(h.ctl, log.Address(), h.sponsor.Address()))
	h.client, err = chain.Dial(ctx, ch.URL(), chain.Options{Guard: guard, ReceiptTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.client.Close)

	h.web = httptest.NewServer(platformHandler())
	t.Cleanup(h.web.Close)
	u, _ := url.Parse(h.web.URL)

	compiler := filepath.Join(t.TempDir(), "cc.sh")
	if err := os.WriteFile(compiler, []byte(fakeCompiler), 0o755); err != nil {
		t.Fatal(err)
	}
	allow, err := NewAllowlist([]string{u.Host})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := poster.New(poster.Config{
		Log: h.client.FeedbackLog(log.Address()), Identity: h.fleetKey, Sponsor: h.sponsor,
		OutboxDir: filepath.Join(h.dataDir, "outbox"),
	})
	if err != nil {
		t.Fatal(err)
	}
	h.env = &Env{
		Target: fleet.Target{
			Registry: reg.Address().String(), Faces: h.web.URL + "/{name}/", Call: h.web.URL + "/call",
			Compiler: []string{"/bin/sh", compiler, "{src}"}, FetchAllow: []string{u.Host},
		},
		Chain: h.client, Log: h.client.FeedbackLog(log.Address()), Registry: h.client.Registry(reg.Address()),
		FleetKey: h.fleetKey, Sponsor: h.sponsor, Reporter: rep,
		Fetcher: NewFetcher(allow, 5*time.Second, 64<<10),
		Limits:  Limits{CompileTimeout: 2 * time.Second, CallTimeout: 2 * time.Second, FundWei: 1_000_000_000_000_000},
	}
	return h
}

// platformHandler is a tiny stand-in for the platform's web side.
func platformHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /call", func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Target, Message string }
		if ct := r.Header.Get("Content-Type"); ct != "application/json" {
			http.Error(w, "unsupported content type "+ct, http.StatusUnsupportedMediaType)
			return
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, "panic: bad body\n\ngoroutine 7 [running]:\nmain.call()\n\t/srv/call.go:12", 500)
			return
		}
		reply := "hello from " + req.Target
		if req.Target == "silent" {
			reply = ""
		}
		json.NewEncoder(w).Encode(map[string]string{"reply": reply})
	})
	mux.HandleFunc("GET /redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
	})
	redirect307 := func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusTemporaryRedirect)
	}
	// /cors reflects what a CORS probe sends, so a test can see it arrived.
	cors := func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		if o := r.Header.Get("Origin"); o != "" {
			h.Set("Access-Control-Allow-Origin", o)
			h.Set("Access-Control-Allow-Credentials", "true")
			h.Set("Vary", "Origin")
		}
		if r.Method == http.MethodOptions {
			h.Set("Access-Control-Allow-Methods", r.Header.Get("Access-Control-Request-Method"))
			h.Set("Access-Control-Allow-Headers", r.Header.Get("Access-Control-Request-Headers"))
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.Write([]byte("method " + r.Method))
	}
	for _, m := range []string{"GET", "OPTIONS"} { // GET covers HEAD
		mux.HandleFunc(m+" /redirect307", redirect307)
		mux.HandleFunc(m+" /cors", cors)
	}
	// /echo answers what a qa_submit sent: method, content type and the
	// body's fields as the server parsed them.
	echo := func(w http.ResponseWriter, r *http.Request) {
		ct := r.Header.Get("Content-Type")
		var fields string
		switch {
		case strings.HasPrefix(ct, "multipart/form-data"):
			if err := r.ParseMultipartForm(1 << 20); err == nil {
				fields = url.Values(r.MultipartForm.Value).Encode()
			}
		case ct == "application/x-www-form-urlencoded":
			if err := r.ParseForm(); err == nil {
				fields = r.PostForm.Encode()
			}
		default:
			b, _ := io.ReadAll(r.Body)
			fields = string(b)
		}
		fmt.Fprintf(w, "%s %s %s", r.Method, strings.SplitN(ct, ";", 2)[0], fields)
	}
	// A collection whose POST creates an item and names it (Location), and
	// the item's DELETE.
	mux.HandleFunc("POST /items", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", "/items/7")
		w.WriteHeader(http.StatusCreated)
	})
	mux.HandleFunc("DELETE /items/{id}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "DELETE %s", r.URL.Path)
	})
	for _, m := range []string{"POST", "PUT", "PATCH"} {
		mux.HandleFunc(m+" /echo", echo)
		mux.HandleFunc(m+" /redirect307", redirect307)
	}
	mux.HandleFunc("GET /", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<h1>face of " + r.URL.Path + "</h1>"))
	})
	return mux
}

// newRun opens a sandbox run with budget b and returns it with its registry.
func (h *harness) newRun(id string, b fleet.Budget) (*Run, *fleet.Registry) {
	h.t.Helper()
	sb, err := sandbox.Open(filepath.Join(h.dataDir, "qa-sandbox"), id)
	if err != nil {
		h.t.Fatal(err)
	}
	run := &Run{ID: id, Source: "qa-test", Sandbox: sb, Meter: sandbox.NewMeter(b)}
	reg, err := NewRegistry(h.env, run)
	if err != nil {
		h.t.Fatal(err)
	}
	return run, reg
}

// call dispatches one tool call the way the agent loop does.
func (h *harness) call(reg *fleet.Registry, tool string, args any) (fleet.Outcome, error) {
	h.t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		h.t.Fatal(err)
	}
	return reg.Dispatch(context.Background(), h.ctl, tool, raw)
}

func (h *harness) setDial(d fleet.Dial) {
	h.t.Helper()
	if _, err := h.ctl.SetDial(d, "test", "test"); err != nil {
		h.t.Fatal(err)
	}
}
