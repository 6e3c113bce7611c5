package specialists

// The evaluation of the crawl, the passive checks, the docs contract and
// the call grammar on a platform fleetd has never seen: fixtures/webapp
// ("Bazaar"), written unlike the testbed, on the embedded dev chain. The
// real playbooks run through the real loop with the same test-local HTTP
// tools as the testbed test. Flawed mode must yield one finding per planted
// flaw (recall per class); its correct twin must yield none. The table it
// logs is the one in BENCHMARKS.md:
//
//	go test -run TestEvalWebapp -v ./specialists

import (
	"context"
	"fmt"
	"math/big"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/chain/devchain"
	"github.com/qafleet/fleetd/fixtures/twin"
	"github.com/qafleet/fleetd/fixtures/webapp"
	"github.com/qafleet/fleetd/fleet"
)

// plantedFlaw is one flaw of the flawed webapp and how its finding reads.
type plantedFlaw struct {
	class    string
	surfaces []string
	words    []string
	minSev   fleet.Severity // the finding must be at least this severe
}

// webappFlaws are the flaws fixtures/webapp/README.md lists.
var webappFlaws = []plantedFlaw{
	{"secret in a JSON file the JS bundle loads", []string{"web"}, []string{"/static/config.json", "Stripe live key"}, fleet.SeverityHigh},
	{"leak: traceback in an error answer", []string{"web"}, []string{"/api/v2/items/999", "stack trace"}, fleet.SeverityLow},
	{"leak: stack trace on a 200 page", []string{"web"}, []string{"/internal/status", "stack trace"}, fleet.SeverityLow},
	{"missing security headers", []string{"headers"}, []string{"Content-Security-Policy", "X-Content-Type-Options"}, fleet.SeverityLow},
	{"CORS: API reflects any origin with credentials", []string{"cors"}, []string{"reflects the foreign Origin", "/api/v2/agents/call"}, fleet.SeverityHigh},
	{"mixed content: script over http", []string{"mixed-content"}, []string{"active content", "http://"}, fleet.SeverityMedium},
	{"dead link in the docs", []string{"docs", "links"}, []string{"dead link", "/docs/guides/agents/setup.html"}, fleet.SeverityLow},
	{"docs contract: promised field missing", []string{"docs"}, []string{"/api/v2/catalog", "lacks the promised field", "items"}, fleet.SeverityMedium},
	{"docs contract: JSON promised, text served", []string{"docs"}, []string{"/api/v2/health", "not the JSON promised"}, fleet.SeverityMedium},
	{"content type: JSON served as text/html", []string{"content-type"}, []string{"/api/v2/stats", "JSON document served as"}, fleet.SeverityLow},
	{"call grammar: 5xx leaking a stack trace", []string{"call"}, []string{"HTTP 500 and leaks internals", "message as"}, fleet.SeverityHigh},
	{"call grammar: 5xx on a long message", []string{"call"}, []string{"answers HTTP 500 on", "16 KB message"}, fleet.SeverityMedium},
	{"call grammar: empty 200", []string{"call"}, []string{"empty body", "whitespace-only message"}, fleet.SeverityLow},
	{"call grammar: hang", []string{"call"}, []string{"does not answer within the call timeout", "deep nesting"}, fleet.SeverityHigh},
}

// startWebapp runs a dev chain and the webapp in mode on it.
func startWebapp(t *testing.T, mode twin.Mode) *webapp.App {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a dev chain and the webapp")
	}
	ctx := context.Background()
	sponsor, err := chain.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	wei, _ := new(big.Int).SetString("1000000000000000000000", 10)
	ch, err := devchain.Start(ctx, devchain.Config{Funded: []devchain.Account{{Address: sponsor.Address(), Wei: wei}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.Close() })
	app, err := webapp.Serve(ctx, webapp.Config{RPC: ch.URL(), ChainID: ch.ChainID(), Sponsor: sponsor, Mode: mode, CallTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { app.Close() })
	return app
}

// webappTools are the testbed test's HTTP tools over the webapp's TLS
// client; the call tool times out after 4 s (the webapp's planted hang
// lasts 10 s).
func webappTools(app *webapp.App) func(string, *[]map[string]any) *fleet.Registry {
	tg := app.Target()
	fetchClient := app.Client()
	fetchClient.Timeout = 15 * time.Second
	callClient := &http.Client{Timeout: 4 * time.Second, Transport: &http.Transport{TLSClientConfig: app.TLSConfig()}}
	return httpTools(tg, fetchClient, callClient)
}

// runWebapp runs the web-facing playbooks against app and returns every
// finding, tagged with its playbook.
func runWebapp(t *testing.T, app *webapp.App) []map[string]any {
	t.Helper()
	var all []map[string]any
	for _, name := range []string{"security", "ux", "fuzz"} {
		res, got := runLoop(t, name, fleet.Exercise, app.Target(), webappTools(app), Options{})
		if res.Totals.ToolCalls > DefaultCap(name) {
			t.Errorf("%s: %d calls over its cap %d", name, res.Totals.ToolCalls, DefaultCap(name))
		}
		for _, f := range got {
			f["playbook"] = name
			all = append(all, f)
		}
	}
	return all
}

func matches(f map[string]any, fl plantedFlaw) bool {
	s, _ := f["summary"].(string)
	if !slices.Contains(fl.surfaces, fmt.Sprint(f["surface"])) {
		return false
	}
	for _, w := range fl.words {
		if !strings.Contains(strings.ToLower(s), strings.ToLower(w)) {
			return false
		}
	}
	return true
}

func TestEvalWebapp(t *testing.T) {
	var table strings.Builder
	fmt.Fprintf(&table, "\n| class | planted | found | severity |\n| --- | --- | --- | --- |\n")
	flawed := runWebapp(t, startWebapp(t, twin.Flawed))
	used := make([]bool, len(flawed))
	found := 0
	for _, fl := range webappFlaws {
		i := slices.IndexFunc(flawed, func(f map[string]any) bool { return matches(f, fl) })
		sev := "—"
		if i >= 0 {
			used[i], found = true, found+1
			sev = fmt.Sprint(flawed[i]["severity"])
			if fleet.Severity(sev).Rank() < fl.minSev.Rank() {
				t.Errorf("%s found at %s, want at least %s", fl.class, sev, fl.minSev)
			}
		} else {
			t.Errorf("missed: %s (%v %v)", fl.class, fl.surfaces, fl.words)
		}
		fmt.Fprintf(&table, "| %s | 1 | %d | %s |\n", fl.class, map[bool]int{true: 1, false: 0}[i >= 0], sev)
	}
	var extra []map[string]any
	for i, f := range flawed {
		if !used[i] {
			extra = append(extra, f)
		}
	}
	correct := runWebapp(t, startWebapp(t, twin.Correct))
	high := func(fs []map[string]any) int {
		n := 0
		for _, f := range fs {
			if fleet.Severity(fmt.Sprint(f["severity"])).Rank() >= fleet.SeverityHigh.Rank() {
				n++
			}
		}
		return n
	}
	fmt.Fprintf(&table, "\nrecall %d/%d; findings not matching a planted flaw on the flawed platform: %d (%d at high or above); findings on the correct twin: %d (%d at high or above)\n",
		found, len(webappFlaws), len(extra), high(extra), len(correct), high(correct))
	t.Log(table.String())
	if len(extra) > 0 {
		t.Errorf("findings on the flawed platform that match no planted flaw:%s", summaries(extra))
	}
	if len(correct) > 0 {
		t.Errorf("findings on the correct twin (false positives):%s", summaries(correct))
	}
}
