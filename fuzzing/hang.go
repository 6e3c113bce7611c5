package fuzzing

import (
	"cmp"
	"context"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// A hang is judged from the stack the target was on when its time ran out.
// go test's -test.timeout panics with "panic: test timed out after D" and
// prints every goroutine (it sets the traceback to all); so does a Go
// program sent SIGQUIT. HangStack picks, from such a dump, the goroutine
// that was running the fuzz function, and JudgeHang says whose loop it is.

// goTestTimedOut is the line go test prints when -test.timeout ends a
// test, or the one the hang dump (hangDumpFile) prints before its stacks.
var goTestTimedOut = regexp.MustCompile(`(?m)^(?:panic: test timed out after \S+|fleetd: the test ran for \S+, every goroutine's stack:)`)

// The hang dump: go test's timeout prints its goroutines after freezing
// the world for at most a few milliseconds, and on a loaded machine a
// goroutine spinning in a loop may not stop in time: it is printed as
// "goroutine running on other thread; stack unavailable", the one stack a
// hang is judged by. So ReplayGo adds hangDumpFile to the package copy:
// when hangDumpEnv holds a duration, a goroutine started by init waits
// that long, then takes every goroutine's stack with runtime.Stack, which
// stops the world until every goroutine has stopped, prints it and exits 2.
const (
	hangDumpFile = "fleetd_hangdump_test.go"
	hangDumpEnv  = "FLEETD_HANG_DUMP"
)

const hangDumpSource = `package %s

import (
	"os"
	"runtime"
	"time"
)

func init() {
	d, err := time.ParseDuration(os.Getenv("` + hangDumpEnv + `"))
	if err != nil || d <= 0 {
		return
	}
	go func() {
		time.Sleep(d)
		buf := make([]byte, 4<<20)
		n := runtime.Stack(buf, true)
		os.Stderr.WriteString("fleetd: the test ran for " + d.String() + ", every goroutine's stack:\n\n")
		os.Stderr.Write(buf[:n])
		os.Exit(2)
	}()
}
`

// writeHangDump writes hangDumpFile into the package directory dir, in the
// package its non-test files declare (else its test files', "_test"
// trimmed), unless it is there.
func writeHangDump(dir string) error {
	path := filepath.Join(dir, hangDumpFile)
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("hang dump: %w", err)
	}
	name, testName := "", ""
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, e.Name()), nil, parser.PackageClauseOnly)
		if err != nil {
			continue
		}
		switch {
		case !strings.HasSuffix(e.Name(), "_test.go") && name == "":
			name = f.Name.Name
		case strings.HasSuffix(e.Name(), "_test.go") && testName == "":
			testName = strings.TrimSuffix(f.Name.Name, "_test")
		}
	}
	name = cmp.Or(name, testName)
	if name == "" || name == "main" && testName == "" {
		return fmt.Errorf("hang dump: no Go package in %s", dir)
	}
	return os.WriteFile(path, fmt.Appendf(nil, hangDumpSource, name), 0o600)
}

// hangDumpAt is when the dump is taken in a replay whose go test timeout
// is d: a quarter earlier (at most 2 s), so the dump is printed before go
// test's own timeout, which stays as the backstop.
func hangDumpAt(d time.Duration) time.Duration {
	return max(d-min(d/4, 2*time.Second), 250*time.Millisecond)
}

// goroutineHead starts one goroutine's block in a Go traceback.
var goroutineHead = regexp.MustCompile(`^goroutine \d+ \[([^\]]*)\]:$`)

// HangFrame is one function of a hung goroutine's stack and its file:line.
type HangFrame struct {
	Func string `json:"func"`
	File string `json:"file"`
}

