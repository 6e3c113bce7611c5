package specialists

import (
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/chain/devchain"
	"github.com/qafleet/fleetd/chain/evm"
	"github.com/qafleet/fleetd/fixtures/registries"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/fleet/fleettest"
	"github.com/qafleet/fleetd/specialists/replay"
)

// chainWorld is a dev chain with its sponsor key and a client, for the
// rules that read and simulate through qa_chain.
type chainWorld struct {
	c       *chain.Client
	sponsor *chain.Key
}

// startChainWorld starts a dev chain (without the debug namespace when
// noDebug) with the well-known dev key funded.
func startChainWorld(t *testing.T, noDebug bool) chainWorld {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a dev chain")
	}
	ctx := context.Background()
	k, err := evm.HexKey(devKey)
	if err != nil {
		t.Fatal(err)
	}
	addr, _ := evm.AddressOf(k)
	wei, _ := new(big.Int).SetString("1000000000000000000000", 10)
	ch, err := devchain.Start(ctx, devchain.Config{NoDebug: noDebug, Funded: []devchain.Account{{Address: addr, Wei: wei}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.Close() })
	c, err := chain.Dial(ctx, ch.URL(), chain.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	keyFile := filepath.Join(t.TempDir(), "sponsor.key")
	if err := os.WriteFile(keyFile, []byte(devKey), 0o600); err != nil {
		t.Fatal(err)
	}
	sponsor, err := chain.LoadKey(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	return chainWorld{c: c, sponsor: sponsor}
}

// qaChain answers qa_chain's pass-through reads as qatools does: the node's
// JSON under "result", an error as a failed result.
func (cw chainWorld) qaChain(a map[string]any) fleet.Result {
	params, _ := json.Marshal(a["params"])
	if a["method"] == "simulate" { // qatools' named read: a signature with zero values from a stranger
		var p []string
		_ = json.Unmarshal(params, &p)
		reg, _ := a["registry"].(string)
		if len(p) == 0 || reg == "" {
			return fleet.Fail("qa_chain simulate: target.registry is not configured")
		}
		data, err := chain.ZeroCalldata(p[0])
		if err != nil {
			return fleet.Fail("qa_chain simulate: %v", err)
		}
		to, _ := fleet.ParseAddress(reg)
		_, err = cw.c.CallAs(context.Background(), fleet.Address{0x5e}, to, data)
		if err != nil && !chain.IsRevert(err, "") {
			return fleet.Fail("qa_chain simulate: %v", err)
		}
		return fleet.Result{"signature": p[0], "from": fleet.Address{0x5e}.String(), "reverted": err != nil}
	}
	out, err := cw.c.ReadRPC(context.Background(), a["method"].(string), params)
	if err != nil {
		return fleet.Fail("qa_chain %v: %v", a["method"], err)
	}
	return fleet.Result{"result": out}
}

// TestRegistrySurfaceTwins: with no admin_functions configured, the
// flawed twin's unguarded curator functions are read from its bytecode and
// reported at >= high, and the correct twin gives nothing at >= high; on a
// node without debug_traceCall the finding says which method gave it.
func TestRegistrySurfaceTwins(t *testing.T) {
	for _, noDebug := range []bool{false, true} {
		cw := startChainWorld(t, noDebug)
		for _, twin := range []registries.Twin{registries.Flawed, registries.Correct} {
			addr, err := registries.Deploy(context.Background(), cw.c, cw.sponsor, twin)
			if err != nil {
				t.Fatal(err)
			}
			name := twin.String()
			if noDebug {
				name += "/no-debug"
			}
			t.Run(name, func(t *testing.T) {
				w := &world{dial: fleet.Observe, handlers: map[string]func(map[string]any) fleet.Result{"qa_chain": cw.qaChain}}
				st := fleet.State{RunID: "r-surface", Target: fleet.Target{Registry: addr.String()}, Tools: toolList("qa_chain", "qa_report")}
				_, summary := drive(t, mustNew(t, "security", Options{}), st, w, 200)
				t.Log(summaries(w.reports))
				high := 0
				for _, r := range w.reports {
					if fleet.Severity(r["severity"].(string)).Rank() >= fleet.SeverityHigh.Rank() {
						high++
					}
				}
				switch {
				case twin == registries.Correct && high > 0:
					t.Errorf("the correct twin got %d findings at >= high:%s", high, summaries(w.reports))
				case twin == registries.Flawed && !noDebug:
					for _, sig := range registries.Privileged {
						sel := evm.Selector(sig)
						r := findReport(w.reports, "0x"+hexOf(sel[:]), "debug_traceCall")
						if r == nil || fleet.Severity(r["severity"].(string)).Rank() < fleet.SeverityHigh.Rank() {
							t.Errorf("%s not reported at >= high with its trace:%s\nsummary: %s", sig, summaries(w.reports), summary)
						}
					}
					if r := findReport(w.reports, "takes over a role"); r == nil || r["severity"] != "critical" {
						t.Errorf("the curator takeover not reported as critical:%s", summaries(w.reports))
					}
				case twin == registries.Flawed && noDebug:
					// Without a trace the evidence is what the registry's
					// own zero-argument functions answer before and after.
					if !strings.Contains(summary, "debug_traceCall is not available") {
						t.Errorf("the fallback is not said: %s", summary)
					}
					if r := findReport(w.reports, "eth_simulateV1 shows it succeeds", "takes over a role"); r == nil || r["severity"] != "critical" {
						t.Errorf("the curator takeover not found through eth_simulateV1:%s", summaries(w.reports))
					}
				}
				if twin == registries.Correct && !noDebug && !strings.Contains(summary, "registry surface:") {
					t.Errorf("the surface was not read: %s", summary)
				}
			})
		}
	}
}

// TestPlatformSignaturesMatchTheABIs: every state-changing function of the
// platform ABIs fleetd ships is either public by design (platformPublic) or
// one the general rule calls privileged (privilegedName, or a common
// signature); the reference registry's own admin functions are not on the
// lists (TestListsHoldNoFixtureNames), so the rule must say so by itself.
func TestPlatformSignaturesMatchTheABIs(t *testing.T) {
	for _, name := range []string{"INameRegistry", "NameRegistry", "FeedbackLog", "FeedbackLogV2"} {
		b, err := os.ReadFile(filepath.Join("..", "chain", "contracts", "build", name+".abi"))
		if err != nil {
			t.Fatal(err)
		}
		fns, err := evm.ParseABI(b)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fns {
			if !f.ReadOnly() && !slices.Contains(platformPublic, f.Signature) && !slices.Contains(knownSignatures, f.Signature) && !privilegedName.MatchString(f.Name()) {
				t.Errorf("%s: %s is neither public by design nor a known signature", name, f.Signature)
			}
		}
	}
}

func hexOf(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

// TestRegistrySurfaceEthCallOnly: on a node with neither debug_traceCall
// nor eth_simulateV1 the surface falls back to eth_call, says so, reports
// nothing at >= high for what it cannot tell from a getter, and the
// invariants say they were not checked and why.
func TestRegistrySurfaceEthCallOnly(t *testing.T) {
	cw := startChainWorld(t, true)
	addr, err := registries.Deploy(context.Background(), cw.c, cw.sponsor, registries.Flawed)
	if err != nil {
		t.Fatal(err)
	}
	qaChain := func(a map[string]any) fleet.Result {
		if a["method"] == "eth_simulateV1" {
			return fleet.Fail("qa_chain eth_simulateV1: the method eth_simulateV1 does not exist/is not available")
		}
		return cw.qaChain(a)
	}
	w := &world{dial: fleet.Observe, handlers: map[string]func(map[string]any) fleet.Result{"qa_chain": qaChain}}
	st := fleet.State{RunID: "r-ethcall", Target: fleet.Target{Registry: addr.String()}, Tools: toolList("qa_chain", "qa_report")}
	_, summary := drive(t, mustNew(t, "security", Options{}), st, w, 200)
	for _, want := range []string{"eth_simulateV1 is not available", "simulating with eth_call", "invariants over call sequences not checked"} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary lacks %q: %s", want, summary)
		}
	}
	for _, r := range w.reports {
		if fleet.Severity(r["severity"].(string)).Rank() >= fleet.SeverityHigh.Rank() {
			t.Errorf("a finding at >= high from eth_call alone on unnamed functions: %v", r["summary"])
		}
	}
}

// TestTestbedChainRules: security at observe against the testbed with a
// real qa_chain (reads and simulations on its dev chain): the configured
// admin flaw is still critical, the registry's other functions and the
// invariants give nothing at >= high (the testbed's web flaws are other
// tests' business), the unfunded key on /.env is filed
// below high as a key that controls nothing, and the run record holds no
// key the pages showed.
func TestTestbedChainRules(t *testing.T) {
	tg, url := startTestbedChain(t)
	c, err := chain.Dial(context.Background(), url, chain.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cw := chainWorld{c: c}
	base := httpOnlyTools(tg)
	tools := func(runID string, findings *[]map[string]any) *fleet.Registry {
		all := base(runID, findings)
		var names []string
		for _, tl := range all.List() {
			if tl.Name != "qa_chain" {
				names = append(names, tl.Name)
			}
		}
		reg, err := all.Subset(names)
		if err != nil {
			t.Fatal(err)
		}
		tool, _ := fleettest.Tool("qa_chain", fleet.Observe, func(ctx context.Context, raw json.RawMessage) (fleet.Result, error) {
			var a map[string]any
			json.Unmarshal(raw, &a)
			a["registry"] = tg.Registry
			r := cw.qaChain(a)
			if _, ok := r["ok"]; !ok {
				r["ok"] = true
			}
			return r, nil
		})
		if err := reg.Add(tool); err != nil {
			t.Fatal(err)
		}
		return reg
	}
	dir := filepath.Join(t.TempDir(), "runs")
	res, got := runLoopIn(t, dir, "security", fleet.Observe, tg, tools, Options{})
	for _, r := range got {
		sev := fleet.Severity(r["severity"].(string))
		s := r["summary"].(string)
		switch {
		case strings.Contains(s, "adminBurn(string[])"):
			if sev != fleet.SeverityCritical {
				t.Errorf("the unguarded adminBurn at %s: %s", sev, s)
			}
		case sev.Rank() >= fleet.SeverityHigh.Rank() && (r["surface"] == "registry" || strings.Contains(s, "private key")):
			t.Errorf("unexpected chain finding at %s: %s", sev, s)
		}
	}
	if r := findReport(got, "/.env", "controls nothing", "DEPLOYER_PRIVATE_KEY"); r == nil || r["severity"] != "medium" {
		t.Errorf("the unfunded deployer key: want a medium finding:%s", summaries(got))
	}
	if !strings.Contains(res.Summary, "registry surface:") || !strings.Contains(res.Summary, "invariants:") {
		t.Errorf("the chain rules did not run: %s", res.Summary)
	}
	// The record holds no key the pages showed.
	env, err := http.Get(replay.TargetOrigins(tg)[0] + "/.env")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(env.Body)
	env.Body.Close()
	key := regexp.MustCompile(`[0-9a-f]{64}`).FindString(string(body))
	var records []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			records = append(records, p)
		}
		return nil
	})
	if key == "" || len(records) == 0 {
		t.Fatalf("no key on /.env (%q) or no record under %s", body, dir)
	}
	for _, f := range records {
		b, _ := os.ReadFile(f)
		if strings.Contains(strings.ToLower(string(b)), key) {
			t.Errorf("run record %s holds the key from /.env", f)
		}
	}
}

