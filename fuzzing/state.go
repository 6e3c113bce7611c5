package fuzzing

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// State is a crash's normalized crash state, what ClusterFuzz buckets
// crashes by: the crash message with its literals masked and the top
// frames of the stack that belong to the target (runtime, standard library
// and test-harness frames skipped). Two inputs that crash the same way at
// the same place have the same State whatever else differs, so one bug is
// one finding.
type State struct {
	Kind    string   // the runtime that reported it: go, rust, python, sanitizer, java, signal, exit, text
	Message string   // e.g. "panic: runtime error: index out of range [N] with length N"
	Frames  []string // innermost first, at most MaxFrames, e.g. "compiler.(*compiler).enum"
}

// MaxFrames is how many target frames a State keeps.
const MaxFrames = 3

// String renders the state on one line: the message, then " @ " and the
// frames joined by " < " (innermost first). It is what fingerprints hash.
func (s State) String() string {
	if len(s.Frames) == 0 {
		return s.Message
	}
	return s.Message + " @ " + strings.Join(s.Frames, " < ")
}

// IsZero reports whether nothing was recognized.
func (s State) IsZero() bool { return s.Message == "" && len(s.Frames) == 0 }

// ParseCrash reads a crashed program's stderr (or a test runner's output)
// and returns its crash state: a Go panic or fatal error with its goroutine
// stack (also indented, as go test prints a fuzz failure), a Rust panic
// with or without a backtrace, a Python traceback, a sanitizer report, a
// Java exception; else the first line that looks like a crash, masked. It
// returns the zero State when stderr holds none of these (the caller then
// falls back to the signal or exit status). It never panics on any input
// (fuzzed) and looks at most at the first 1 MiB.
func ParseCrash(stderr []byte) State {
	if len(stderr) > 1<<20 {
		stderr = stderr[:1<<20]
	}
	text := strings.ToValidUTF8(string(stderr), "\uFFFD")
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	for _, p := range []func([]string) (State, bool){parseGo, parseSanitizer, parseRust, parsePython, parseJava} {
		if s, ok := p(lines); ok {
			return s
		}
	}
	if l := crashLine.FindString(text); l != "" {
		return State{Kind: "text", Message: mask(strings.TrimSpace(l))}
	}
	return State{}
}

// FallbackState is the state of a crash whose output says nothing useful:
// its signal, else its exit status.
func FallbackState(signal string, exitCode int) State {
	if signal != "" {
		return State{Kind: "signal", Message: "signal " + signal}
	}
	return State{Kind: "exit", Message: "exit " + itoa(exitCode)}
}

var crashLine = regexp.MustCompile(`(?m)^.*(?:panic: .*|fatal error: .*|panicked at.*|Segmentation fault.*|AddressSanitizer: \S+|[Aa]ssertion .*failed.*|internal compiler error.*|Exception in thread .*|stack overflow.*|Unhandled exception.*)$`)

var recovered = regexp.MustCompile(`\s*\[recovered[^\]]*\]\s*$`)

// goFrame is a Go stack frame's function line: "pkg/path.Func(args)".
var goFrame = regexp.MustCompile(`^(\S+?)\((?:[^()]*)\)$`)

