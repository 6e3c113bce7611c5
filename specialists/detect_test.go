package specialists

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/qafleet/fleetd/fleet"
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
			got := leakKinds(ScanLeaks(tc.text))
			if !slices.Equal(got, tc.kinds) {
				t.Errorf("kinds = %q, want %q (%+v)", got, tc.kinds, ScanLeaks(tc.text))
			}
		})
	}
}

func TestAllowedURL(t *testing.T) {
	pats := []string{"127.0.0.1:8080", "*.example.com", "docs.test"}
	for url, want := range map[string]bool{
		"http://127.0.0.1:8080/x":      true,
		"http://127.0.0.1:8081/x":      false,
		"https://a.example.com/":       true,
		"https://example.com/":         false,
		"http://a.example.com:8443/":   false,
		"http://docs.test/llms.txt":    true,
		"https://docs.test:443/":       true,
		"ftp://docs.test/":             false,
		"http://evil.test/?docs.test":  false,
		"http://docs.test.evil.test/x": false,
	} {
		if got := allowedURL(pats, url); got != want {
			t.Errorf("allowedURL(%q) = %v, want %v", url, got, want)
		}
	}
}

func TestPercentile(t *testing.T) {
	s := []float64{800, 100, 300, 200, 500, 400, 700, 600}
	for _, tc := range []struct{ q, want float64 }{{50, 400}, {95, 800}, {100, 800}, {1, 100}, {12.5, 100}, {12.6, 200}} {
		if got := Percentile(s, tc.q); got != tc.want {
			t.Errorf("p%v = %v, want %v", tc.q, got, tc.want)
		}
	}
	if Percentile(nil, 95) != 0 {
		t.Error("empty")
	}
	if s[0] != 800 {
		t.Error("Percentile sorted its input")
	}
}

func TestFitExponent(t *testing.T) {
	xs := []float64{1000, 2000, 4000, 8000, 16000}
	gen := func(f func(x float64) float64) []float64 {
		var ys []float64
		for _, x := range xs {
			ys = append(ys, f(x))
		}
		return ys
	}
	for _, tc := range []struct {
		name string
		ys   []float64
		want float64
	}{
		{"linear", gen(func(x float64) float64 { return 0.01 * x }), 1},
		{"quadratic", gen(func(x float64) float64 { return 1e-6 * x * x }), 2},
		{"n log n", gen(func(x float64) float64 { return x * math.Log(x) / 1000 }), 1.12},
		{"flat", gen(func(float64) float64 { return 7 }), 0},
	} {
		k, r2, ok := FitExponent(xs, tc.ys)
		if !ok || math.Abs(k-tc.want) > 0.02 || r2 < 0.9 && tc.name != "flat" {
			t.Errorf("%s: k=%.3f r2=%.3f ok=%v, want k≈%v", tc.name, k, r2, ok, tc.want)
		}
	}
	if _, _, ok := FitExponent([]float64{1, 2}, []float64{1, 2}); ok {
		t.Error("two points fitted")
	}
	if _, _, ok := FitExponent([]float64{1, 2, 3}, []float64{0, -1, 0}); ok {
		t.Error("non-positive points fitted")
	}
}

func TestMinimize(t *testing.T) {
	t.Run("crash line in a program", func(t *testing.T) {
		prog := "let a = 1;\nfn f() {\n  return 2;\n}\nenum E {}\nprint a;\nprint f();\n"
		calls := 0
		fails := func(s string) bool { calls++; return strings.Contains(s, "enum E {}") }
		got, tests := Minimize(prog, 200, fails)
		if got != "enum E {}" || tests != calls || calls > 80 {
			t.Errorf("Minimize = %q after %d tests (%d calls)", got, tests, calls)
		}
	})
	t.Run("needs two distant parts", func(t *testing.T) {
		prog := "a\nb\nc\nd\ne\nf\ng\nh\n"
		got, _ := Minimize(prog, 200, func(s string) bool { return strings.Contains(s, "b") && strings.Contains(s, "g") })
		if got != "bg" && got != "b\ng" {
			t.Errorf("Minimize = %q", got)
		}
	})
	t.Run("budget", func(t *testing.T) {
		calls := 0
		got, tests := Minimize(strings.Repeat("x\n", 100)+"BOOM", 5, func(s string) bool { calls++; return strings.Contains(s, "BOOM") })
		if calls > 5 || tests > 5 || !strings.Contains(got, "BOOM") {
			t.Errorf("over budget: %d calls, %d tests, %q", calls, tests, got)
		}
	})
	t.Run("surrounding whitespace goes even when ddmin ran out", func(t *testing.T) {
		// The demo's hang: a long mutant, a small budget, a trailing newline left.
		prog := strings.Repeat("let a = 1;\n", 20) + "while true {}\n" + strings.Repeat("print a;\n", 5)
		got, tests := Minimize(prog, 30, func(s string) bool { return strings.Contains(s, "while true {}") })
		if got != "while true {}" || tests > 30 {
			t.Errorf("Minimize = %q after %d tests", got, tests)
		}
	})
	t.Run("never the same candidate twice", func(t *testing.T) {
		seen := map[string]bool{}
		Minimize("aaaa\naaaa\nbbbb\n", 100, func(s string) bool {
			if seen[s] {
				t.Errorf("tested %q twice", s)
			}
			seen[s] = true
			return strings.Contains(s, "b")
		})
	})
}