// TestRegistrySurfaceNotAContract: an address without code, or code that
// is not a contract with a dispatcher, is a clear note, not a finding.
func TestRegistrySurfaceNotAContract(t *testing.T) {
	for code, want := range map[string]string{
		"0x":           "no code at the address",
		"0x6000600055": "never loads its calldata",
		"not hex":      "not hex code",
	} {
		w := &world{dial: fleet.Observe, handlers: map[string]func(map[string]any) fleet.Result{
			"qa_chain": func(a map[string]any) fleet.Result {
				if a["method"] == "eth_getCode" {
					b, _ := json.Marshal(code)
					return fleet.Result{"result": json.RawMessage(b)}
				}
				return fleet.Fail("unexpected %v", a["method"])
			},
		}}
		st := fleet.State{RunID: "r-nocode", Target: fleet.Target{Registry: "0x00000000000000000000000000000000000000aa"}, Tools: toolList("qa_chain", "qa_report")}
		_, summary := drive(t, mustNew(t, "security", Options{}), st, w, 20)
		if !strings.Contains(summary, want) || len(w.reports) > 0 {
			t.Errorf("code %q: summary %s, reports %v; want a note saying %q", code, summary, w.reports, want)
		}
	}
}

// TestRegistrySurfaceNamesFromDocs: an ABI the docs publish names the
// selectors it finds, and the finding says where the name came from.
func TestRegistrySurfaceNamesFromDocs(t *testing.T) {
	cw := startChainWorld(t, false)
	addr, err := registries.Deploy(context.Background(), cw.c, cw.sponsor, registries.Flawed)
	if err != nil {
		t.Fatal(err)
	}
	abi, err := os.ReadFile(filepath.Join("..", "fixtures", "registries", "contracts", "build", "OpenGuildRegistry.abi"))
	if err != nil {
		t.Fatal(err)
	}
	const docs = "http://plat.test/docs/registry.md"
	const abiURL = "http://plat.test/docs/registry.abi.json"
	pages := map[string]fleet.Result{
		docs:   fetchOK("# Registry\n\nThe curator moves the role with `reassignCurator(address to)`. See [the ABI](registry.abi.json).\n", map[string]any{"content-type": "text/markdown"}),
		abiURL: fetchOK(string(abi), map[string]any{"content-type": "application/json"}),
	}
	w := &world{dial: fleet.Observe, handlers: map[string]func(map[string]any) fleet.Result{
		"qa_chain": cw.qaChain,
		"qa_fetch": func(a map[string]any) fleet.Result {
			if r, ok := pages[a["url"].(string)]; ok {
				return r
			}
			return fleet.Result{"ok": true, "status": 404, "body": "not found", "headers": map[string]any{}}
		},
	}}
	tg := fleet.Target{Registry: addr.String(), Docs: []string{docs}, FetchAllow: []string{"plat.test"}}
	st := fleet.State{RunID: "r-docs-abi", Target: tg, Tools: toolList("qa_chain", "qa_fetch", "qa_report")}
	_, summary := drive(t, mustNew(t, "security", Options{}), st, w, 200)
	if r := findReport(w.reports, "reassignCurator(address) (selector 0xbe4efccc, named from "+docs, "takes over a role"); r == nil || r["severity"] != "critical" {
		t.Errorf("the finding does not name the function from the docs:%s\n%s", summaries(w.reports), summary)
	}
	if r := findReport(w.reports, "adjustListingFee(uint256) (selector 0xfdb336ac, named from the ABI at "+abiURL); r == nil || r["severity"] != "critical" {
		t.Errorf("the finding does not name the function from the ABI (a fee setter changing a contract-wide slot is critical):%s", summaries(w.reports))
	}
}