// parseGo reads a Go panic or fatal error and its first goroutine's stack.
func parseGo(lines []string) (State, bool) {
	msg := -1
	for i, l := range lines {
		// go test prints a fuzz failure as "testing.go:NNN: panic: ...". A
		// panic raised while panicking prints the chain, "panic: X
		// [recovered]" then an indented "panic: Y"; the last one is the
		// state, because a harness that recovers (go test -fuzz, a fuzz
		// target's own recover) sees only that one: one crash, one state
		// whichever engine ran it.
		if j := strings.Index(l, "panic: "); j >= 0 && (j == 0 || strings.HasSuffix(l[:j], ": ")) {
			msg = i
			for msg+1 < len(lines) && strings.HasPrefix(lines[msg+1], "panic: ") {
				msg++
			}
			break
		}
		if strings.HasPrefix(l, "fatal error: ") {
			msg = i
			break
		}
	}
	if msg < 0 {
		return State{}, false
	}
	m := lines[msg]
	if j := strings.Index(m, "panic: "); j > 0 && !strings.HasPrefix(m, "fatal error: ") {
		m = m[j:]
	}
	m = recovered.ReplaceAllString(m, "") // "[recovered]", Go 1.23+ "[recovered, repanicked]"
	st := State{Kind: "go", Message: mask(m)}
	// Frames: after the first "goroutine N [...]:" line following the
	// message, function lines each followed by a "file.go:line" line.
	g := -1
	for i := msg; i < len(lines); i++ {
		if strings.HasPrefix(lines[i], "goroutine ") && strings.HasSuffix(lines[i], ":") {
			g = i
			break
		}
	}
	if g < 0 {
		return st, true
	}
	for i := g + 1; i < len(lines) && len(st.Frames) < MaxFrames; i++ {
		l := lines[i]
		if l == "" || strings.HasPrefix(l, "goroutine ") || strings.HasPrefix(l, "created by ") || strings.HasPrefix(l, "exit status") || strings.HasPrefix(l, "FAIL") || strings.HasPrefix(l, "---") {
			break
		}
		fm := goFrame.FindStringSubmatch(l)
		if fm == nil {
			continue // a file:line line, or "...additional frames elided..."
		}
		file := ""
		if i+1 < len(lines) {
			file = lines[i+1]
		}
		if fn := fm[1]; goTargetFrame(fn, file) {
			st.Frames = append(st.Frames, shortFunc(fn))
		}
	}
	return st, true
}

// goTargetFrame reports whether a Go function belongs to the program under
// test rather than the runtime, the standard library or the test harness.
// Import paths outside the standard library have a dot in their first
// element and package main is the program itself; a dotless path (a local
// module "mycompiler/parse", or the standard library) is the standard
// library's only when its file, the next line of the trace, lies in
// GOROOT's src/<path>/ (or is <path>/ under -trimpath).
func goTargetFrame(fn, file string) bool {
	if !strings.Contains(fn, ".") {
		return false // panic(...), goexit: the runtime's own frames
	}
	pkg := goPackage(fn)
	// The runtime's functions live partly in internal/runtime/... files
	// (runtime.mapassign_faststr), which a traceback at GOTRACEBACK=crash
	// shows; no module can be named runtime or internal.
	if pkg == "runtime" || strings.HasPrefix(pkg, "runtime/") || strings.HasPrefix(pkg, "internal/") {
		return false
	}
	first, _, _ := strings.Cut(pkg, "/")
	if pkg == "main" || strings.Contains(first, ".") {
		return true
	}
	file, _, _ = strings.Cut(file, ":")
	if file == "" || !strings.HasSuffix(file, ".go") {
		return false
	}
	return !strings.Contains(file, "/src/"+pkg+"/") && !strings.HasPrefix(file, pkg+"/")
}

// GoPackage returns the import path of a Go function name as a traceback
// prints it ("github.com/a/b.(*T).m" -> "github.com/a/b").
func GoPackage(fn string) string { return goPackage(fn) }

// goPackage returns the import path of a Go function name
// ("github.com/a/b.(*T).m" -> "github.com/a/b", "main.main" -> "main").
func goPackage(fn string) string {
	slash := strings.LastIndexByte(fn, '/')
	dot := strings.IndexByte(fn[slash+1:], '.')
	if dot < 0 {
		return fn
	}
	return fn[:slash+1+dot]
}

var majorVersion = regexp.MustCompile(`^v\d+\.`)

var closureNum = regexp.MustCompile(`\.(func|gowrap)\d+(?:\.\d+)*`)

// shortFunc drops the import path's directories and closure numbers:
// "github.com/a/b.(*T).m.func2" -> "b.(*T).m.funcN".
func shortFunc(fn string) string {
	if i := strings.LastIndexByte(fn, '/'); i >= 0 {
		// Keep the element before a major-version suffix: "blackfriday/v2.f".
		if j := strings.LastIndexByte(fn[:i], '/'); j >= 0 && majorVersion.MatchString(fn[i+1:]) {
			i = j
		}
		fn = fn[i+1:]
	}
	if i := strings.Index(fn, "[...]"); i >= 0 {
		fn = fn[:i] + fn[i+len("[...]"):]
	}
	return closureNum.ReplaceAllString(fn, ".${1}N")
}

