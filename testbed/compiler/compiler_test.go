package compiler

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden outputs under testdata/golden")

// mainEnv makes the test binary run Main on the named file instead of the
// tests, so the planted crash and hang can be observed as a real process.
const mainEnv = "TESTBED_COMPILER_MAIN_FILE"

func TestMain(m *testing.M) {
	if f := os.Getenv(mainEnv); f != "" {
		os.Exit(Main([]string{"compile", f}, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// mustCompile compiles src, fails the test on error, and checks the output
// is deterministic and decodes.
func mustCompile(tb testing.TB, src string) *decoded {
	tb.Helper()
	out, err := Compile([]byte(src))
	if err != nil {
		tb.Fatalf("Compile: %v\nsource:\n%s", err, src)
	}
	again, err := Compile([]byte(src))
	if err != nil || !bytes.Equal(out, again) {
		tb.Fatalf("second Compile differs (err %v)", err)
	}
	m, err := decode(out)
	if err != nil {
		tb.Fatalf("decode: %v", err)
	}
	return m
}

func mustRun(tb testing.TB, src string) string {
	tb.Helper()
	got, err := run(mustCompile(tb, src), 10_000_000)
	if err != nil {
		tb.Fatalf("run: %v\nsource:\n%s", err, src)
	}
	return got
}

func corpusFiles(tb testing.TB) []string {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join("corpus", "*.tl"))
	if err != nil || len(files) == 0 {
		tb.Fatalf("no corpus: %v", err)
	}
	return files
}

// TestCorpus compiles every known-good source and checks what the program
// prints against testdata/golden (rewrite with -update).
func TestCorpus(t *testing.T) {
	for _, f := range corpusFiles(t) {
		name := strings.TrimSuffix(filepath.Base(f), ".tl")
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			got := mustRun(t, string(src))
			golden := filepath.Join("testdata", "golden", name+".out")
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("output:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

func TestPrograms(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"empty", "", ""},
		{"comment only", "// nothing\n", ""},
		{"precedence", "print 1 + 2 * 3 - 4 / 2;", "5\n"},
		{"left assoc", "print 10 - 3 - 2; print 2 * 3 % 4;", "5\n2\n"},
		{"unary", "let x = 3; print -x; print !true; print !(x == 3);", "-3\nfalse\nfalse\n"},
		{"runtime arithmetic", "let a = 7; let b = 2; print a / b; print a % b; print a * b - b;", "3\n1\n12\n"},
		{"wraps", "print 9223372036854775807 + 1;", "-9223372036854775808\n"},
		{"strings", `let s = "a"; print s + "b" + "c"; print "x\ty";`, "abc\nx\ty\n"},
		{"comparisons", `let s = "b"; print s < "c"; print 1 == "1"; print 2 != 3;`, "true\nfalse\ntrue\n"},
		{"short circuit and", "fn boom() { print \"boom\"; return true; } let f = false; print f && boom();", "false\n"},
		{"short circuit or", "fn boom() { print \"boom\"; return true; } let t = true; print t || boom();", "true\n"},
		{"evaluates right", "fn yes() { print \"yes\"; return 1; } let t = true; print t && yes();", "yes\n1\n"},
		{"else if", "let x = 2; if x == 1 { print 1; } else if x == 2 { print 2; } else { print 3; }", "2\n"},
		{"if without else", "let x = 0; if x { print 1; } print 2;", "2\n"},
		{"while break continue", "let i = 0; while true { i = i + 1; if i == 2 { continue; } if i > 3 { break; } print i; }", "1\n3\n"},
		{"nested loops", "let i = 0; while i < 2 { let j = 0; while j < 2 { print i * 10 + j; j = j + 1; } i = i + 1; }", "0\n1\n10\n11\n"},
		{"empty loop with false condition", "while false {} while 1 > 2 {} print 1;", "1\n"},
		{"empty loop on a variable", "let n = 0; while n {} print n;", "0\n"},
		{"shadowing", `let x = 1; { let x = 2; print x; } print x;`, "2\n1\n"},
		{"let sees outer", "let x = 1; { let x = x + 1; print x; }", "2\n"},
		{"recursion", "fn f(n) { if n == 0 { return 0; } return n + f(n - 1); } print f(10);", "55\n"},
		{"forward call", "print g(); fn g() { return 7; }", "7\n"},
		{"return nil", "fn f() { return; } print f(); fn g() {} print g();", "nil\nnil\n"},
		{"globals from functions", "let base = 100; fn add(x) { return base + x; } print add(1); base = 200; print add(1);", "101\n201\n"},
		{"enums", "enum E { A, B, C } print E.A; print E.C; let e = E.B; print e == E.B;", "0\n2\ntrue\n"},
		{"trailing comma", "enum E { A, } print E.A;", "0\n"},
		{"expression statement", "fn f() { print 1; return 2; } f();", "1\n"},
		{"folded division", "print 7 / 2 % 2;", "1\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mustRun(t, tt.src); got != tt.want {
				t.Errorf("prints %q, want %q", got, tt.want)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		src, want string
	}{
		{"let x = ;", "1:9: expected expression, found \";\""},
		{"let = 1;", "1:5: expected identifier, found \"=\""},
		{"print 1", "1:8: expected \";\", found end of file"},
		{"print x;", "1:7: undefined: x"},
		{"x = 1;", "1:1: undefined: x"},
		{"let x = 1;\nlet x = 2;", "2:1: x redeclared in this block (previous declaration at 1:1)"},
		{"fn f(a, a) {}", "1:9: a redeclared in this block (previous declaration at 1:6)"},
		{"fn f() {} fn f() {}", "1:11: f redeclared in this block (previous declaration at 1:1)"},
		{"fn f() {} let f = 1;", "1:11: f redeclared in this block (previous declaration at 1:1)"},
		{"fn f(a) {} print f();", "1:18: f takes 1 argument(s), got 0"},
		{"let f = 1; f();", "1:12: cannot call variable f"},
		{"fn f() {} print f;", "1:17: function f is not a value"},
		{"fn f() {} f = 1;", "1:11: cannot assign to function f"},
		{"enum E { A } print E.B;", "1:20: E has no variant B"},
		{"enum E { A, A }", "1:13: variant E.A declared twice (previous declaration at 1:10)"},
		{"let x = 1; print x.A;", "1:18: variable x has no members"},
		{"print Nope.A;", "1:7: undefined: Nope"},
		{"return 1;", "1:1: return outside a function"},
		{"break;", "1:1: break outside a loop"},
		{"fn f() { continue; }", "1:10: continue outside a loop"},
		{"{ fn f() {} }", "1:3: functions must be declared at top level"},
		{"if true { enum E { A } }", "1:11: enums must be declared at top level"},
		{"print 1 / 0;", "1:9: division by zero"},
		{"let x = 1; print x % 0;", "1:20: division by zero"},
		{`print "a" - "b";`, "1:11: operator - not defined on string"},
		{`print 1 + "b";`, "1:9: mismatched types int and string for +"},
		{"print -true;", "1:7: operator - not defined on bool"},
		{"print !1;", "1:7: operator ! not defined on int"},
		{"print 99999999999999999999;", "1:7: integer literal 99999999999999999999 out of range"},
		{`print "abc`, "1:7: unterminated string"},
		{"print \"a\nb\";", "1:7: unterminated string"},
		{`print "a\qb";`, `1:9: unknown escape sequence "\\q"`},
		{"print 1 # 2;", "1:9: unexpected character '#'"},
		{"print \xff;", "1:7: unexpected character 'ÿ'"},
		{"{ print 1;", "1:11: expected \"}\", found end of file"},
		{"fn f( { }", "1:7: expected identifier, found \"{\""},
		{strings.Repeat("(", 300) + "1" + strings.Repeat(")", 300) + ";", "1:201: nesting deeper than 200"},
		{strings.Repeat("{", 300) + strings.Repeat("}", 300), "1:201: nesting deeper than 200"},
		{"print 1" + strings.Repeat(" + 1", 1001) + ";", "1:4009: expression longer than 1000 operations"},
		{"print " + strings.Repeat("-", 1001) + "1;", "1:207: nesting deeper than 200"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			_, err := Compile([]byte(tt.src))
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Compile = %v, want *Error %q", err, tt.want)
			}
			if err.Error() != tt.want {
				t.Errorf("error %q, want %q", err, tt.want)
			}
		})
	}
}

func TestMainCLI(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.tl", "print 1;")
	bad := write("bad.tl", "let x = ;")
	want, err := Compile([]byte("print 1;"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		args       []string
		code       int
		stdout     string
		stderrHas  string
		stderrNone bool
	}{
		{"raw", []string{"compile", good}, ExitOK, string(want), "", true},
		{"hex", []string{"compile", "-hex", good}, ExitOK, hex.EncodeToString(want) + "\n", "", true},
		{"without subcommand", []string{good}, ExitOK, string(want), "", true},
		{"rejected", []string{"compile", bad}, ExitRejected, "", bad + ":1:9: expected expression", false},
		{"missing file", []string{"compile", filepath.Join(dir, "nope.tl")}, ExitRejected, "", "compile: open ", false},
		{"no file", []string{"compile"}, ExitUsage, "", "usage: compile [-hex] FILE", false},
		{"two files", []string{"compile", good, good}, ExitUsage, "", "usage:", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Main(tt.args, &stdout, &stderr)
			if code != tt.code {
				t.Errorf("exit %d, want %d (stderr %q)", code, tt.code, stderr.String())
			}
			if stdout.String() != tt.stdout {
				t.Errorf("stdout %q, want %q", stdout.String(), tt.stdout)
			}
			if tt.stderrNone && stderr.Len() != 0 {
				t.Errorf("stderr %q, want none", stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.stderrHas) {
				t.Errorf("stderr %q, want it to contain %q", stderr.String(), tt.stderrHas)
			}
			if strings.Count(stderr.String(), "\n") > 1 {
				t.Errorf("stderr has more than one line: %q", stderr.String())
			}
		})
	}
}

// runMain runs Main on src in a child process (this test binary) and returns
// its exit code, stderr and whether the timeout killed it.
func runMain(t *testing.T, src string, timeout time.Duration) (code int, stderr string, killed bool) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "src.tl")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), mainEnv+"="+file)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	if ctx.Err() != nil {
		return -1, errb.String(), true
	}
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("run child: %v", err)
	}
	return cmd.ProcessState.ExitCode(), errb.String(), false
}

