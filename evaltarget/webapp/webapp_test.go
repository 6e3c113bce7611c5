package webapp

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/chain/devchain"
)

// TestFlawsAndTwin checks every row of README.md: the flaw shows in
// Flawed mode and not in Correct mode (fixing a flaw makes this fail, on
// purpose, as the testbed's own tests do).
func TestFlawsAndTwin(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a dev chain")
	}
	ctx := context.Background()
	sponsor, _ := chain.GenerateKey()
	wei, _ := new(big.Int).SetString("1000000000000000000000", 10)
	ch, err := devchain.Start(ctx, devchain.Config{Funded: []devchain.Account{{Address: sponsor.Address(), Wei: wei}}})
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	type answer struct {
		status int
		header http.Header
		body   string
		hung   bool
	}
	apps := map[Mode]*App{}
	for _, m := range []Mode{Flawed, Correct} {
		a, err := Serve(ctx, Config{RPC: ch.URL(), ChainID: ch.ChainID(), Sponsor: sponsor, Mode: m, CallTimeout: 3 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		apps[m] = a
	}
	do := func(a *App, method, path, body string, hdr map[string]string) answer {
		t.Helper()
		req, _ := http.NewRequest(method, a.URL()+path, strings.NewReader(body))
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		c := a.Client()
		c.Timeout = time.Second
		resp, err := c.Do(req)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return answer{hung: true}
		}
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return answer{status: resp.StatusCode, header: resp.Header, body: string(b)}
	}
	get := func(a *App, path string) answer { return do(a, "GET", path, "", nil) }
	call := func(a *App, body string) answer {
		return do(a, "POST", "/api/v2/agents/call", body, map[string]string{"Content-Type": "application/json"})
	}
	for _, tc := range []struct {
		name  string
		shows func(a *App) bool
	}{
		{"secret in config.json", func(a *App) bool { return strings.Contains(get(a, "/static/config.json").body, "sk_live_") }},
		{"traceback for item 999", func(a *App) bool {
			r := get(a, "/api/v2/items/999")
			return r.status == 500 && strings.Contains(r.body, "Traceback")
		}},
		{"panic on the status page", func(a *App) bool { return strings.Contains(get(a, "/internal/status").body, "goroutine 7") }},
		{"no security headers", func(a *App) bool { return get(a, "/").header.Get("Content-Security-Policy") == "" }},
		{"CORS reflects with credentials", func(a *App) bool {
			r := do(a, "OPTIONS", "/api/v2/agents/call", "", map[string]string{"Origin": "https://x.example", "Access-Control-Request-Method": "POST"})
			return r.header.Get("Access-Control-Allow-Origin") == "https://x.example" && r.header.Get("Access-Control-Allow-Credentials") == "true"
		}},
		{"script over http", func(a *App) bool { return strings.Contains(get(a, "/").body, `src="http://`) }},
		{"setup guide missing", func(a *App) bool { return get(a, "/docs/guides/agents/setup.html").status == 404 }},
		{"catalog answers results", func(a *App) bool { return strings.Contains(get(a, "/api/v2/catalog?page=1").body, `"results"`) }},
		{"health is plain text", func(a *App) bool {
			return strings.HasPrefix(get(a, "/api/v2/health").header.Get("Content-Type"), "text/plain")
		}},
		{"stats labelled HTML", func(a *App) bool {
			return strings.HasPrefix(get(a, "/api/v2/stats").header.Get("Content-Type"), "text/html")
		}},
		{"500 with a trace for a non-string message", func(a *App) bool {
			r := call(a, `{"target":"acme","message":7}`)
			return r.status == 500 && strings.Contains(r.body, "agents.js")
		}},
		{"500 for a long message", func(a *App) bool {
			return call(a, `{"target":"acme","message":"`+strings.Repeat("A", 9000)+`"}`).status == 500
		}},
		{"empty 200 for whitespace", func(a *App) bool {
			r := call(a, `{"target":"acme","message":"  "}`)
			return r.status == 200 && strings.Contains(r.body, `"reply":""`)
		}},
		{"hang on deep nesting", func(a *App) bool {
			return call(a, `{"target":"acme","message":"hi","x":`+strings.Repeat("[", 100)+strings.Repeat("]", 100)+`}`).hung
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.shows(apps[Flawed]) {
				t.Error("the flawed platform does not show it")
			}
			if tc.shows(apps[Correct]) {
				t.Error("the correct twin shows it")
			}
		})
	}
	// Both modes keep the contract: a good call gets a reply.
	for m, a := range apps {
		r := call(a, `{"target":"acme","message":"hello"}`)
		if r.status != 200 || !bytes.Contains([]byte(r.body), []byte("Acme Anvils here")) {
			t.Errorf("%s: a good call answers %d %s", m, r.status, r.body)
		}
	}
}