// TestRegistrySurfaceNamesFromConfigABIs: target.abis names the registry's
// functions from a file (loaded by OptionsFor) or a URL (fetched by the
// run), with no docs; a URL that is not an ABI is a note naming it.
func TestRegistrySurfaceNamesFromConfigABIs(t *testing.T) {
	cw := startChainWorld(t, false)
	addr, err := registries.Deploy(context.Background(), cw.c, cw.sponsor, registries.Flawed)
	if err != nil {
		t.Fatal(err)
	}
	abiFile := filepath.Join("..", "fixtures", "registries", "contracts", "build", "OpenGuildRegistry.abi")
	abi, err := os.ReadFile(abiFile)
	if err != nil {
		t.Fatal(err)
	}
	const abiURL = "http://plat.test/abi/registry.json"
	const notABI = "http://plat.test/abi/broken.json"
	pages := map[string]fleet.Result{
		abiURL: fetchOK(string(abi), map[string]any{"content-type": "application/json"}),
		notABI: fetchOK(`{"contract": "no abi here"}`, map[string]any{"content-type": "application/json"}),
	}
	for _, tc := range []struct {
		abis   []string
		source string
	}{
		{[]string{abiFile}, "target.abis " + abiFile},
		{[]string{notABI, abiURL}, "target.abis " + abiURL},
	} {
		w := &world{dial: fleet.Observe, handlers: map[string]func(map[string]any) fleet.Result{
			"qa_chain": cw.qaChain,
			"qa_fetch": func(a map[string]any) fleet.Result {
				if r, ok := pages[a["url"].(string)]; ok {
					return r
				}
				return fleet.Result{"ok": true, "status": 404, "body": "not found", "headers": map[string]any{}}
			},
		}}
		tg := fleet.Target{Registry: addr.String(), ABIs: tc.abis, FetchAllow: []string{"plat.test"}}
		opts, err := OptionsFor(tg)
		if err != nil {
			t.Fatal(err)
		}
		st := fleet.State{RunID: "r-config-abi", Target: tg, Tools: toolList("qa_chain", "qa_fetch", "qa_report")}
		_, summary := drive(t, mustNew(t, "security", opts), st, w, 200)
		if r := findReport(w.reports, "adjustListingFee(uint256) (selector 0xfdb336ac, named from "+tc.source); r == nil || r["severity"] != "critical" {
			t.Errorf("%v: the finding does not name the function from %s:%s\n%s", tc.abis, tc.source, summaries(w.reports), summary)
		}
		if slices.Contains(tc.abis, notABI) && !strings.Contains(summary, "target.abis "+notABI+" is not a JSON contract ABI") {
			t.Errorf("no note for the URL that is not an ABI:\n%s", summary)
		}
	}
}

