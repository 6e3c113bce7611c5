package fuzzing

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestJudgeHang judges goroutine dumps as go test prints them at its
// timeout: the fuzz function's goroutine is picked over the alarm's and
// the main goroutine, and each rule has a case.
func TestJudgeHang(t *testing.T) {
	dump := func(frames ...string) []byte {
		s := "panic: test timed out after 3s\n\trunning tests:\n\t\tFuzzX (3s)\n\n" +
			"goroutine 17 [running]:\ntesting.(*M).startAlarm.func1()\n\t/go/src/testing/testing.go:2484 +0x345\ncreated by time.goFunc\n\t/go/src/time/sleep.go:215 +0x2d\n\n" +
			"goroutine 1 [chan receive]:\ntesting.(*T).Run(0xc000003a40, {0x5c, 0x5}, 0xc0)\n\t/go/src/testing/testing.go:1859 +0x431\nmain.main()\n\t_testmain.go:47 +0x9b\n\n" +
			"goroutine 6 [running]:\n"
		for _, f := range frames {
			fn, file, _ := strings.Cut(f, " ")
			s += fn + "(...)\n\t" + file + " +0x1c\n"
		}
		s += "testing.(*F).Fuzz.func1.1(0xc000003c00)\n\t/go/src/testing/fuzz.go:341 +0x32c\ncreated by testing.(*F).Fuzz.func1 in goroutine 5\n\t/go/src/testing/fuzz.go:328 +0x4b5\n"
		return []byte(s)
	}
	const mod, h = "example.com/m", "example.com/m/fleetdharness"
	cases := []struct {
		name    string
		out     []byte
		verdict string
		frame   string
	}{
		{"library", dump("runtime.mallocgc /go/src/runtime/malloc.go:1", "example.com/m/p.loop /m/p/p.go:9", "example.com/m/fleetdharness/p.FuzzLoop.func1 /m/fleetdharness/p/harness_test.go:12"), HangLibrary, "example.com/m/p.loop"},
		{"dependency inside the library", dump("example.com/other.match /o/m.go:3", "example.com/m/p.Get /m/p/p.go:20", "example.com/m/fleetdharness/p.FuzzGet.func1 /m/fleetdharness/p/harness_test.go:12"), HangLibrary, "example.com/m/p.Get"},
		{"harness", dump("strings.Index /go/src/strings/strings.go:1", "example.com/m/fleetdharness/p.FuzzLoop.func1 /m/fleetdharness/p/harness_test.go:12"), HangHarness, "example.com/m/fleetdharness/p.FuzzLoop.func1"},
		{"dependency called by the harness", dump("example.com/other.match /o/m.go:3", "example.com/m/fleetdharness/p.FuzzLoop.func1 /m/fleetdharness/p/harness_test.go:12"), HangOutside, "example.com/m/fleetdharness/p.FuzzLoop.func1"},
		{"only the runtime", dump("runtime.futex /go/src/runtime/lock_futex.go:1"), HangOutside, ""},
		{"no dump", []byte("fatal: killed\n"), HangUnknown, ""},
		// go test's own dump on a loaded machine: the spinning goroutine
		// did not stop in time, and the fuzz test waiting for it is not
		// the hang.
		{"stack unavailable", []byte("panic: test timed out after 6s\n\ngoroutine 6 [chan receive]:\ntesting.(*F).Fuzz.func1({0x6a9aa0})\n\t/go/src/testing/fuzz.go:343 +0x67b\n" +
			"testing.(*F).Fuzz(0x15c2)\n\t/go/src/testing/fuzz.go:408 +0xab8\nexample.com/m/p.FuzzHarness(0x15c2?)\n\t/m/p/fuzz_test.go:16 +0x3e\n\n" +
			"goroutine 7 [running]:\n\tgoroutine running on other thread; stack unavailable\n"), HangUnknown, ""},
		// The hang dump's own goroutine is not the hang.
		{"the dump's goroutine", []byte("fleetd: the test ran for 4.5s, every goroutine's stack:\n\ngoroutine 9 [running]:\nexample.com/m/p.init.0.func1()\n\t/m/p/" + hangDumpFile + ":19 +0x5d\n"), HangUnknown, ""},
	}
	for _, tc := range cases {
		v := JudgeHang(tc.out, mod, h)
		if v.Verdict != tc.verdict || v.Frame != tc.frame || v.Why == "" {
			t.Errorf("%s: %+v, want %s at %q", tc.name, v, tc.verdict, tc.frame)
		}
	}
	if ok, head := GoTestTimedOut(dump("example.com/m/p.loop /m/p/p.go:9")); !ok || !strings.HasPrefix(head, "panic: test timed out after 3s\n\ngoroutine 6 [running]:") {
		t.Errorf("GoTestTimedOut picked:\n%s", head)
	}
	deep := []string{}
	for range 200 {
		deep = append(deep, "example.com/other.deepMatch /o/m.go:46")
	}
	deep = append(deep, "example.com/m/p.Get /m/p/p.go:20")
	ok, head := GoTestTimedOut(dump(deep...))
	if v := JudgeHang([]byte(head), mod, h); !ok || len(head) > 2048 || !strings.Contains(head, "199 more calls of example.com/other.deepMatch") || v.Verdict != HangLibrary || v.Frame != "example.com/m/p.Get" {
		t.Errorf("a deep recursion (%d bytes) judged %+v:\n%s", len(head), v, head)
	}
	if ok, _ := GoTestTimedOut([]byte("panic: runtime error: index out of range\n")); ok {
		t.Error("a crash read as a test timeout")
	}
}

