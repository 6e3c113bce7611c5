package replay

import (
	"slices"
	"strings"
	"testing"
)

var hex64 = "4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"

func TestScanSecrets(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		kinds      []string
	}{
		{"env private key", "RPC_URL=http://x\nDEPLOYER_PRIVATE_KEY=0x" + hex64 + "\n", []string{"hex private key"}},
		{"bare KEY", "KEY=" + hex64, []string{"hex private key"}},
		{"json privateKey", `{"privateKey": "0x` + hex64 + `"}`, []string{"hex private key"}},
		{"private key prose", "Your private key is 0x" + hex64 + ".", []string{"hex private key"}},
		{"PEM", "-----BEGIN RSA PRIVATE KEY-----\nMIIE...", []string{"PEM private key"}},
		{"openssh PEM", "-----BEGIN OPENSSH PRIVATE KEY-----", []string{"PEM private key"}},
		{"AWS", "aws key AKIAIOSFODNN7EXAMPLE in config", []string{"AWS access key id"}},
		{"GitHub", "token ghp_" + strings.Repeat("aB3", 12), []string{"GitHub token"}},
		{"Google", "key=AIza" + strings.Repeat("Sy9", 11) + "Zq", []string{"Google API key"}},
		{"OpenAI", "OPENAI=sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z", []string{"OpenAI API key"}},
		{"OpenAI key without a digit", "OPENAI_API_KEY=sk-proj-" + "HUztVzUAABNkOzYydmhDJXIwclWnbEKLtFTKHDiS", []string{"OpenAI API key"}},
		{"Slack", "xoxb-123456789012-1234567890123-AbCdEfGhIjKl", []string{"Slack token"}},
		{"JWT", "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", []string{"JSON web token"}},
		{"internal token", "Admin session. Internal token: tbk_9f1c2e3d4a5b6c7d8e9f0a1b2c3d4e5f. Bye", []string{"credential"}},
		// Negatives: public hex values, placeholders, prose.
		{"tx hash", "tx: 0x" + hex64 + " mined in block 12", nil},
		{"sha256", `{"sha256": "` + hex64 + `", "bytes": 12}`, nil},
		{"metadata key attribute", `<section data-key="0x` + hex64 + `">hi</section>`, nil},
		{"json key field", `{"key": "0x` + hex64 + `"}`, nil},
		{"block hash", "BLOCK_HASH=0x" + hex64, nil},
		{"placeholder token", "token: YOUR_TOKEN_HERE_PLEASE", nil},
		{"masked password", "password: ****************", nil},
		{"contract address", "token: 0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48", nil},
		{"words", "the secret is to keep it simple; api keys live in the vault", nil},
		{"task slug", "see task-abcdefghijklmnopqrstuvwxyz0123456789", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var kinds []string
			for _, s := range ScanSecrets(tc.text) {
				kinds = append(kinds, s.Kind)
				if len([]rune(s.Prefix)) > 6 {
					t.Errorf("prefix %q longer than 6", s.Prefix)
				}
			}
			if !slices.Equal(kinds, tc.kinds) {
				t.Errorf("kinds = %q, want %q", kinds, tc.kinds)
			}
		})
	}
}

func TestRedactSecrets(t *testing.T) {
	got := redactSecrets("a DEPLOYER_PRIVATE_KEY=0x" + hex64 + " b")
	if strings.Contains(got, hex64[:10]) || !strings.Contains(got, "[redacted]") {
		t.Errorf("redact = %q", got)
	}
	// An unnamed 64-hex value could be a key too; a labelled hash stays.
	got = redactSecrets("value " + hex64 + " and tx 0x" + strings.Repeat("ab", 32))
	if strings.Contains(got, hex64[:10]) || !strings.Contains(got, "tx 0x"+strings.Repeat("ab", 32)) {
		t.Errorf("redact = %q", got)
	}
}

func TestScanLeaks(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		kinds      []string
	}{
		{"os error with path", "<pre>open /srv/app/faces/zzz.html: no such file or directory</pre>", []string{"os error", "file path"}},
		{"go panic", "panic: decode call request: EOF\n\ngoroutine 7 [running]:\nruntime/debug.Stack()\n\t/usr/lib/go/src/runtime/debug/stack.go:26 +0x5e\n", []string{"stack trace", "file path"}},
		{"python", "Traceback (most recent call last):\n  File \"/app/main.py\", line 3, in <module>", []string{"stack trace", "file path"}},
		{"node", "TypeError: x is undefined\n    at handler (/home/u/srv/index.js:12:5)", []string{"stack trace", "file path"}},
		{"java", "java.lang.NullPointerException\n\tat com.example.Foo(Foo.java:42)", []string{"stack trace"}},
		{"rust", "thread 'main' panicked at src/main.rs:4:5", []string{"stack trace"}},
		{"windows path", `cannot open C:\inetpub\wwwroot\web.config`, []string{"file path"}},
		{"rust os error", "Permission denied (os error 13)", []string{"os error"}},
		{"sql", "ERROR: syntax error at or near \"FROM\"", []string{"database error"}},
		// Negatives.
		{"clean 404", "<h1>404</h1><p>Not found</p>", nil},
		{"clean json error", `{"error": "unknown target"}`, nil},
		{"url path", "see http://example.com/var/lib/thing for details", nil},
		{"compile diagnostic", "prog.tl:3:7: expected ';'", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := LeakKinds(ScanLeaks(tc.text))
			if !slices.Equal(got, tc.kinds) {
				t.Errorf("kinds = %q, want %q (%+v)", got, tc.kinds, ScanLeaks(tc.text))
			}
		})
	}
}