func TestSpoofed(t *testing.T) {
	res := func(st int, reply string) fleet.Result {
		return fleet.Result{"ok": true, "status": st, "reply": reply}
	}
	base := res(200, "You are anonymous.")
	for _, tc := range []struct {
		name  string
		reply fleet.Result
		sev   fleet.Severity
		ok    bool
	}{
		{"echo only", res(200, "You are admin."), "", false},
		{"same", res(200, "You are anonymous."), "", false},
		{"new content", res(200, "Admin session for alice: full control granted. You are admin."), fleet.SeverityHigh, true},
		{"secret", res(200, "Internal token: tbk_9f1c2e3d4a5b6c7d8e9f0a1b2c3d4e5f. You are admin."), fleet.SeverityCritical, true},
		{"stricter", res(400, "unknown field from"), "", false},
	} {
		_, sev, ok := spoofed(base, tc.reply, []string{"admin"}, true)
		if ok != tc.ok || sev != tc.sev {
			t.Errorf("%s: %v %v, want %v %v", tc.name, ok, sev, tc.ok, tc.sev)
		}
	}
	if _, _, ok := spoofed(res(403, "forbidden"), res(200, "ok here you go"), []string{"admin"}, false); !ok {
		t.Error("a refusal turned into success is not spoofing")
	}
}

func TestServedVerbatimAndCSP(t *testing.T) {
	stored := `<h1>bob</h1><script>alert("x")</script><img src=x onerror="f()">`
	if got := servedVerbatim(stored, "<body>"+stored+"</body>"); got != `<script>alert("x")</script>` {
		t.Errorf("raw: %q", got)
	}
	escaped := "&lt;h1&gt;bob&lt;/h1&gt;&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;"
	if got := servedVerbatim(stored, escaped); got != "" {
		t.Errorf("escaped: %q", got)
	}
	if got := servedVerbatim("<h1>just a heading</h1>", "<h1>just a heading</h1>"); got != "" {
		t.Errorf("benign html: %q", got)
	}
	for csp, want := range map[string]bool{
		"":                                      false,
		"default-src 'self'":                    true,
		"script-src 'self' 'unsafe-inline'":     false,
		"img-src *; script-src 'nonce-abc'":     true,
		"frame-ancestors 'none'":                false,
		"default-src * 'unsafe-inline'; x y":    false,
		"DEFAULT-SRC 'self'; script-src 'self'": true,
	} {
		if got := blocksInlineScript(csp); got != want {
			t.Errorf("blocksInlineScript(%q) = %v", csp, got)
		}
	}
}

func TestCrashSignature(t *testing.T) {
	a := crashSignature(fleet.Result{"stderr_tail": "panic: runtime error: index out of range [0] with length 0\n\ngoroutine 1 [running]:\nmain.f()\n\t/x/y.go:12 +0x1d\n"})
	b := crashSignature(fleet.Result{"stderr_tail": "panic: runtime error: index out of range [3] with length 2\n\ngoroutine 9 [running]:\n"})
	if a != b || !strings.HasPrefix(a, "panic: runtime error: index out of range") {
		t.Errorf("signatures %q and %q", a, b)
	}
	if got := crashSignature(fleet.Result{"signal": "SIGSEGV", "stderr_tail": ""}); got != "signal SIGSEGV" {
		t.Errorf("signal: %q", got)
	}
	if got := crashSignature(fleet.Result{"exit_code": 134, "stderr_tail": "bye"}); got != "exit 134" {
		t.Errorf("exit: %q", got)
	}
}
