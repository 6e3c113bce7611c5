package replay

import (
	"strings"
	"testing"

	"github.com/qafleet/fleetd/trajectory"
)

const (
	candKey  = "4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"
	candHash = "5c504ed432cb51138bcf09aa5e8a410dd4a1e204ef84bfed1be16dfba1b22060"
)

func TestKeyCandidates(t *testing.T) {
	text := "const cfg = {\n  sgn: '0x" + candKey + "',\n  txHash: '0x" + candHash + "',\n}\n" +
		"DEPLOYER_PRIVATE_KEY=" + candKey + "\n" +
		"tx 0x" + candHash + " mined; word 0x000000000000000000000000" + candHash[:40] + "\n" +
		"the value " + strings.ToUpper(candHash) + " alone\n" +
		"-----BEGIN EC PRIVATE KEY-----\nMC4CAQEE\n-----END EC PRIVATE KEY-----\n"
	got := KeyCandidates(text)
	type c struct {
		kind, name string
		named      bool
		line       int
	}
	want := []c{{"hex", "sgn", false, 2}, {"hex", "DEPLOYER_PRIVATE_KEY", true, 5}, {"hex", "", false, 7}, {"PEM", "", true, 8}}
	if len(got) != len(want) {
		t.Fatalf("got %d candidates, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.Kind != w.kind || g.Name != w.name || g.Named != w.named || g.Line != w.line {
			t.Errorf("candidate %d = %+v, want %+v", i, g, w)
		}
		if strings.Contains(g.Describe(), g.Value()[6:12]) {
			t.Errorf("Describe leaks the value: %s", g.Describe())
		}
	}
	// Every hex candidate is redacted in run records.
	red := trajectory.Redact(text)
	for _, g := range got {
		if g.Kind == "hex" && strings.Contains(red, strings.TrimPrefix(g.Value(), "0x")) {
			t.Errorf("a candidate survives the records' redaction: %s", g.Describe())
		}
	}
	if !strings.Contains(red, "txHash: '0x"+candHash) {
		t.Errorf("a labelled hash was redacted: %s", red)
	}
}

const devPhrase = "test test test test test test test test test test test junk"

// TestMnemonicCandidates: phrases are candidates whatever separates their
// words, named by a label on their line or the line above; 12 list words
// with a wrong checksum are not; Describe gives no word of a phrase.
func TestMnemonicCandidates(t *testing.T) {
	text := "<h2>Recovery phrase</h2>\n<p>" + devPhrase + "</p>\n" +
		"words: test test test test test test test test test test test test\n" +
		`{"cfg": {"m": ["` + strings.ReplaceAll(devPhrase, " ", `", "`) + `"]}}` + "\n" +
		"DEPLOYER_MNEMONIC=\"" + strings.ToUpper(devPhrase) + "\"\n"
	got := KeyCandidates(text)
	type c struct {
		name  string
		named bool
		line  int
	}
	want := []c{{"", true, 2}, {"", false, 4}, {"DEPLOYER_MNEMONIC", true, 5}}
	if len(got) != len(want) {
		t.Fatalf("got %d candidates, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.Kind != "mnemonic" || g.Name != w.name || g.Named != w.named || g.Line != w.line {
			t.Errorf("candidate %d = %+v, want %+v", i, g, w)
		}
		if d := g.Describe(); strings.Contains(strings.ToLower(d), "test") || !strings.Contains(d, "12-word mnemonic phrase") {
			t.Errorf("Describe: %s", d)
		}
		if words := g.Words(); strings.Join(words, " ") != devPhrase {
			t.Errorf("candidate %d words %q", i, words)
		}
	}
	red := trajectory.Redact(text)
	if strings.Count(red, "junk") != 0 || !strings.Contains(red, "words: test test") {
		t.Errorf("record redaction: %s", red)
	}
	if r := redactSecrets(text); strings.Contains(strings.ToLower(r), "junk") || !strings.Contains(r, "words: test test") {
		t.Errorf("summary redaction: %s", r)
	}
}

// FuzzKeyCandidates: never panics; every candidate's value is in the text
// at its line, no hex or phrase candidate survives the run records' or the
// summaries' redaction, and every phrase has a valid checksum.
func FuzzKeyCandidates(f *testing.F) {
	f.Add("PRIVATE_KEY=0x" + candKey + "\ntx " + candHash)
	f.Add("-----BEGIN PRIVATE KEY-----\nabc")
	f.Add(candKey + candKey)
	f.Add("seed: " + devPhrase + " and " + strings.ToUpper(devPhrase))
	f.Fuzz(func(t *testing.T, text string) {
		for _, c := range KeyCandidates(text) {
			if !strings.Contains(text, c.Value()) || c.Line < 1 || c.Line > strings.Count(text, "\n")+1 {
				t.Fatalf("candidate %+v not in the text", c)
			}
			// The value may also sit inside a longer run that is no
			// candidate ("1…10" in 65 digits): one occurrence at least
			// must go.
			n := strings.Count(text, c.Value())
			if c.Kind != "PEM" && strings.Count(trajectory.Redact(text), c.Value()) >= n {
				t.Fatalf("%s candidate %s… kept by the redaction", c.Kind, c.Prefix)
			}
			if c.Kind != "PEM" && strings.Count(redactSecrets(text), c.Value()) >= n {
				t.Fatalf("%s candidate %s… kept by the summaries' redaction", c.Kind, c.Prefix)
			}
			if c.Kind == "mnemonic" {
				if _, err := trajectory.MnemonicEntropy(trajectory.MnemonicWords(c.Value())); err != nil {
					t.Fatalf("phrase candidate: %v", err)
				}
			}
		}
	})
}