// TestPlantedFlaws checks the compiler's planted flaws manifest as
// testbed/README.md describes. They are the point of this package: a fix
// makes this test fail, on purpose.
func TestPlantedFlaws(t *testing.T) {
	t.Run("F1 panic on an enum without variants", func(t *testing.T) {
		code, stderr, killed := runMain(t, "enum E {}", 20*time.Second)
		if killed || code != 2 {
			t.Fatalf("exit %d (killed %v), want 2 from a Go panic; stderr:\n%s", code, killed, stderr)
		}
		for _, want := range []string{"panic: runtime error: index out of range [0] with length 0", "goroutine 1 [running]", "compile.go:"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("stderr lacks %q:\n%s", want, stderr)
			}
		}
	})
	t.Run("F2 hang on an empty loop with a constant true condition", func(t *testing.T) {
		for _, src := range []string{"while true {}", "while 1 < 2 {}", `print 1; while "forever" {}`} {
			if code, stderr, killed := runMain(t, src, 1500*time.Millisecond); !killed {
				t.Errorf("%q: exited %d within 1.5s, want a hang; stderr:\n%s", src, code, stderr)
			}
		}
		// The control: the same child process compiles a terminating loop at once.
		if code, stderr, killed := runMain(t, "while false {}", 20*time.Second); killed || code != 0 {
			t.Errorf("control: exit %d (killed %v), stderr:\n%s", code, killed, stderr)
		}
	})
	t.Run("P1 compile time grows quadratically with the number of declarations", func(t *testing.T) {
		if testing.Short() {
			t.Skip("timing test")
		}
		// Inputs big enough that the quadratic term dominates, timed in CPU
		// time and interleaved so a busy machine skews both alike: 4x the
		// input is ~4x the time if linear, ~16x if quadratic.
		small, large := declarations(100<<10), declarations(400<<10)
		tSmall := cpuCompile(t, small)
		tLarge := cpuCompile(t, large)
		tSmall = min(tSmall, cpuCompile(t, small))
		if ratio := float64(tLarge) / float64(tSmall); ratio < 7 {
			t.Errorf("compile of 400 KB took %v, of 100 KB %v: ratio %.1f, want > 7 (quadratic)", tLarge, tSmall, ratio)
		}
		if tSmall > time.Second && !raceEnabled {
			t.Errorf("100 KB took %v, want well under a second", tSmall)
		}
	})
}