// HangStack returns the stack of the goroutine that was running the fuzz
// function in a goroutine dump taken at a timeout, as its block of the dump
// ("goroutine N [state]:" and its frames) and its frames, innermost first.
// The goroutine is the one running the fuzz function (below a
// testing.(*F).Fuzz closure), else the first that holds a frame outside
// the runtime, the standard library and the test alarm. Empty when the
// output holds no such goroutine.
func HangStack(out []byte) (block string, frames []HangFrame) {
	lines := strings.Split(strings.ReplaceAll(string(out), "\r\n", "\n"), "\n")
	type gr struct {
		lines  []string
		frames []HangFrame
	}
	var all []gr
	for i := 0; i < len(lines); i++ {
		if !goroutineHead.MatchString(strings.TrimSpace(lines[i])) {
			continue
		}
		g := gr{lines: []string{strings.TrimSpace(lines[i])}}
		for i++; i < len(lines); i++ {
			l := strings.TrimSpace(lines[i])
			if l == "" || goroutineHead.MatchString(l) {
				i--
				break
			}
			g.lines = append(g.lines, lines[i])
			if strings.HasPrefix(l, "created by ") || i+1 >= len(lines) {
				continue
			}
			m := frameFuncRE.FindStringSubmatch(l)
			fm := frameFileRE.FindStringSubmatch(strings.TrimSpace(lines[i+1]))
			if m != nil && fm != nil {
				g.frames = append(g.frames, HangFrame{Func: m[1], File: fm[1] + ":" + fm[2]})
			}
		}
		all = append(all, g)
	}
	pick := -1
	for i, g := range all {
		if pick < 0 && userFrames(g.frames) {
			pick = i
		}
		// The fuzz function runs below a testing.(*F).Fuzz closure; the
		// goroutine whose innermost frame is that closure itself is the
		// fuzz test's, waiting for it.
		for j, f := range g.frames {
			if j > 0 && strings.HasPrefix(f.Func, "testing.(*F).Fuzz.") && !strings.HasPrefix(g.frames[0].Func, "testing.") {
				return strings.Join(g.lines, "\n"), g.frames
			}
		}
	}
	if pick < 0 {
		return "", nil
	}
	return strings.Join(all[pick].lines, "\n"), all[pick].frames
}

var (
	frameFuncRE = regexp.MustCompile(`^([^\s()]+(?:\([^)]*\))?[^\s(]*)\(.*\)$`)
	frameFileRE = regexp.MustCompile(`^(\S+\.go):(\d+)`)
)

// userFrames reports a stack with a frame outside the runtime and the
// standard library that is not the test alarm's, the hang dump's or a
// test waiting for its subtest.
func userFrames(fs []HangFrame) bool {
	if len(fs) == 0 || strings.HasPrefix(fs[0].Func, "testing.") {
		return false // the test machinery, waiting for the test
	}
	for _, f := range fs {
		if strings.HasPrefix(f.Func, "testing.(*M).startAlarm") || strings.Contains(f.File, hangDumpFile+":") {
			return false
		}
	}
	for _, f := range fs {
		if !stdFunc(f.Func) {
			return true
		}
	}
	return false
}

// stdFunc reports a function of the runtime or the standard library: its
// import path's first element has no dot (main and the test's own
// package aside, which have frames with files outside GOROOT).
func stdFunc(fn string) bool {
	first, _, _ := strings.Cut(goPackage(fn), "/")
	return !strings.Contains(first, ".")
}

// GoTestTimedOut reports output of a go test binary that -test.timeout
// ended, and returns the output cut to its panic line and the hung
// goroutine's stack (what fits where a crash's head would be read).
func GoTestTimedOut(out []byte) (bool, string) {
	loc := goTestTimedOut.FindIndex(out)
	if loc == nil {
		return false, ""
	}
	head := string(out[loc[0]:loc[1]])
	block, _ := HangStack(out[loc[0]:])
	if block == "" {
		return true, head
	}
	return true, head + "\n\n" + collapseRecursion(block)
}

// collapseRecursion shortens a goroutine block whose stack repeats one
// function (a recursive matcher is a hang's usual shape) to its first
// call and a count, so the frames below it, the caller the hang is judged
// by, fit in a result's head.
func collapseRecursion(block string) string {
	lines := strings.Split(block, "\n")
	var out []string
	last, skipped := "", 0
	flush := func() {
		if skipped > 0 {
			out = append(out, fmt.Sprintf("\t... %d more calls of %s", skipped, last))
			skipped = 0
		}
	}
	for i := 0; i < len(lines); i++ {
		m := frameFuncRE.FindStringSubmatch(strings.TrimSpace(lines[i]))
		if m == nil || i+1 >= len(lines) || !frameFileRE.MatchString(strings.TrimSpace(lines[i+1])) {
			flush()
			out = append(out, lines[i])
			continue
		}
		if m[1] == last {
			skipped++
			i++
			continue
		}
		flush()
		last = m[1]
		out = append(out, lines[i], lines[i+1])
		i++
	}
	flush()
	return strings.Join(out, "\n")
}

