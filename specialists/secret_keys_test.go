package specialists

import (
	"context"
	"encoding/asn1"
	"encoding/hex"
	"encoding/pem"
	"math/big"
	"slices"
	"strings"
	"testing"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/chain/evm"
	"github.com/qafleet/fleetd/fixtures/registries"
	"github.com/qafleet/fleetd/fleet"
)

// pemOf is k as a SEC 1 "EC PRIVATE KEY" block on secp256k1.
func pemOf(t *testing.T, k *chain.Key) string {
	t.Helper()
	der, err := asn1.Marshal(struct {
		Version    int
		PrivateKey []byte
		Curve      asn1.ObjectIdentifier `asn1:"optional,explicit,tag:0"`
	}{1, k.PrivateKey().D.FillBytes(make([]byte, 32)), asn1.ObjectIdentifier{1, 3, 132, 0, 10}})
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}))
}

// keyHex is k's private key as 64 hex digits.
func keyHex(k *chain.Key) string {
	return hex.EncodeToString(k.PrivateKey().D.FillBytes(make([]byte, 32)))
}

// TestVerifiedKeys: key-shaped values on public pages are checked against
// the chain whatever their name: one that holds the registry's curator
// role (no funds, no transactions) under an abbreviation and a funded one
// with no name at all are critical and say what they control; a random
// 64-hex value is not reported at high, named or not; no summary repeats a
// key.
func TestVerifiedKeys(t *testing.T) {
	cw := startChainWorld(t, false)
	ctx := context.Background()
	reg, err := registries.Deploy(ctx, cw.c, cw.sponsor, registries.Correct)
	if err != nil {
		t.Fatal(err)
	}
	curator, _ := chain.GenerateKey() // takes the role, holds nothing, never sends
	data, _ := evm.Calldata("reassignCurator(address)", evm.Fill{Caller: curator.Address()})
	if _, err := cw.c.SendRaw(ctx, cw.sponsor, reg, data, nil); err != nil {
		t.Fatal(err)
	}
	funded, _ := chain.GenerateKey()
	if _, err := cw.c.Transfer(ctx, cw.sponsor, funded.Address(), big.NewInt(1e15)); err != nil {
		t.Fatal(err)
	}
	random1, _ := chain.GenerateKey()
	random2, _ := chain.GenerateKey()

	const host = "http://plat.test"
	pages := map[string]string{
		host + "/app.js":     "const cfg = { sgn: \"0x" + keyHex(curator) + "\", build: \"0x" + keyHex(random1) + "\" };\n",
		host + "/status":     "<pre>\n" + strings.ToUpper(keyHex(funded)) + "\n</pre>",
		host + "/env.txt":    "PRIVATE_KEY=0x" + keyHex(random2) + "\n",
		host + "/build.html": "<p>artifact " + keyHex(random1) + "</p>",
		host + "/ops.txt":    "deploy key:\n" + pemOf(t, funded) + "rsa:\n-----BEGIN RSA PRIVATE KEY-----\nMIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu\n-----END RSA PRIVATE KEY-----\n",
	}
	tg := fleet.Target{Registry: reg.String(), FetchAllow: []string{"plat.test"}}
	for u := range pages {
		tg.Docs = append(tg.Docs, u)
	}
	slices.Sort(tg.Docs)
	w := &world{dial: fleet.Observe, handlers: map[string]func(map[string]any) fleet.Result{
		"qa_chain": cw.qaChain,
		"qa_fetch": func(a map[string]any) fleet.Result {
			if b, ok := pages[a["url"].(string)]; ok {
				return fetchOK(b, map[string]any{"content-type": "text/plain"})
			}
			return fleet.Result{"ok": true, "status": 404, "body": "not found", "headers": map[string]any{}}
		},
	}}
	st := fleet.State{RunID: "r-keys", Target: tg, Tools: toolList("qa_chain", "qa_fetch", "qa_report")}
	_, summary := drive(t, mustNew(t, "security", Options{}), st, w, 300)
	t.Log(summaries(w.reports))

	addrOf := func(k *chain.Key) string { return strings.ToLower(k.Address().String()) }
	if r := findReport(w.reports, "/app.js", "live private key", addrOf(curator), "returns"); r == nil || r["severity"] != "critical" {
		t.Errorf("the curator's key under an abbreviation is not critical with its role:%s\n%s", summaries(w.reports), summary)
	}
	if r := findReport(w.reports, "/status", "live private key", addrOf(funded), "wei"); r == nil || r["severity"] != "critical" {
		t.Errorf("the funded unnamed key is not critical with its balance:%s", summaries(w.reports))
	}
	if r := findReport(w.reports, "/ops.txt", "live private key", "a PEM private key", addrOf(funded)); r == nil || r["severity"] != "critical" {
		t.Errorf("the funded key as a secp256k1 PEM block is not critical:%s", summaries(w.reports))
	}
	if r := findReport(w.reports, "/ops.txt", "a PEM private key (begins"); r == nil {
		t.Errorf("the RSA PEM block (no account to check) is not in the page's finding:%s", summaries(w.reports))
	}
	if r := findReport(w.reports, "/env.txt", "controls nothing"); r == nil || r["severity"] != "medium" {
		t.Errorf("a named random key: want one medium finding:%s", summaries(w.reports))
	}
	for _, r := range w.reports {
		s := r["summary"].(string)
		if strings.Contains(s, "/build.html") {
			t.Errorf("an unnamed random 64-hex value is reported: %s", s)
		}
		for _, k := range []*chain.Key{curator, funded, random1, random2} {
			if strings.Contains(strings.ToLower(s), keyHex(k)[6:30]) {
				t.Errorf("a summary repeats a key: %s", s)
			}
		}
	}
}
