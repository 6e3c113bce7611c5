package trajectory

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// devPhrase is the well-known development mnemonic (Hardhat, Anvil).
const devPhrase = "test test test test test test test test test test test junk"

// notPhrase is 12 wordlist words whose checksum does not match.
const notPhrase = "test test test test test test test test test test test test"

// bip39Vector is one of BIP-39's English test vectors (trezor/python-mnemonic
// vectors.json, the file BIP-39 points to; passphrase "TREZOR").
type bip39Vector struct {
	Entropy, Mnemonic, Seed, Xprv string
}

func readVectors(t testing.TB) []bip39Vector {
	t.Helper()
	b, err := os.ReadFile("testdata/bip39-vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var vs []bip39Vector
	if err := json.Unmarshal(b, &vs); err != nil {
		t.Fatal(err)
	}
	if len(vs) != 24 {
		t.Fatalf("%d vectors, want 24", len(vs))
	}
	return vs
}

// TestBIP39Wordlist: the embedded list is BIP-39's, byte for byte.
func TestBIP39Wordlist(t *testing.T) {
	sum := sha256.Sum256([]byte(bip39English))
	if got := hex.EncodeToString(sum[:]); got != "2f5eed53a4727b4bf8880d8f3f199efc90e58503646d9ff8eff3a2ed3b24dbda" {
		t.Errorf("wordlist SHA-256 %s", got)
	}
	if len(bip39Index) != 2048 {
		t.Errorf("%d distinct words", len(bip39Index))
	}
	if bip39Index["abandon"] != 0 || bip39Index["zoo"] != 2047 {
		t.Errorf("abandon %d, zoo %d", bip39Index["abandon"], bip39Index["zoo"])
	}
}

// TestMnemonicVectors: every official vector decodes to its entropy and is
// found whole in text.
func TestMnemonicVectors(t *testing.T) {
	for _, v := range readVectors(t) {
		ent, err := MnemonicEntropy(strings.Fields(v.Mnemonic))
		if err != nil {
			t.Errorf("%s: %v", v.Mnemonic, err)
			continue
		}
		if got := hex.EncodeToString(ent); got != v.Entropy {
			t.Errorf("%s: entropy %s, want %s", v.Mnemonic, got, v.Entropy)
		}
		text := "mnemonic: " + v.Mnemonic + "\n"
		if got := MnemonicSpans(text); !cmp.Equal(got, [][2]int{{10, 10 + len(v.Mnemonic)}}) {
			t.Errorf("%s: spans %v", v.Mnemonic, got)
		}
		// "seed" is a list word: the run is one word longer than the
		// phrase, and the phrase is among the windows found.
		text = "seed: " + v.Mnemonic
		if got := MnemonicSpans(text); !slices.Contains(got, [2]int{6, len(text)}) {
			t.Errorf("seed: %s: spans %v", v.Mnemonic, got)
		}
	}
}

func TestMnemonicEntropyErrors(t *testing.T) {
	for _, tc := range []struct {
		words string
		want  string
	}{
		{"test test test test test test test test test test junk", "11 words"},
		{"test test test test test test test test test test test test test", "13 words"},
		{"test test test test test test test test test test tset junk", `word 11 ("tset")`},
		{"test test test test test test test test test test test testing", `word 12 ("testing")`},
		{notPhrase, "checksum"},
	} {
		_, err := MnemonicEntropy(strings.Fields(tc.words))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one naming %s", tc.words, err, tc.want)
		}
	}
	if _, err := MnemonicEntropy(strings.Fields(notPhrase)); !errors.Is(err, ErrMnemonicChecksum) {
		t.Errorf("bad checksum: %v", err)
	}
	if _, err := MnemonicEntropy(strings.Fields(strings.ToUpper(devPhrase))); err != nil {
		t.Errorf("upper case: %v", err)
	}
}