// Hang verdicts (JudgeHang); the words are fuzzing/harness's verdicts.
const (
	HangLibrary = "library"
	HangHarness = "harness"
	HangOutside = "outside"
	HangUnknown = "unknown"
)

// HangVerdict is whose loop a hang is, and why.
type HangVerdict struct {
	Verdict string
	Why     string
	Frame   string // the frame judged: the innermost in the module (or the harness's)
	File    string
}

// JudgeHang decides whose hang a replay's output shows (a goroutine dump
// taken at the timeout: GoTestTimedOut's text). The hung goroutine's
// frames are read innermost first, the runtime's and the standard
// library's passed over: the first frame in module mod makes it the
// library's (frames of other modules inside it, a matcher the library
// calls, are the library's loop too: it passed them the input), a frame of
// the harness (its package path under harnessPkg, or a Fuzz function in a
// _test.go file) before any of the module's makes it the harness's when no
// other module's frame came first (else outside), and no frame of either
// is outside. No stack is unknown.
func JudgeHang(out []byte, mod, harnessPkg string) HangVerdict {
	_, frames := HangStack(out)
	if len(frames) == 0 {
		return HangVerdict{Verdict: HangUnknown, Why: "the replay timed out without a goroutine dump to judge"}
	}
	var passed []string
	for _, f := range frames {
		if stdFunc(f.Func) {
			continue
		}
		pkg := goPackage(f.Func)
		harness := harnessPkg != "" && (pkg == harnessPkg || strings.HasPrefix(pkg, harnessPkg+"/")) ||
			strings.Contains(f.Func, ".Fuzz") && strings.HasSuffix(strings.SplitN(f.File, ":", 2)[0], "_test.go")
		switch {
		case harness && len(passed) == 0:
			return HangVerdict{Verdict: HangHarness, Why: "the hung goroutine is in the harness's own code", Frame: f.Func, File: f.File}
		case harness:
			return HangVerdict{Verdict: HangOutside, Why: fmt.Sprintf("the hung goroutine is in %s, called by the harness, not by the module %s", passed[0], mod), Frame: f.Func, File: f.File}
		case pkg == mod || strings.HasPrefix(pkg, mod+"/"):
			why := fmt.Sprintf("the hung goroutine's innermost frame in the module is %s (%s)", f.Func, filepath.Base(f.File)) // the full path (the scratch copy's) is in File
			if len(passed) > 0 {
				why += fmt.Sprintf(", inside it %s", strings.Join(passed, " < "))
			}
			return HangVerdict{Verdict: HangLibrary, Why: why, Frame: f.Func, File: f.File}
		}
		passed = append(passed, f.Func)
	}
	return HangVerdict{Verdict: HangOutside, Why: fmt.Sprintf("no frame of the hung goroutine is in the module %s or the harness", mod)}
}