var (
	sanErr   = regexp.MustCompile(`ERROR: (\w+Sanitizer): (\S+)`)
	sanFrame = regexp.MustCompile(`^#\d+ 0x[0-9a-fA-F]+ in (\S+)(?: (\S+))?`)
)

// parseSanitizer reads an ASan/UBSan/MSan report: "==N==ERROR:
// AddressSanitizer: heap-buffer-overflow ..." and "#0 0x... in func file".
func parseSanitizer(lines []string) (State, bool) {
	for i, l := range lines {
		m := sanErr.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		st := State{Kind: "sanitizer", Message: m[1] + ": " + m[2]}
		for _, f := range lines[i+1:] {
			if len(st.Frames) == MaxFrames || strings.HasPrefix(f, "SUMMARY:") {
				break
			}
			fm := sanFrame.FindStringSubmatch(f)
			if fm == nil {
				continue
			}
			fn, file := fm[1], fm[2]
			if strings.HasPrefix(fn, "__") || strings.Contains(file, "libc") || strings.Contains(file, "compiler-rt") || strings.Contains(file, "libclang_rt") || strings.Contains(file, "/usr/lib") {
				continue
			}
			st.Frames = append(st.Frames, fn)
		}
		return st, true
	}
	return State{}, false
}

var (
	rustPanic = regexp.MustCompile(`^thread '[^']*' panicked at (?:'(.*)', )?(\S+?):\d+:\d+:?$`)
	rustFrame = regexp.MustCompile(`^\d+: (\S+)$`)
)

// parseRust reads "thread 'main' panicked at 'msg', src/x.rs:1:2" (old) or
// "... panicked at src/x.rs:1:2:" followed by the message (new), and the
// frames of a RUST_BACKTRACE, skipping std, core and alloc.
func parseRust(lines []string) (State, bool) {
	for i, l := range lines {
		m := rustPanic.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		msg := m[1]
		if msg == "" && i+1 < len(lines) {
			msg = lines[i+1]
		}
		st := State{Kind: "rust", Message: "panicked: " + mask(msg)}
		for _, f := range lines[i+1:] {
			if len(st.Frames) == MaxFrames {
				break
			}
			fm := rustFrame.FindStringSubmatch(f)
			if fm == nil {
				continue
			}
			fn := fm[1]
			if strings.HasPrefix(fn, "std::") || strings.HasPrefix(fn, "core::") || strings.HasPrefix(fn, "alloc::") || strings.HasPrefix(fn, "rust_") || strings.HasPrefix(fn, "__") || strings.HasPrefix(fn, "<") {
				continue
			}
			st.Frames = append(st.Frames, closureNum.ReplaceAllString(fn, ""))
		}
		if len(st.Frames) == 0 {
			st.Frames = []string{m[2]} // the panic's source file stands in for a frame
		}
		return st, true
	}
	return State{}, false
}

var pyFrame = regexp.MustCompile(`^File "([^"]*)", line \d+, in (\S+)`)

// parsePython reads the last traceback: its frames innermost first (Python
// prints them outermost first) and the exception line after them.
func parsePython(lines []string) (State, bool) {
	start := -1
	for i, l := range lines {
		if l == "Traceback (most recent call last):" {
			start = i
		}
	}
	if start < 0 {
		return State{}, false
	}
	var frames []string
	msg := ""
	for _, l := range lines[start+1:] {
		if fm := pyFrame.FindStringSubmatch(l); fm != nil {
			if !strings.Contains(fm[1], "/lib/python") && !strings.HasPrefix(fm[1], "<frozen") {
				frames = append(frames, fm[2])
			}
			continue
		}
		if l != "" && !strings.HasPrefix(l, "^") && msg == "" && len(frames) > 0 && isPyException(l) {
			msg = l
		}
	}
	st := State{Kind: "python", Message: mask(msg)}
	for i := len(frames) - 1; i >= 0 && len(st.Frames) < MaxFrames; i-- {
		st.Frames = append(st.Frames, frames[i])
	}
	return st, true
}

