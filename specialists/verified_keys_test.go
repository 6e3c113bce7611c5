package specialists

import (
	"context"
	"encoding/asn1"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/chain/evm"
	"github.com/qafleet/fleetd/crawl"
	"github.com/qafleet/fleetd/fixtures/registries"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/specialists/replay"
	"github.com/qafleet/fleetd/trajectory"
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

// randomPhrase returns a fresh 12-word BIP-39 phrase (valid is true: its
// checksum matches) or 12 list words whose checksum does not (false).
func randomPhrase(t *testing.T, valid bool) string {
	t.Helper()
	list, err := os.ReadFile(filepath.Join("..", "trajectory", "bip39_english.txt"))
	if err != nil {
		t.Fatal(err)
	}
	words := strings.Fields(string(list))
	for {
		var w []string
		for range 12 {
			w = append(w, words[rand.IntN(len(words))])
		}
		_, err := trajectory.MnemonicEntropy(w)
		if (err == nil) == valid {
			return strings.Join(w, " ")
		}
	}
}

// phraseAccount is the address of a phrase's account m/44'/60'/0'/0/i.
func phraseAccount(t *testing.T, phrase string, i int) fleet.Address {
	t.Helper()
	seed, err := evm.MnemonicSeed(strings.Fields(phrase), "")
	if err != nil {
		t.Fatal(err)
	}
	accts, err := evm.EthAccounts(seed[:], i+1)
	if err != nil || len(accts) != i+1 {
		t.Fatal(len(accts), err)
	}
	return fleet.Address(accts[i].Address)
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
// key. Mnemonic phrases likewise: one whose third account
// (m/44'/60'/0'/0/2) is funded, shown as a numbered list with no name, is
// critical with that account and its path; a valid unfunded one under a
// label is medium and says which accounts it derives; 12 list words with
// a wrong checksum give nothing; a funded phrase that only the rendered
// DOM shows is critical, its repro the chain read.
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
	livePhrase, unusedPhrase, notPhrase := randomPhrase(t, true), randomPhrase(t, true), randomPhrase(t, false)
	liveAcct := phraseAccount(t, livePhrase, 2)
	if _, err := cw.c.Transfer(ctx, cw.sponsor, liveAcct, big.NewInt(7e14)); err != nil {
		t.Fatal(err)
	}
	renderedPhrase := randomPhrase(t, true)
	renderedAcct := phraseAccount(t, renderedPhrase, 0)
	if _, err := cw.c.Transfer(ctx, cw.sponsor, renderedAcct, big.NewInt(3e14)); err != nil {
		t.Fatal(err)
	}
	var numbered strings.Builder
	for i, w := range strings.Fields(livePhrase) {
		fmt.Fprintf(&numbered, "<li>%d. %s</li>\n", i+1, w)
	}

	// Two runs on one chain: the security rule reports at most four key
	// pages per run, and the keys' pages fill them.
	run := func(runID string, pages map[string]string, opts Options) ([]map[string]any, string) {
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
		st := fleet.State{RunID: runID, Target: tg, Tools: toolList("qa_chain", "qa_fetch", "qa_report")}
		_, summary := drive(t, mustNew(t, "security", opts), st, w, 300)
		t.Log(summaries(w.reports))
		return w.reports, summary
	}
	const host = "http://plat.test"
	keyReports, summary := run("r-keys", map[string]string{
		host + "/app.js":     "const cfg = { sgn: \"0x" + keyHex(curator) + "\", build: \"0x" + keyHex(random1) + "\" };\n",
		host + "/status":     "<pre>\n" + strings.ToUpper(keyHex(funded)) + "\n</pre>",
		host + "/env.txt":    "PRIVATE_KEY=0x" + keyHex(random2) + "\n",
		host + "/build.html": "<p>artifact " + keyHex(random1) + "</p>",
		host + "/ops.txt":    "deploy key:\n" + pemOf(t, funded) + "rsa:\n-----BEGIN RSA PRIVATE KEY-----\nMIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu\n-----END RSA PRIVATE KEY-----\n",
	}, Options{})
	phraseReports, _ := run("r-phrases", map[string]string{
		host + "/words.html": "<ol>\n" + numbered.String() + "</ol>",
		host + "/backup.md":  "## Wallet backup\n\nseed phrase: " + unusedPhrase + "\n",
		host + "/quiz.txt":   "Recovery phrase (a practice one): " + notPhrase + "\n",
		host + "/wallet":     shellHTML,
	}, Options{Renderer: &fakeRenderer{fn: func(u string) (crawl.Rendered, error) {
		out := crawl.Rendered{URL: u, FinalURL: u, Status: 200, Settled: true, HTML: shellHTML}
		if strings.HasSuffix(u, "/wallet") {
			// The page's script fetches the phrase and shows it: no
			// response as served holds it.
			out.HTML = strings.Replace(shellHTML, "<main id=view>", "<main id=view><p>"+renderedPhrase+"</p>", 1)
		}
		return out, nil
	}}})
	w := struct{ reports []map[string]any }{append(keyReports, phraseReports...)}

	addrOf := func(k *chain.Key) string { return strings.ToLower(k.Address().String()) }
	addrOf2 := func(a fleet.Address) string { return strings.ToLower(a.String()) }
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
	if r := findReport(w.reports, "/words.html", "live mnemonic phrase", "12-word", addrOf2(liveAcct), "m/44'/60'/0'/0/2", "700000000000000 wei"); r == nil || r["severity"] != "critical" {
		t.Errorf("the phrase with a funded third account is not critical with that account and path:%s", summaries(w.reports))
	}
	unused0, unused4 := phraseAccount(t, unusedPhrase, 0), phraseAccount(t, unusedPhrase, 4)
	if r := findReport(w.reports, "/backup.md", "mnemonic phrase that controls nothing", addrOf2(unused0), addrOf2(unused4), "m/44'/60'/0'/0/4"); r == nil || r["severity"] != "medium" {
		t.Errorf("a named valid phrase that controls nothing: want a medium finding naming the accounts checked:%s", summaries(w.reports))
	}
	if r := findReport(w.reports, "/wallet", "once a browser runs its scripts", "live mnemonic phrase", addrOf2(renderedAcct), "m/44'/60'/0'/0/0"); r == nil || r["severity"] != "critical" {
		t.Errorf("a live phrase only the rendered DOM shows: want it critical, replayed by the chain read:%s", summaries(w.reports))
	} else if rp, _ := r["repro"].(map[string]any); rp == nil || rp["tool"] != "qa_chain" {
		t.Errorf("the rendered phrase's repro: %v", r["repro"])
	}
	for _, r := range w.reports {
		s := r["summary"].(string)
		if strings.Contains(s, "/build.html") || strings.Contains(s, "/quiz.txt") {
			t.Errorf("an unnamed random 64-hex value or a non-phrase is reported: %s", s)
		}
		for _, k := range []*chain.Key{curator, funded, random1, random2} {
			if strings.Contains(strings.ToLower(s), keyHex(k)[6:30]) {
				t.Errorf("a summary repeats a key: %s", s)
			}
		}
		for _, ph := range []string{livePhrase, unusedPhrase, renderedPhrase} {
			if words := strings.Fields(ph); strings.Contains(s, words[0]+" "+words[1]) || strings.Contains(s, ". "+words[1]+"<") {
				t.Errorf("a summary repeats a phrase: %s", s)
			}
		}
	}
}

// TestKeyFindingOverlaps: two readings of one run of list words as a
// phrase ("secret phrase" on the line above are list words too) make one
// part of a finding: the live one when there is one, else the first.
func TestKeyFindingOverlaps(t *testing.T) {
	var cands []replay.KeyCandidate
	for tries := 0; len(cands) != 2; tries++ { // 1 in ~8 phrases has exactly one more reading
		if tries == 2000 {
			t.Fatal("no phrase with a second reading in 2000 tries")
		}
		cands = replay.KeyCandidates("Wallet backup\nsecret phrase\n" + randomPhrase(t, true) + "\n")
	}
	if len(cands) != 2 || !cands[0].Overlaps(cands[1]) || !cands[0].Named || !cands[1].Named {
		t.Fatalf("candidates %+v", cands)
	}
	dead := func(c replay.KeyCandidate) keyVerdict {
		return keyVerdict{key: pageKey{KeyCandidate: c, accts: []account{{path: "m/44'/60'/0'/0/0"}}},
			accts: []acctVerdict{{account: account{path: "m/44'/60'/0'/0/0"}, balance: big.NewInt(0)}}}
	}
	sev, parts := keyFinding([]keyVerdict{dead(cands[0]), dead(cands[1])})
	if sev != fleet.SeverityMedium || len(parts) != 1 {
		t.Errorf("two dead readings: %s %q", sev, parts)
	}
	live := dead(cands[1])
	live.accts[0].balance = big.NewInt(5)
	sev, parts = keyFinding([]keyVerdict{dead(cands[0]), live})
	if sev != fleet.SeverityCritical || len(parts) != 1 || !strings.Contains(parts[0], "live mnemonic phrase") {
		t.Errorf("a live reading beside a dead one: %s %q", sev, parts)
	}
}
