package fuzzing

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func readCrash(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "crash", name))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func TestParseCrash(t *testing.T) {
	tests := []struct {
		name   string
		stderr string
		want   State
	}{
		{"go nil dereference (x/net/html)", string(readCrash(t, "go-nil-deref.txt")), State{Kind: "go",
			Message: "panic: runtime error: invalid memory address or nil pointer dereference",
			Frames:  []string{"html.(*parser).parseCurrentToken", "html.(*parser).parse", "html.Parse"}}},
		{"go index out of range, major-version path (blackfriday/v2)", string(readCrash(t, "go-index.txt")), State{Kind: "go",
			Message: "panic: runtime error: index out of range [N] with length N",
			Frames:  []string{"blackfriday/v2.scanLinkRef", "blackfriday/v2.isReference", "blackfriday/v2.(*Markdown).paragraph"}}},
		{"go test fuzz failure, indented, harness frames skipped", string(readCrash(t, "go-test-fuzz.txt")), State{Kind: "go",
			Message: "panic: runtime error: invalid memory address or nil pointer dereference",
			Frames:  []string{"html.(*parser).parseCurrentToken", "html.(*parser).parse", "html.Parse"}}},
		{"go runtime frames skipped, closures numbered N", "panic: boom 42 \"user input\"\n\ngoroutine 7 [running]:\npanic({0x1, 0x2})\n\t/usr/lib/go/src/runtime/panic.go:1 +0x1\nstrings.Repeat(...)\n\t/usr/lib/go/src/strings/strings.go:1\nexample.com/p.f.func3()\n\t/x/p.go:3 +0x1\nexample.com/p.g(0x1)\n\t/x/p.go:9\nmain.main()\n\t/x/main.go:1\nexit status 2\n",
			State{Kind: "go", Message: `panic: boom N "…"`, Frames: []string{"p.f.funcN", "p.g", "main.main"}}},
		{"go fatal error without stack", "fatal error: all goroutines are asleep - deadlock!\n", State{Kind: "go", Message: "fatal error: all goroutines are asleep - deadlock!"}},
		{"re-panic, Go 1.23+ wording", "panic: boom [recovered, repanicked]\n\ngoroutine 1 [running]:\nmain.f()\n\t/m.go:1\n", State{Kind: "go", Message: "panic: boom", Frames: []string{"main.f"}}},
		{"a panic while panicking: the last one, as a recovering harness sees it", "panic: first 1 [recovered]\n\tpanic: second\n\ngoroutine 1 [running]:\nmain.f()\n\t/m.go:1\n", State{Kind: "go", Message: "panic: second", Frames: []string{"main.f"}}},
		{"the same crash as go test -fuzz prints it", "--- FAIL: FuzzX (0.01s)\n    testing.go:1591: panic: second\n        goroutine 7 [running]:\n        main.f()\n        \t/m.go:1\n", State{Kind: "go", Message: "panic: second", Frames: []string{"main.f"}}},
		{"a test's re-panic of one value", "panic: boom [recovered]\n\tpanic: boom\n\ngoroutine 1 [running]:\nmain.f()\n\t/m.go:1\n", State{Kind: "go", Message: "panic: boom", Frames: []string{"main.f"}}},
		{"address sanitizer", "=================================================================\n==123==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x602000000011 at pc 0x4c5 bp 0x7ff\nREAD of size 1 at 0x602000000011 thread T0\n    #0 0x4c5a in parse_tag /src/html.c:120:9\n    #1 0x4c6b in __interceptor_strlen /src/compiler-rt/x.c:1\n    #2 0x4d00 in parse_doc /src/html.c:300:3\n    #3 0x4e00 in main /src/main.c:10:2\n    #4 0x7f00 in __libc_start_main /lib/x86_64-linux-gnu/libc.so.6\nSUMMARY: AddressSanitizer: heap-buffer-overflow /src/html.c:120:9 in parse_tag\n",
			State{Kind: "sanitizer", Message: "AddressSanitizer: heap-buffer-overflow", Frames: []string{"parse_tag", "parse_doc", "main"}}},
		{"rust panic, new format with backtrace", "thread 'main' panicked at src/parser.rs:61:29:\nindex out of bounds: the len is 3 but the index is 7\nstack backtrace:\n   0: rust_begin_unwind\n   1: core::panicking::panic_bounds_check\n   2: tl::parser::Parser::block\n   3: tl::parser::Parser::program\n   4: tl::main\n   5: std::rt::lang_start\n",
			State{Kind: "rust", Message: "panicked: index out of bounds: the len is N but the index is N", Frames: []string{"tl::parser::Parser::block", "tl::parser::Parser::program", "tl::main"}}},
		{"rust panic, old format, no backtrace", "thread 'main' panicked at 'attempt to subtract with overflow', src/lex.rs:12:5\nnote: run with `RUST_BACKTRACE=1`\n",
			State{Kind: "rust", Message: "panicked: attempt to subtract with overflow", Frames: []string{"src/lex.rs"}}},
		{"python traceback, innermost first, stdlib skipped", "Traceback (most recent call last):\n  File \"/app/cc.py\", line 40, in <module>\n    main()\n  File \"/app/cc.py\", line 30, in main\n    parse(src)\n  File \"/app/parse.py\", line 12, in parse\n    return tokens[i]\n  File \"/usr/lib/python3.11/re.py\", line 1, in match\nIndexError: list index out of range\n",
			State{Kind: "python", Message: "IndexError: list index out of range", Frames: []string{"parse", "main", "<module>"}}},
		{"java exception", "Exception in thread \"main\" java.lang.NullPointerException: Cannot invoke \"x\"\n\tat java.base/java.util.Objects.requireNonNull(Objects.java:1)\n\tat com.ex.Parser.block(Parser.java:88)\n\tat com.ex.Parser.program(Parser.java:20)\n\tat com.ex.Main.main(Main.java:5)\n",
			State{Kind: "java", Message: "java.lang.NullPointerException", Frames: []string{"com.ex.Parser.block", "com.ex.Parser.program", "com.ex.Main.main"}}},
		{"other: a crash line, masked", "cc1: internal compiler error: in expand_expr, at expr.c:9000\n", State{Kind: "text", Message: "cc1: internal compiler error: in expand_expr, at expr.c:N"}},
		{"a clean error is no crash", "prog.tl:1:5: expected expression\n", State{}},
		{"empty", "", State{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ParseCrash([]byte(tt.stderr))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseCrash (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStateIgnoresTheInput: the same bug reached with other inputs (other
// literals in the message, other argument values and addresses in the
// stack) has one state.
func TestStateIgnoresTheInput(t *testing.T) {
	a := "panic: runtime error: index out of range [0] with length 0\n\ngoroutine 1 [running]:\nexample.com/c.(*compiler).enum(0xc000010000, 0xc0000a0000)\n\t/src/c/compile.go:171 +0x1d\nexample.com/c.(*compiler).program(0xc000010000, 0xc0000a0000)\n\t/src/c/compile.go:120 +0x1a5\nexample.com/c.Compile({0xc0000b0000, 0xd, 0x10})\n\t/src/c/compile.go:20 +0x9c\n"
	b := strings.NewReplacer("[0] with length 0", "[3] with length 3", "0xc0000a0000", "0xc0001f8000", "0xd, 0x10", "0xe, 0x10", "+0x1a5", "+0x1b0").Replace(a)
	if sa, sb := ParseCrash([]byte(a)).String(), ParseCrash([]byte(b)).String(); sa != sb || sa == "" {
		t.Errorf("one bug, two states:\n%s\n%s", sa, sb)
	}
	c := strings.Replace(a, "(*compiler).enum", "(*compiler).fn", 1)
	if sa, sc := ParseCrash([]byte(a)).String(), ParseCrash([]byte(c)).String(); sa == sc {
		t.Errorf("two crash sites, one state: %s", sa)
	}
}

func TestShape(t *testing.T) {
	tests := []struct{ in, want string }{
		{"while true {}", "while true {}"},
		{"while true {}\n", "while true {}"},
		{"while  true\n{\n}", "while true { }"},
		{"while 1 < 2 {}", "while 0 < 0 {}"},
		{`let s = "abc"; while s {}`, `let s = ""; while s {}`},
		{strings.Repeat("x", 300), strings.Repeat("x", 200) + "…"},
	}
	for _, tt := range tests {
		if got := Shape(tt.in); got != tt.want {
			t.Errorf("Shape(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func FuzzParseCrash(f *testing.F) {
	for _, name := range []string{"go-nil-deref.txt", "go-index.txt", "go-test-fuzz.txt"} {
		f.Add(readCrash(f, name))
	}
	f.Add([]byte("thread 'main' panicked at src/a.rs:1:2:\nboom\n   0: x::y\n"))
	f.Add([]byte("Traceback (most recent call last):\n  File \"a.py\", line 1, in f\nValueError: x\n"))
	f.Add([]byte("==1==ERROR: AddressSanitizer: SEGV on unknown address\n    #0 0x1 in f a.c:1\n"))
	f.Add([]byte("Exception in thread \"main\" java.lang.Error\n\tat a.B.c(B.java:1)\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s := ParseCrash(b)
		if len(s.Frames) > MaxFrames {
			t.Fatalf("%d frames", len(s.Frames))
		}
		if strings.ContainsAny(s.String(), "\n") {
			t.Fatalf("state spans lines: %q", s.String())
		}
		_ = Shape(string(b))
	})
}

// TestDotlessModule: a local module without a dot in its path is the
// target, not the standard library, because its files are not in GOROOT.
func TestDotlessModule(t *testing.T) {
	out := "panic: boom\n\ngoroutine 1 [running]:\nstrings.Index(...)\n\t/usr/local/go/src/strings/strings.go:1 +0x1\nmycc/parse.block(0x1)\n\t/home/u/mycc/parse/block.go:12 +0x1\nmycc/parse.Program()\n\t/home/u/mycc/parse/parse.go:3\ntesting.tRunner(0x1)\n\t/usr/local/go/src/testing/testing.go:1 +0x1\nreflect.Value.call()\n\treflect/value.go:586 +0xf0c\n"
	want := State{Kind: "go", Message: "panic: boom", Frames: []string{"parse.block", "parse.Program"}}
	if diff := cmp.Diff(want, ParseCrash([]byte(out))); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