// FuzzJudgeHang: any output is judged without a panic, and a verdict
// always says why.
func FuzzJudgeHang(f *testing.F) {
	f.Add([]byte("panic: test timed out after 1s\n\ngoroutine 6 [running]:\nexample.com/m/p.loop(...)\n\t/m/p/p.go:9 +0x1c\n"), "example.com/m")
	f.Add([]byte("goroutine 1 [running]:\n"), "")
	f.Fuzz(func(t *testing.T, out []byte, mod string) {
		v := JudgeHang(out, mod, mod+"/fleetdharness")
		if v.Verdict == "" || v.Why == "" {
			t.Fatalf("verdict %+v", v)
		}
		GoTestTimedOut(out)
	})
}

// TestWriteHangDump: the dump file takes the package its non-test files
// declare, else its test files' with "_test" trimmed; a directory with no
// Go package is an error naming it.
func TestWriteHangDump(t *testing.T) {
	for _, tc := range []struct{ files map[string]string }{
		{map[string]string{"a.go": "package alpha\n", "a_test.go": "package alpha_test\n"}},
		{map[string]string{"h_test.go": "package alpha_test\n"}},
	} {
		dir := writeModule(t, tc.files)
		if err := writeHangDump(dir); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dir, hangDumpFile))
		if err != nil || !strings.HasPrefix(string(b), "package alpha\n") {
			t.Errorf("%v: %q %v", tc.files, b, err)
		}
	}
	dir := t.TempDir()
	if err := writeHangDump(dir); err == nil || !strings.Contains(err.Error(), dir) {
		t.Errorf("no package: %v", err)
	}
}

// TestReplayHang: a hang another engine found (a `go test fuzz v1` input,
// as libFuzzer's crashers carry) replays through go test's binary with
// the hang dump and is judged at its frame in the module; an input that
// does not hang there is unknown, saying how it ended; an input that does
// not parse is an error.
func TestReplayHang(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a test binary")
	}
	goCmd, err := GoCommand()
	if err != nil {
		t.Fatal(err)
	}
	env := machineEnv(t, goCmd, GoEnv(goCmd, t.TempDir(), t.TempDir(), 1<<30), "GOCACHE")
	src := writeModule(t, map[string]string{
		"go.mod": "module example.com/loops\n\ngo 1.22\n",
		"p/p.go": "package p\n\n// Skip skips to the closing quote; an unclosed one is never left.\n" +
			"func Skip(b []byte) int {\n\ti := 0\n\tfor i < len(b) && b[i] != '\"' {\n\t\tif b[i] == '\\\\' {\n\t\t\tcontinue\n\t\t}\n\t\ti++\n\t}\n\treturn i\n}\n",
		"p/fuzz_test.go": "package p\n\nimport \"testing\"\n\nfunc FuzzSkip(f *testing.F) {\n\tf.Fuzz(func(t *testing.T, s string, n int) { Skip([]byte(s)) })\n}\n",
	})
	g := GoTarget{Dir: src, Package: "./p", Func: "FuzzSkip", Go: goCmd, Env: env}
	ctx := context.Background()
	c, v, err := ReplayHang(ctx, g, []byte("go test fuzz v1\nstring(\"a\\\\b\")\nint(3)\n"), 6*time.Second, "example.com/loops", "example.com/loops/fleetdharness")
	if err != nil {
		t.Fatal(err)
	}
	if c.Outcome != TimedOut || v.Verdict != HangLibrary || v.Frame != "example.com/loops/p.Skip" || !strings.Contains(v.File, "/p/p.go:") {
		t.Fatalf("outcome %s, verdict %+v\n%s", c.Outcome, v, c.Stderr)
	}
	c, v, err = ReplayHang(ctx, g, []byte("go test fuzz v1\nstring(\"ab\\\"\")\nint(3)\n"), 6*time.Second, "example.com/loops", "")
	if err != nil || c.Outcome != Compiled || v.Verdict != HangUnknown || !strings.Contains(v.Why, "did not hang (outcome compiled)") {
		t.Fatalf("an input that finishes: %v %s %+v", err, c.Outcome, v)
	}
	if _, _, err := ReplayHang(ctx, g, []byte("not a corpus file"), time.Second, "example.com/loops", ""); err == nil {
		t.Error("an input that does not parse was replayed")
	}
}

