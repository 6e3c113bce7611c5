package trajectory

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

const (
	privHex  = "4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"
	txHex    = "5c504ed432cb51138bcf09aa5e8a410dd4a1e204ef84bfed1be16dfba1b22060"
	googleK  = "AIzaSyD3f9Qm7xVbN2kLp0aZcW8rT5uYhJ1gE4s"
	openaiK  = "sk-proj-4fT9kQ2mXv7LbN1pRz8WcY3d"
	githubK  = "ghp_1a2B3c4D5e6F7g8H9i0JkLmNoPqRsTuVwXyZ"
	githubFG = "github_pat_11ABCDEFG0123456789abcdefghijklmnop"
	awsK     = "AKIAIOSFODNN7EXAMPLE"
	jwt      = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
	pemKey   = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBkg4LVWM9nuwNSk3yByxZpYRTBnVJk5oZ4KpAnDRUZUoAoGCCqGSM49\nAwEHoUQDQgAE\n-----END EC PRIVATE KEY-----"
)

func TestRedactText(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		// Redacted.
		{"env private key", "PRIVATE_KEY=0x" + privHex, "PRIVATE_KEY=[REDACTED:private_key]"},
		{"prose private key", "the deployer private key is " + privHex + ", do not share", "the deployer private key is [REDACTED:private_key], do not share"},
		{"camel case", `privateKey: "0x` + privHex + `"`, `privateKey: "[REDACTED:private_key]"`},
		{"seed", "seed 0x" + privHex, "seed [REDACTED:private_key]"},
		{"pem", "found in page:\n" + pemKey + "\nend of page", "found in page:\n[REDACTED:pem_private_key]\nend of page"},
		{"pem cut off by a body cap", "leak: -----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA3Tz2mr7S", "leak: [REDACTED:pem_private_key]"},
		{"openssh pem", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----", "[REDACTED:pem_private_key]"},
		{"google", "https://maps.example/api?key=" + googleK + "&q=x", "https://maps.example/api?key=[REDACTED:google_api_key]&q=x"},
		{"openai", "OPENAI_API_KEY=" + openaiK, "OPENAI_API_KEY=[REDACTED:api_key]"},
		{"github", "token " + githubK + " in config", "token [REDACTED:github_token] in config"},
		{"github fine-grained", githubFG, "[REDACTED:github_token]"},
		{"aws", "aws_access_key_id = " + awsK, "aws_access_key_id = [REDACTED:aws_access_key]"},
		{"authorization bearer", "GET / HTTP/1.1\r\nAuthorization: Bearer " + jwt + "\r\nHost: x", "GET / HTTP/1.1\r\nAuthorization: Bearer [REDACTED:authorization]\r\nHost: x"},
		{"authorization basic", "authorization: Basic dXNlcjpwYXNzd29yZA==", "authorization: Basic [REDACTED:authorization]"},
		{"curl header", `curl -H 'Authorization: token abcdef0123456789' https://x`, `curl -H 'Authorization: token [REDACTED:authorization]' https://x`},
		{"bare bearer", "sent bearer " + jwt, "sent bearer [REDACTED:bearer_token]"},
		{"two keys", "key " + privHex + " " + strings.ToUpper(privHex), "key [REDACTED:private_key] [REDACTED:private_key]"},
		// Unlabelled 64-hex values inside text (a fetched page): a leaked key
		// looks exactly like this, and the security specialist verifies
		// every one against the chain.
		{"key word on another line", "private key rotated\n0x" + txHex, "private key rotated\n[REDACTED:private_key]"},
		{"key word too far back", "key: one two three four five six seven 0x" + txHex, "key: one two three four five six seven [REDACTED:private_key]"},
		{"unlabelled in a page", "<p>cfg = '" + privHex + "';</p>", "<p>cfg = '[REDACTED:private_key]';</p>"},
		{"bare whole string", privHex, "[REDACTED:private_key]"},

		// Kept: digests and identifiers have the same shape.
		{"tx hash", "tx 0x" + txHex, "tx 0x" + txHex},
		{"block hash", "block hash: " + txHex, "block hash: " + txHex},
		{"sha256", "sha256 " + txHex + " ok", "sha256 " + txHex + " ok"},
		{"no context", "0x" + txHex, "0x" + txHex},
		{"digest word nearer than key word", "private key rotated; tx 0x" + txHex, "private key rotated; tx 0x" + txHex},
		{"abi word", "returned 0x000000000000000000000000" + txHex[:40], "returned 0x000000000000000000000000" + txHex[:40]},
		{"digest word too far back is no label", "tx: one two three four five six seven " + txHex + " end", "tx: one two three four five six seven [REDACTED:private_key] end"},
		{"63 hex", "private key 0x" + privHex[:63], "private key 0x" + privHex[:63]},
		{"65 hex", "private key 0x" + privHex + "a", "private key 0x" + privHex + "a"},
		{"calldata", "key 0xa9059cbb" + txHex + privHex, "key 0xa9059cbb" + txHex + privHex},
		{"address", "key 0x71C7656EC7ab88b098defB751B7401B5f6d8976F", "key 0x71C7656EC7ab88b098defB751B7401B5f6d8976F"},
		{"bearer prose", "the bearer of bad news", "the bearer of bad news"},
		{"authorization prose", "authorization: required", "authorization: required"},
		{"sk inside a word", "task-abcdefghijklmnopqrstu12345", "task-abcdefghijklmnopqrstu12345"},
		{"sk without digits", "sk-learn-is-a-python-library", "sk-learn-is-a-python-library"},
		{"public pem", "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----", "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----"},
		{"short", "key", "key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Redact(tt.in)
			if got != tt.want {
				t.Errorf("Redact(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
			if again := Redact(got); again != got {
				t.Errorf("not idempotent: %q -> %q", got, again)
			}
		})
	}
}

func TestRedactJSONFields(t *testing.T) {
	in := map[string]any{
		// Redacted by field name.
		"private_key":  "0x" + privHex,
		"signer_key":   "0x" + privHex,
		"seed":         privHex,
		"wallet":       map[string]any{"privKey": privHex, "address": "0x71C7656EC7ab88b098defB751B7401B5f6d8976F"},
		"headers":      map[string]any{"Authorization": "Bearer x", "Set-Cookie": "session=abc", "Content-Type": "text/plain"},
		"password":     "hunter2",
		"mnemonic":     "test test test test test test test test test test test junk",
		"empty_secret": map[string]any{"secret": ""},
		"keys":         []any{"0x" + privHex},
		"note":         "deployer key 0x" + privHex,
		"0x" + privHex: "a key used as a map key, with a key word in its parent? no: kept",
		// Kept: digest fields.
		"tx":              "0x" + txHex,
		"hash":            txHex,
		"sha256":          txHex,
		"block_hash":      "0x" + txHex,
		"tx_hash":         "0x" + txHex,
		"txHash":          "0x" + txHex,
		"fp":              txHex,
		"key_hash":        txHex,
		"persona_sha256":  txHex,
		"topics":          []any{"0x" + txHex},
		"result":          "0x" + txHex,
		"body":            "tx 0x" + txHex,
		"summary_private": "fine",
	}
	raw, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := (&Redactor{}).RedactJSON(raw)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("redacted JSON invalid: %v\n%s", err, out)
	}
	want := map[string]any{
		"private_key":  "[REDACTED:credential]",
		"signer_key":   "[REDACTED:private_key]",
		"seed":         "[REDACTED:private_key]",
		"wallet":       map[string]any{"privKey": "[REDACTED:credential]", "address": "0x71C7656EC7ab88b098defB751B7401B5f6d8976F"},
		"headers":      map[string]any{"Authorization": "[REDACTED:credential]", "Set-Cookie": "[REDACTED:credential]", "Content-Type": "text/plain"},
		"password":     "[REDACTED:credential]",
		"mnemonic":     "[REDACTED:credential]",
		"empty_secret": map[string]any{"secret": ""},
		"keys":         []any{"[REDACTED:private_key]"},
		"note":         "deployer key [REDACTED:private_key]",
		"0x" + privHex: "a key used as a map key, with a key word in its parent? no: kept",
	}
	for k, v := range in {
		if _, ok := want[k]; !ok {
			want[k] = v
		}
	}
	for k, w := range want {
		if g, _ := json.Marshal(got[k]); string(g) != mustJSON(t, w) {
			t.Errorf("%s: got %s, want %s", k, g, mustJSON(t, w))
		}
	}
	if again, _ := (&Redactor{}).RedactJSON(out); string(again) != string(out) {
		t.Errorf("RedactJSON not idempotent:\n%s\n%s", out, again)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRedactorRegisteredSecrets(t *testing.T) {
	r, err := NewRedactor("0x"+strings.ToUpper(privHex), "s3cr3t-api-value")
	if err != nil {
		t.Fatal(err)
	}
	// A registered secret goes wherever it appears, digest fields included,
	// in any case and with or without 0x.
	doc := `{"tx_hash":"0x` + privHex + `","sha256":"` + privHex + `","note":"k=s3cr3t-api-value;","x":"0x` + txHex + `"}`
	out, err := r.RedactJSON([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"tx_hash":"[REDACTED:registered]","sha256":"[REDACTED:registered]","note":"k=[REDACTED:registered];","x":"0x` + txHex + `"}`
	if string(out) != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
	if got := r.Redact("prefix" + privHex + "suffix"); got != "prefix[REDACTED:registered]suffix" {
		t.Errorf("Redact = %q", got)
	}
	if err := r.Add("short"); !errors.Is(err, ErrSecretTooShort) {
		t.Errorf("Add(short) = %v, want ErrSecretTooShort", err)
	}
	var nilR *Redactor
	if got := nilR.Redact("PRIVATE_KEY=" + privHex); got != "PRIVATE_KEY=[REDACTED:private_key]" {
		t.Errorf("nil Redactor: %q", got)
	}
}

func TestRedactJSONEscapesAndInvalid(t *testing.T) {
	// An escaped secret is found (the scan runs on decoded strings), and a
	// changed string is re-encoded without HTML escaping.
	doc := `{"body":"<b>\u0041IzaSyD3f9Qm7xVbN2kLp0aZcW8rT5uYhJ1gE4s</b>","ok":"\u00e9\ud83d\ude00","lone":"\ud800"}`
	out, err := defaultRedactor.RedactJSON([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"body":"<b>[REDACTED:google_api_key]</b>","ok":"\u00e9\ud83d\ude00","lone":"\ud800"}`
	if string(out) != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
	for _, bad := range []string{`{"a":1`, `{"a":"\x"}`, `[1,]`, `{"a" 1}`, `nul`, `"x`, `{"a":1} x`, "\"a\x01\"", `01`} {
		if _, err := defaultRedactor.RedactJSON([]byte(bad)); err == nil {
			t.Errorf("RedactJSON(%q) = nil error", bad)
		}
	}
	// Whitespace is compacted; invalid UTF-8 becomes U+FFFD.
	out, err = defaultRedactor.RedactJSON([]byte("{ \"a\" : [ 1 , true , null ] , \"b\" : \"x\xffy\" }"))
	if err != nil || string(out) != `{"a":[1,true,null],"b":"x\ufffdy"}` {
		t.Errorf("got %s, %v", out, err)
	}
}

func TestClassify(t *testing.T) {
	for name, want := range map[string]class{
		"tx": classHash, "tx_hash": classHash, "txHash": classHash, "block_hash": classHash, "sha256": classHash,
		"fp": classHash, "key_hash": classHash, "pubkey_hash": classHash, "persona_sha256": classHash,
		"key": classKey, "signer_key": classKey, "seed": classKey, "priv": classKey, "secrets": classKey,
		"private_key": classCredential, "privateKey": classCredential, "Authorization": classCredential,
		"X-Api-Key": classCredential, "client_secret": classCredential,
		"body": classNeutral, "result": classNeutral, "monkey": classNeutral,
	} {
		if got := classify(name); got != want {
			t.Errorf("classify(%q) = %d, want %d", name, got, want)
		}
	}
}

// TestRedactLinear guards against quadratic scans: each input is 512 KiB of
// one pattern's near-misses.
func TestRedactLinear(t *testing.T) {
	const n = 512 << 10
	inputs := map[string]string{
		"brackets before hex": strings.Repeat("]", n) + " 0x" + txHex,
		"sk runs":             strings.Repeat("sk-", n/3),
		"AIza runs":           strings.Repeat("AIza", n/4),
		"pem begins":          strings.Repeat("-----BEGIN ", n/11),
		"authorization":       strings.Repeat("authorization: ", n/15),
		"bearer":              strings.Repeat("bearer ", n/7),
		"hex words":           strings.Repeat(txHex+" ", n/65),
		"markers":             strings.Repeat("[REDACTED:private_key] ", n/23) + "0x" + txHex,
		"list words":          strings.Repeat("abandon ", n/8),
		"runs of 28 words":    strings.Repeat(strings.Repeat("zoo ", 28)+"x ", n/114),
		"tag opens":           strings.Repeat("<a", n/2),
		"tags between words":  strings.Repeat("able<li>", n/8),
	}
	for name, in := range inputs {
		start := time.Now()
		out := Redact(in)
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%s: %v for %d bytes", name, d, len(in))
		}
		if Redact(out) != out {
			t.Errorf("%s: not idempotent", name)
		}
	}
}

func TestRedactorConcurrentAdd(t *testing.T) {
	r := &Redactor{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 50 {
			r.Add(strings.Repeat(string(rune('a'+i%26)), 10+i))
		}
	}()
	for range 200 {
		r.Redact("some text aaaaaaaaaaaa bbbbbbbbbbbbbbbb")
		r.RedactJSON([]byte(`{"a":"cccccccccccccccccccc"}`))
	}
	<-done
	if got := r.Redact("x " + strings.Repeat("z", 35) + " y"); got != "x [REDACTED:registered] y" {
		t.Errorf("Redact = %q", got)
	}
}

// TestHexKeySpans: the spans are exactly what Redact replaces.
func TestHexKeySpans(t *testing.T) {
	text := "cfg " + privHex + "; tx 0x" + txHex + "; PRIVATE_KEY=0x" + privHex + "\nword 0x000000000000000000000000" + txHex[:40] + " x"
	spans := HexKeySpans(text)
	if len(spans) != 2 || text[spans[0][0]:spans[0][1]] != privHex || text[spans[1][0]:spans[1][1]] != "0x"+privHex {
		t.Fatalf("spans %v", spans)
	}
	red := Redact(text)
	if strings.Count(red, "[REDACTED:private_key]") != 2 || !strings.Contains(red, txHex) {
		t.Errorf("Redact disagrees with HexKeySpans: %s", red)
	}
}
