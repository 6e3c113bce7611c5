package specialists

import (
	"context"
	"encoding/json"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/chain/devchain"
	"github.com/qafleet/fleetd/chain/evm"
	"github.com/qafleet/fleetd/fixtures/registries"
	"github.com/qafleet/fleetd/fleet"
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
// an admin function the common signatures name.
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
			if !f.ReadOnly() && !slices.Contains(platformPublic, f.Signature) && !slices.Contains(knownSignatures, f.Signature) {
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