func TestLoadABIs(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.json", `[{"type":"function","name":"setFee","inputs":[{"type":"uint256"}],"stateMutability":"nonpayable"}]`)
	artifact := write("artifact.json", `{"abi":[{"type":"function","name":"pause","inputs":[]}]}`)
	abis, err := LoadABIs(fleet.Target{ABIs: []string{good, "https://plat.test/abi.json", artifact}})
	if err != nil || len(abis) != 2 || abis[0].Functions[0].Signature != "setFee(uint256)" || abis[1].Functions[0].Signature != "pause()" {
		t.Fatalf("LoadABIs = %+v, %v", abis, err)
	}
	for _, tc := range []struct{ path, want string }{
		{filepath.Join(dir, "missing.json"), "target.abis[0]: read abi " + filepath.Join(dir, "missing.json")},
		{write("bad.json", `[{"type":"function",`), "is not a JSON contract ABI"},
		{write("events.json", `[{"type":"event","name":"X","inputs":[]}]`), "holds no function"},
		{write("badname.json", `[{"type":"function","name":"1x","inputs":[]}]`), "is not a JSON contract ABI: abi entry 0"},
		{dir, "not a regular file"},
	} {
		_, err := LoadABIs(fleet.Target{ABIs: []string{tc.path}})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("LoadABIs(%s) = %v, want an error with %q", tc.path, err, tc.want)
		}
	}
}