// TestConfirmHang: a timeout on little CPU is replayed once more with
// four times the wall time and judged by that replay's CPU; a timeout
// that spun through its limit, and a replay that did not time out, are
// taken as they are.
func TestConfirmHang(t *testing.T) {
	const limit = 2 * time.Second
	timedOut := func(cpu time.Duration) Crasher { return Crasher{Outcome: TimedOut, State: "hang: x", cpu: cpu} }
	for _, tc := range []struct {
		name    string
		replays []Crasher // the first, then the retry
		scales  string
		outcome string
		note    string // a substring of the Note; "" = none
	}{
		{"finished", []Crasher{{Outcome: Compiled}}, "1", Compiled, ""},
		{"crashed", []Crasher{{Outcome: Crashed, State: "panic: x"}}, "1", Crashed, ""},
		{"spun", []Crasher{timedOut(1900 * time.Millisecond)}, "1", TimedOut, ""},
		{"spun half", []Crasher{timedOut(limit / 2)}, "1", TimedOut, ""},
		{"starved then ended", []Crasher{timedOut(300 * time.Millisecond), {Outcome: Compiled}}, "1 4", Compiled,
			"not a hang: its replay ran out of its 2s limit on 300ms of CPU (starved or blocked), and given 8s it ended (compiled)"},
		{"starved then spun", []Crasher{timedOut(300 * time.Millisecond), timedOut(5 * time.Second)}, "1 4", TimedOut,
			"hang confirmed by CPU time on a second replay: its replay ran out of its 2s limit on 300ms of CPU (starved), then 5s of CPU in 8s"},
		{"blocked", []Crasher{timedOut(10 * time.Millisecond), timedOut(20 * time.Millisecond)}, "1 4", TimedOut,
			"hang confirmed only by wall time: its replay ran out of its 2s limit on 10ms of CPU, and 20ms of CPU again in 8s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var scales []string
			c, err := confirmHang(context.Background(), limit, func(scale int) (Crasher, error) {
				scales = append(scales, strconv.Itoa(scale))
				return tc.replays[len(scales)-1], nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(scales, " "); got != tc.scales || c.Outcome != tc.outcome {
				t.Errorf("replays at scales %q, outcome %s; want %q, %s", got, c.Outcome, tc.scales, tc.outcome)
			}
			if tc.note == "" && c.Note != "" || !strings.Contains(c.Note, tc.note) {
				t.Errorf("note %q, want %q", c.Note, tc.note)
			}
		})
	}
	if _, err := confirmHang(context.Background(), limit, func(int) (Crasher, error) { return Crasher{}, errors.New("no binary") }); err == nil {
		t.Error("a replay's error was lost")
	}
	// Cancelled during the retry (which then ends at once, on no CPU):
	// an error, not a hang confirmed only by wall time.
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	_, err := confirmHang(ctx, limit, func(int) (Crasher, error) {
		if n++; n == 2 {
			cancel()
		}
		return timedOut(0), nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("a retry cancelled: %v", err)
	}
}

// TestHangConfirmedByCPU: a fuzz target that sleeps past its limit is no
// hang (before, its replay's timeout alone made it one), one that blocks
// on a channel for ever is a hang confirmed only by wall time, and one
// that spins is a hang; through the libFuzzer replay (the three inputs at
// once) and through go test's (ReplayHang, whose verdict says so). How a
// spinner is confirmed depends on the CPU the machine gives it (by CPU
// time at once, on the second replay, or, starved through both, only by
// wall time): that it is a hang does not.
func TestHangConfirmedByCPU(t *testing.T) {
	clang := MustLibFuzzer(t)
	if testing.Short() {
		t.Skip("builds an instrumented binary and a test binary")
	}
	type result struct {
		c   Crasher
		v   HangVerdict
		err error
	}
	inputs := []string{"spin", "block", "sleep"}
	input := func(s string) []byte { return FormatGoCorpus(GoValue{Type: "[]byte", Bytes: []byte(s)}) }
	check := func(t *testing.T, by string, res []result) {
		t.Helper()
		for i, in := range inputs {
			r := res[i]
			if r.err != nil {
				t.Fatalf("%s %s: %v", by, in, r.err)
			}
			t.Logf("%s %s: %s, note %q, cpu %s", by, in, r.c.Outcome, r.c.Note, r.c.cpu)
		}
		if spin := res[0].c; spin.Outcome != TimedOut {
			t.Errorf("%s: the spinning input is no hang: %s %q", by, spin.Outcome, spin.Note)
		}
		if block := res[1].c; block.Outcome != TimedOut || !strings.HasPrefix(block.Note, "hang confirmed only by wall time: ") {
			t.Errorf("%s: the blocked input: %s, note %q", by, block.Outcome, block.Note)
		}
		if sleep := res[2].c; sleep.Outcome != Compiled || !strings.HasPrefix(sleep.Note, "not a hang: ") {
			t.Errorf("%s: the input that sleeps past its limit: %s, note %q", by, sleep.Outcome, sleep.Note)
		}
	}
	t.Run("libfuzzer", func(t *testing.T) {
		t.Parallel()
		g := mustGoTarget(t, "magicmod", "./stall", "FuzzDo")
		lt := LibFuzzerTarget{Go: g, Clang: clang, CacheDir: t.TempDir(), Work: t.TempDir()}
		if c, err := ReplayLibFuzzer(context.Background(), lt, input("ok"), time.Minute); err != nil || c.Outcome != Compiled {
			t.Fatalf("a passing input: %s %v", c.Outcome, err) // built, and the binary in place, before the replays at once
		}
		res := make([]result, len(inputs))
		var wg sync.WaitGroup
		for i, in := range inputs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := ReplayLibFuzzer(context.Background(), lt, input(in), time.Second)
				res[i] = result{c: c, err: err}
			}()
		}
		wg.Wait()
		check(t, "libfuzzer", res)
	})
	t.Run("go", func(t *testing.T) {
		t.Parallel()
		g := mustGoTarget(t, "magicmod", "./stall", "FuzzDo")
		var res []result
		for _, in := range inputs { // one at a time: a replay writes its input into the package
			c, v, err := ReplayHang(context.Background(), g, input(in), 3*time.Second, "example.com/magicmod", "")
			res = append(res, result{c, v, err})
		}
		check(t, "go", res)
		for i, in := range inputs[:2] {
			if v := res[i].v; v.Verdict != HangLibrary || v.Frame != "example.com/magicmod/stall.Do" {
				t.Errorf("go: %s judged %+v", in, v)
			}
		}
		if why := res[1].v.Why; !strings.Contains(why, "; hang confirmed only by wall time: ") || !strings.HasSuffix(why, "; its goroutine was waiting (chan receive) at the dump: blocked, not a loop") {
			t.Errorf("the blocked input's verdict does not say how it was confirmed and that it waits: %q", why)
		}
		if spin := res[0]; strings.HasPrefix(spin.c.Note, wallOnly) && !strings.Contains(spin.v.Why, "at the dump: a loop starved of CPU, not a wait") {
			t.Errorf("the spinning input, starved through both replays, is not named a loop: %q", spin.v.Why)
		}
	})
}

// TestComputing: the goroutine states a traceback prints for a goroutine
// on or waiting for a CPU are computing; every wait reason is not.
func TestComputing(t *testing.T) {
	for st, want := range map[string]bool{"running": true, "runnable": true, "running, locked to thread": true, "preempted": true,
		"chan receive": false, "sleep": false, "select (no cases)": false, "sync.Mutex.Lock": false, "syscall": false, "IO wait, 2 minutes": false, "": false} {
		if got := computing(st); got != want {
			t.Errorf("computing(%q) = %v", st, got)
		}
	}
}