// ReplayHang replays a hang any engine found on a Go fuzz target through
// go test's binary of that target, g (ReplayGo, with the hang dump), and
// judges it by the hung goroutine's stack: libFuzzer's timeouts carry no
// goroutine dump (its -timeout ends the process from a signal handler),
// so only such a replay can say whose loop it is. input is a `go test fuzz
// v1` file (a raw libFuzzer or AFL++ input is converted first with
// GoInput); mod and harnessPkg are JudgeHang's. When the replay does not
// time out the verdict is HangUnknown and its Why says how it ended. The
// Crasher is the go replay's (its Stderr the hung goroutine's stack).
// Errors: ReplayGo's (the input does not parse, the target does not
// build).
func ReplayHang(ctx context.Context, g GoTarget, input []byte, timeout time.Duration, mod, harnessPkg string) (Crasher, HangVerdict, error) {
	c, err := ReplayGo(ctx, g, input, timeout)
	if err != nil {
		return Crasher{}, HangVerdict{}, err
	}
	if c.Outcome != TimedOut {
		v := HangVerdict{Verdict: HangUnknown, Why: fmt.Sprintf("replayed through go test's binary of %s for a stack, the input did not hang (outcome %s)", g.Func, c.Outcome)}
		if c.Note != "" {
			v.Why += "; " + c.Note
		}
		return c, v, nil
	}
	v := JudgeHang([]byte(c.Stderr), mod, harnessPkg)
	if c.Note != "" {
		v.Why += "; " + c.Note // confirmed only by wall time, or on a second replay
	}
	if strings.HasPrefix(c.Note, wallOnly) {
		// What the CPU could not tell, the dump's goroutine state does:
		// computing (a loop the machine starved) or waiting.
		block, _ := HangStack([]byte(c.Stderr))
		if m := goroutineHead.FindStringSubmatch(firstLine(block)); m != nil {
			if st := m[1]; computing(st) {
				v.Why += fmt.Sprintf("; its goroutine was %s at the dump: a loop starved of CPU, not a wait", st)
			} else {
				v.Why += fmt.Sprintf("; its goroutine was waiting (%s) at the dump: blocked, not a loop", st)
			}
		}
	}
	return c, v, nil
}

// A hang is confirmed by CPU time, not wall time alone. The per-input
// limit is wall time (libFuzzer's -timeout, go test's -test.timeout and
// the hang dump): at load 43 on 2 cores a jsonparser input ran out of its
// 10 s having had 1.1 CPU-seconds, and was reported as a hang. A replay
// that times out having used under half its limit in CPU was starved (or
// blocked: a sleep, a lock, a channel), not shown to spin: it is replayed
// once more with hangRetry times the wall time. One that then finishes is
// no hang; one that uses half the limit in CPU is a hang by CPU; one that
// times out again on little CPU is reported as a hang confirmed only by
// wall time, which its Crasher's Note says.
const hangRetry = 4

// computing reports a goroutine state of a traceback ("running",
// "runnable, locked to thread", "preempted") that is not a wait.
func computing(state string) bool {
	st, _, _ := strings.Cut(state, ",")
	return st == "running" || st == "runnable" || st == "preempted"
}

// wallOnly starts the Note of a hang confirmed only by wall time.
const wallOnly = "hang confirmed only by wall time: "

// starved reports whether a replay that ran out of its wall-time limit
// used under half of it in CPU.
func starved(cpu, limit time.Duration) bool { return cpu < limit/2 }

// confirmHang runs a replay (run(1)) and, when it times out starved, once
// more with hangRetry times the wall time (run(hangRetry)); limit is the
// first replay's wall time, its input's limit. It returns the replay that
// decides, with Note set when the first was starved. run's Crasher carries
// the CPU time its input used. Errors: run's, or ctx's when it ended
// during the retry.
func confirmHang(ctx context.Context, limit time.Duration, run func(scale int) (Crasher, error)) (Crasher, error) {
	c, err := run(1)
	if err != nil || c.Outcome != TimedOut || !starved(c.cpu, limit) {
		return c, err
	}
	first := c
	c, err = run(hangRetry)
	if err == nil {
		err = ctx.Err() // a retry the caller ended says nothing of the input
	}
	if err != nil {
		return Crasher{}, err
	}
	was := fmt.Sprintf("its replay ran out of its %s limit on %s of CPU", limit.Round(time.Millisecond), first.cpu.Round(time.Millisecond))
	more := hangRetry * limit
	switch {
	case c.Outcome != TimedOut:
		c.Note = fmt.Sprintf("not a hang: %s (starved or blocked), and given %s it ended (%s)", was, more, c.Outcome)
	case starved(c.cpu, limit):
		c.Note = fmt.Sprintf(wallOnly+"%s, and %s of CPU again in %s: blocked (a sleep, a lock, a channel) or starved by a loaded machine, not shown to spin",
			was, c.cpu.Round(time.Millisecond), more)
	default:
		c.Note = fmt.Sprintf("hang confirmed by CPU time on a second replay: %s (starved), then %s of CPU in %s", was, c.cpu.Round(time.Millisecond), more)
	}
	return c, nil
}