func TestMnemonicSpans(t *testing.T) {
	words := strings.Fields(devPhrase)
	list := `["` + strings.Join(words, `", "`) + `"]`
	var numbered strings.Builder
	for i, w := range words {
		numbered.WriteString(" " + itoa(i+1) + ". " + w + "\n")
	}
	// 29 wordlist words: a word list, not a phrase, though it holds one.
	long := devPhrase + " " + strings.Repeat("zoo ", 17)
	for _, tc := range []struct {
		name, text string
		want       []string // the phrases found, as text
	}{
		{"plain", "MNEMONIC=" + devPhrase, []string{devPhrase}},
		{"sentence", "Our wallet seed is " + devPhrase + ". Keep it safe.", []string{devPhrase}},
		{"json array", `{"words":` + list + `}`, []string{list[2 : len(list)-2]}},
		{"numbered", numbered.String(), []string{strings.TrimSpace(numbered.String()[3:])}},
		{"markup", "<ol>" + strings.ReplaceAll("<li><span class=\"w\">"+strings.ReplaceAll(devPhrase, " ", "</span></li>\n<li><span class=\"w\">")+"</span></li>", "", "") + "</ol>",
			[]string{strings.ReplaceAll(devPhrase, " ", "</span></li>\n<li><span class=\"w\">")}},
		{"not a tag", strings.ReplaceAll(devPhrase, " ", " < ok > "), nil},
		{"upper case", strings.ToUpper(devPhrase), []string{strings.ToUpper(devPhrase)}},
		{"checksum wrong", "words: " + notPhrase, nil},
		{"11 words", strings.Join(words[1:], " "), nil},
		{"identifier", strings.ReplaceAll(devPhrase, " ", "_"), nil},
		{"digits glued", strings.ReplaceAll(devPhrase, " ", "1 "), nil},
		{"gap too wide", strings.Join(words[:6], " ") + strings.Repeat(" ", 13) + strings.Join(words[6:], " "), nil},
		{"two", devPhrase + " and " + devPhrase, []string{devPhrase, devPhrase}},
		{"list words around", "wallet " + devPhrase + " about", []string{devPhrase}},
		{"label of list words", "secret phrase: " + devPhrase + "\nseed=" + devPhrase, []string{devPhrase, devPhrase}},
		{"colon inside", strings.Replace(devPhrase, " ", ": ", 1), nil},
		{"too long a run", long, nil},
		{"empty", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, sp := range MnemonicSpans(tc.text) {
				got = append(got, tc.text[sp[0]:sp[1]])
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("phrases (-want +got):\n%s", diff)
			}
			for _, p := range got {
				if _, err := MnemonicEntropy(MnemonicWords(p)); err != nil {
					t.Errorf("a span that is not a phrase: %q: %v", p, err)
				}
			}
		})
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestRedactMnemonic: a phrase is redacted in text and in a record's JSON
// whatever the field; 12 list words with a wrong checksum are kept.
func TestRedactMnemonic(t *testing.T) {
	if got := Redact("backup: " + devPhrase + " (do not share)"); got != "backup: [REDACTED:mnemonic] (do not share)" {
		t.Errorf("Redact: %q", got)
	}
	if got := Redact("words: " + notPhrase); got != "words: "+notPhrase {
		t.Errorf("Redact changed a non-phrase: %q", got)
	}
	doc, _ := json.Marshal(map[string]any{"body": "<p>" + devPhrase + "</p>", "tx_hash": devPhrase})
	out, err := defaultRedactor.RedactJSON(doc)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "junk") || strings.Count(string(out), "[REDACTED:mnemonic]") != 2 {
		t.Errorf("RedactJSON: %s", out)
	}
}

// FuzzMnemonicSpans: spans are in order of their start, inside the text,
// and each is a phrase with a valid checksum.
func FuzzMnemonicSpans(f *testing.F) {
	for _, s := range []string{
		devPhrase, notPhrase, `["` + strings.ReplaceAll(devPhrase, " ", `","`) + `"]`,
		"1. legal 2. winner 3. thank 4. year 5. wave 6. sausage 7. worth 8. useful 9. legal 10. winner 11. thank 12. yellow",
		strings.Repeat("abandon ", 60) + "about", "ZOO zoo zoo zoo zoo zoo zoo zoo zoo zoo zoo WRONG",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		last := 0
		for _, sp := range MnemonicSpans(s) {
			if sp[0] < last || sp[1] <= sp[0] || sp[1] > len(s) {
				t.Fatalf("span %v after one starting at %d in %d bytes", sp, last, len(s))
			}
			last = sp[0]
			if _, err := MnemonicEntropy(MnemonicWords(s[sp[0]:sp[1]])); err != nil {
				t.Fatalf("span %q: %v", s[sp[0]:sp[1]], err)
			}
		}
		if Redact(s) != Redact(Redact(s)) {
			t.Fatalf("redaction not idempotent on %q", s)
		}
	})
}

// BenchmarkMnemonicSpans scans 64 KiB of English prose (many short words,
// some in the list), the common case in fetched pages.
func BenchmarkMnemonicSpans(b *testing.B) {
	prose := strings.Repeat("The registry lets any account claim a name and attach metadata; fees go to the owner, who can release it later. ", 600)
	b.SetBytes(int64(len(prose)))
	b.ReportAllocs()
	for b.Loop() {
		if len(MnemonicSpans(prose)) != 0 {
			b.Fatal("a phrase in prose")
		}
	}
}