var pyExc = regexp.MustCompile(`^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Warning)\b`)

func isPyException(l string) bool { return pyExc.MatchString(l) }

var (
	javaExc   = regexp.MustCompile(`^Exception in thread "[^"]*" (\S+?)(?::.*)?$`)
	javaFrame = regexp.MustCompile(`^at ([\w$.<>]+)\(`)
)

// parseJava reads an uncaught exception and its "at pkg.Class.m(File:N)"
// frames, skipping java., javax., jdk. and sun. ones.
func parseJava(lines []string) (State, bool) {
	for i, l := range lines {
		m := javaExc.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		st := State{Kind: "java", Message: m[1]}
		for _, f := range lines[i+1:] {
			if len(st.Frames) == MaxFrames {
				break
			}
			fm := javaFrame.FindStringSubmatch(f)
			if fm == nil {
				if strings.HasPrefix(f, "Caused by:") {
					break
				}
				continue
			}
			fn := fm[1]
			if strings.HasPrefix(fn, "java.") || strings.HasPrefix(fn, "javax.") || strings.HasPrefix(fn, "jdk.") || strings.HasPrefix(fn, "sun.") {
				continue
			}
			st.Frames = append(st.Frames, fn)
		}
		return st, true
	}
	return State{}, false
}

var (
	maskQuoted = regexp.MustCompile("\"(?:[^\"\\\\]|\\\\.)*\"|'(?:[^'\\\\]|\\\\.)*'|`[^`]*`")
	maskNumber = regexp.MustCompile(`0[xX][0-9a-fA-F]+|\b[0-9a-fA-F]{6,}\b|\b\d+\b`)
)

// maxMessage bounds a state's message in bytes.
const maxMessage = 160

// mask replaces the literals of a crash message: quoted strings (they echo
// the input) with "…", numbers, hex and addresses with N. The message of
// the same bug on another input is then the same.
func mask(s string) string {
	s = maskQuoted.ReplaceAllStringFunc(s, func(q string) string { return q[:1] + "…" + q[len(q)-1:] })
	s = maskNumber.ReplaceAllStringFunc(s, func(w string) string {
		if strings.IndexFunc(w, func(r rune) bool { return '0' <= r && r <= '9' }) < 0 {
			return w // a hex-looking word without a digit ("deadbeef", "facade") is a word
		}
		return "N"
	})
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > maxMessage {
		n := maxMessage
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n] + "…"
	}
	return s
}

// Shape is a hang's state: its (minimized) input with literals masked —
// numbers become 0, quoted strings "" — and whitespace runs collapsed, at
// most 200 bytes. Two minimizations of one hang that differ only in spacing,
// a trailing newline or a constant share a Shape.
func Shape(input string) string {
	s := maskQuoted.ReplaceAllStringFunc(input, func(q string) string { return q[:1] + q[len(q)-1:] })
	s = shapeNumber.ReplaceAllString(s, "0")
	var b bytes.Buffer
	for i, f := range strings.Fields(s) {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(f)
	}
	out := strings.ToValidUTF8(b.String(), "\uFFFD")
	if len(out) > 200 {
		n := 200
		for n > 0 && !utf8.RuneStart(out[n]) {
			n--
		}
		out = out[:n] + "…"
	}
	return out
}

// HangState is the state of a hang on a `go test fuzz v1` input (the go
// and libfuzzer engines'): its Shape and how many bytes its values hold.
// The Shape alone masks every byte of a []byte or string argument, and a
// hang on 10,000 '[' (jsonparser's Delete) read as a hang on the empty
// input. Input that is not a corpus file counts whole.
func HangState(input []byte) string {
	n := len(input)
	if vs, err := ParseGoCorpus(input); err == nil {
		n = 0
		for _, v := range vs {
			if v.Type == "[]byte" || v.Type == "string" {
				n += len(v.Bytes)
			} else {
				n += len(v.Text)
			}
		}
	}
	return fmt.Sprintf("hang: %s (%d bytes)", Shape(string(input)), n)
}

var shapeNumber = regexp.MustCompile(`\b\d+(?:\.\d+)?\b`)

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	neg := n < 0
	if neg {
		n = -n
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}