// declarations returns about size bytes of top-level let statements. The
// names have one length, so every duplicate check costs the same.
func declarations(size int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "let v%06d = %d;\n", i, i)
	}
	return b.Bytes()
}

// cpuCompile returns the CPU time of one compile of src.
func cpuCompile(tb testing.TB, src []byte) time.Duration {
	tb.Helper()
	start, ok := cpuTime()
	if !ok {
		tb.Skip("no CPU time on this platform")
	}
	if _, err := Compile(src); err != nil {
		tb.Fatal(err)
	}
	end, _ := cpuTime()
	return end - start
}

func TestOutputIsStable(t *testing.T) {
	// The module layout is a contract (the fleet records sha256 of outputs):
	// this pins hello.tl's bytes.
	src, err := os.ReadFile(filepath.Join("corpus", "hello.tl"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := Compile(src)
	if err != nil {
		t.Fatal(err)
	}
	const want = "00746c6201000000010f01010c68656c6c6f2c20776f726c64020100030100040100050401004000"
	if got := hex.EncodeToString(out); got != want {
		t.Errorf("hello.tl compiles to %s, want %s (sha256 %x)", got, want, sha256.Sum256(out))
	}
}

func BenchmarkCompile(b *testing.B) {
	for _, kb := range []int{10, 100} {
		src := declarations(kb << 10)
		b.Run(fmt.Sprintf("%dKB", kb), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				if _, err := Compile(src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
