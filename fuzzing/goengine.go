package fuzzing

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/qafleet/fleetd/sandbox"
)

// GoTarget is a Go native fuzz target in a module checked out at Dir (a
// copy the engine may write to: Go writes crashers under the package's
// testdata/fuzz/<Func>/).
type GoTarget struct {
	Dir         string   // the module root
	Package     string   // the package directory relative to Dir, e.g. "./compiler"
	Func        string   // the fuzz target, e.g. "FuzzCompile"
	Go          string   // the go command's path
	Env         []string // complete environment: PATH, HOME, GOCACHE, GOMODCACHE, GOPROXY, GOMEMLIMIT, ...
	CacheDir    string   // -test.fuzzcachedir: the coverage-guided engine's own corpus, kept across sessions
	MemoryBytes uint64   // RLIMIT_AS per process
	Parallel    int      // fuzzing workers; default 1
	BuildTime   time.Duration
}

var goFuncRE = regexp.MustCompile(`^Fuzz[A-Za-z0-9_]*$`)

func (g GoTarget) check() error {
	if !goFuncRE.MatchString(g.Func) {
		return fmt.Errorf("go fuzz: %q is not a fuzz target name", g.Func)
	}
	if g.Go == "" || g.Dir == "" {
		return errors.New("go fuzz: no go command or module directory")
	}
	if p := filepath.Clean(g.Package); filepath.IsAbs(p) || strings.HasPrefix(p, "..") {
		return fmt.Errorf("go fuzz: package %q must be inside the repository", g.Package)
	}
	return nil
}

func (g GoTarget) pkgDir() string { return filepath.Join(g.Dir, filepath.Clean(g.Package)) }

// build compiles the package's test binary with the fuzzing
// instrumentation (go test -c -fuzz), so a session's time is spent
// fuzzing, not building, and a replay runs the same binary.
func (g GoTarget) build(ctx context.Context) (string, error) {
	bin := filepath.Join(g.Dir, ".fleetd-fuzz.test")
	timeout := g.BuildTime
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	res, err := sandbox.Exec(ctx, sandbox.ExecSpec{
		Argv: []string{g.Go, "test", "-c", "-fuzz=^" + g.Func + "$", "-o", bin, "./" + filepath.ToSlash(filepath.Clean(g.Package))},
		Dir:  g.Dir, Env: g.Env, Timeout: timeout, MemoryBytes: g.memory(), CPUSeconds: uint64(timeout.Seconds()) * 2, FileBytes: 1 << 30,
	})
	if err != nil {
		return "", fmt.Errorf("go fuzz build: %w", err)
	}
	if res.ExitCode != 0 || res.TimedOut {
		tail, _ := sandbox.Text(res.Stderr, 600)
		return "", fmt.Errorf("go fuzz build: go test -c exited %d (timed out: %v): %s", res.ExitCode, res.TimedOut, tail)
	}
	return bin, nil
}

func (g GoTarget) memory() uint64 {
	if g.MemoryBytes == 0 {
		return 8 << 30 // the go command and fuzz workers reserve address space generously
	}
	return g.MemoryBytes
}

var (
	goFailingInput = regexp.MustCompile(`Failing input written to (testdata/fuzz/[^\s]+)`)
	goProgress     = regexp.MustCompile(`fuzz: elapsed: (\d+)s, execs: (\d+)`)
	goMinimizing   = regexp.MustCompile(`fuzz: elapsed: (\d+)s, minimizing`)
)

// RunGo runs one session of Go's coverage-guided fuzzer on the target for
// d: it builds the instrumented test binary, runs it with -test.fuzz (its
// own corpus in CacheDir, kept across sessions), and turns the crasher Go
// writes (Go stops at the first and minimizes it) into a Crasher whose
// Input is the `go test fuzz v1` file. Errors are infrastructure failures:
// the package does not build, the binary cannot run.
func RunGo(ctx context.Context, g GoTarget, d time.Duration) (*Tally, error) {
	if err := g.check(); err != nil {
		return nil, err
	}
	bin, err := g.build(ctx)
	if err != nil {
		return nil, err
	}
	if d <= 0 {
		d = 20 * time.Second
	}
	par := max(g.Parallel, 1)
	dir := g.pkgDir()
	before := listDir(filepath.Join(dir, "testdata", "fuzz", g.Func))
	// Minimization is bounded so that a session ends near its budget.
	minimize := min(30*time.Second, max(d/2, 5*time.Second))
	args := []string{bin, "-test.run=^$", "-test.fuzz=^" + g.Func + "$", "-test.fuzztime=" + d.String(),
		"-test.parallel=" + strconv.Itoa(par), "-test.fuzzminimizetime=" + minimize.String()}
	if g.CacheDir != "" {
		if err := os.MkdirAll(g.CacheDir, 0o700); err != nil {
			return nil, fmt.Errorf("go fuzz: %w", err)
		}
		args = append(args, "-test.fuzzcachedir="+g.CacheDir)
	}
	start := time.Now()
	res, err := sandbox.Exec(ctx, sandbox.ExecSpec{Argv: args, Dir: dir, Env: g.Env, Timeout: d + minimize + 30*time.Second,
		MemoryBytes: g.memory(), CPUSeconds: uint64((d+minimize).Seconds()+30) * uint64(par+1), OutputCap: 1 << 20, FileBytes: 1 << 30})
	if err != nil {
		return nil, fmt.Errorf("go fuzz: %w", err)
	}
	rep := &Tally{Engine: EngineGo, Elapsed: time.Since(start)}
	out := append(append([]byte(nil), res.Stdout...), res.Stderr...)
	for _, m := range goProgress.FindAllSubmatch(out, -1) {
		rep.Execs, _ = strconv.Atoi(string(m[2]))
	}
	var found []byte
	if m := goFailingInput.FindSubmatch(out); m != nil {
		if b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(string(m[1])))); err == nil {
			found = b
		}
	}
	if found == nil { // the line can be lost when output is cut: look for a new file
		for name := range listDir(filepath.Join(dir, "testdata", "fuzz", g.Func)) {
			if !before[name] {
				found, _ = os.ReadFile(filepath.Join(dir, "testdata", "fuzz", g.Func, name))
				break
			}
		}
	}
	switch {
	case found != nil:
		c := Crasher{Input: found, Outcome: Crashed, ExitCode: res.ExitCode, Signal: res.Signal}
		st := ParseCrash(out)
		if st.IsZero() {
			st = goFailureState(out)
		}
		if bytes.Contains(out, []byte("hung or terminated unexpectedly")) {
			c.Outcome = TimedOut // Go reports a worker stuck 10 s this way
			if oomSignatures.Match(out) {
				c.Outcome = Resource
			}
		}
		c.State = st.String()
		c.Stderr, _ = sandbox.Text(out[:min(len(out), 2048)], 2048)
		c.At = rep.Elapsed
		if m := goMinimizing.FindSubmatch(out); m != nil {
			s, _ := strconv.Atoi(string(m[1]))
			c.At = time.Duration(s) * time.Second
		} else if bytes.Contains(out, []byte("failure while testing seed corpus")) {
			c.At = 0
		}
		c.Execs = rep.Execs
		rep.Crashers = append(rep.Crashers, c)
		rep.FirstCrash = max(c.At, time.Millisecond)
	case res.ExitCode != 0 && !res.TimedOut:
		tail, _ := sandbox.Text(out, 600)
		return rep, fmt.Errorf("go fuzz: the test binary exited %d without a crasher: %s", res.ExitCode, tail)
	}
	return rep, nil
}

// ReplayGo runs the target's test binary on one `go test fuzz v1` input
// (written to testdata/fuzz/<Func>/fleetd-replay) and describes the
// outcome: Compiled when the target passes, Crashed for a panic or a test
// failure, TimedOut (confirmed by CPU time: a replay starved of CPU is run
// again with more wall time, and the Crasher's Note says how it was
// confirmed; see confirmHang), Resource. The input is checked with
// ParseGoCorpus first; a malformed one is an error naming what was wrong.
func ReplayGo(ctx context.Context, g GoTarget, input []byte, timeout time.Duration) (Crasher, error) {
	if err := g.check(); err != nil {
		return Crasher{}, err
	}
	if _, err := ParseGoCorpus(input); err != nil {
		return Crasher{}, err
	}
	if err := writeHangDump(g.pkgDir()); err != nil {
		return Crasher{}, err
	}
	bin, err := g.build(ctx)
	if err != nil {
		return Crasher{}, err
	}
	dir := filepath.Join(g.pkgDir(), "testdata", "fuzz", g.Func)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return Crasher{}, fmt.Errorf("go fuzz replay: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "fleetd-replay"), input, 0o600); err != nil {
		return Crasher{}, fmt.Errorf("go fuzz replay: %w", err)
	}
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	// A timeout is confirmed by CPU time (confirmHang): the limit is the
	// wall time the hang dump gives the input.
	return confirmHang(ctx, hangDumpAt(testTimeout(timeout)), func(scale int) (Crasher, error) {
		return g.replayOnce(ctx, bin, input, time.Duration(scale)*timeout)
	})
}

// replayOnce runs the test binary bin once on the input ReplayGo wrote.
func (g GoTarget) replayOnce(ctx context.Context, bin string, input []byte, timeout time.Duration) (Crasher, error) {
	// The hang dump (hang.go) ends a hang before go test's timeout, and
	// that before the sandbox's, with every goroutine's stack: the stack
	// the hang is judged by.
	tt := testTimeout(timeout)
	env := g.Env
	if env != nil { // nil is the sandbox's default environment, kept as it is
		env = append(slices.Clip(env), hangDumpEnv+"="+hangDumpAt(tt).String())
	}
	res, err := sandbox.Exec(ctx, sandbox.ExecSpec{Argv: []string{bin, "-test.run=^" + g.Func + "/fleetd-replay$", "-test.v", "-test.timeout=" + tt.String()},
		Dir: g.pkgDir(), Env: env, Timeout: timeout, MemoryBytes: g.memory(), OutputCap: 1 << 20, FileBytes: 1 << 30})
	if err != nil {
		return Crasher{}, fmt.Errorf("go fuzz replay: %w", err)
	}
	out := append(append([]byte(nil), res.Stdout...), res.Stderr...)
	c := Crasher{Input: input, ExitCode: res.ExitCode, Signal: res.Signal, cpu: res.CPUTime}
	c.Outcome = Classify(&sandbox.ExecResult{ExitCode: res.ExitCode, Signal: res.Signal, TimedOut: res.TimedOut, CPULimited: res.CPULimited, Stderr: out})
	if c.Outcome == Rejected && bytes.Contains(out, []byte("--- FAIL")) {
		c.Outcome = Crashed // the target reported a failure (t.Error, t.Fatal)
	}
	if c.Outcome == Crashed || c.Outcome == Resource {
		st := ParseCrash(out)
		if st.IsZero() {
			st = goFailureState(out)
		}
		c.State = st.String()
	}
	hung, stack := GoTestTimedOut(out)
	if hung {
		c.Outcome = TimedOut
	}
	if c.Outcome == TimedOut {
		c.State = HangState(input)
	}
	c.Stderr, _ = sandbox.Text(out[:min(len(out), 2048)], 2048)
	if stack != "" {
		// The hung goroutine's stack, not the head of a dump whose first
		// goroutine is the test alarm's.
		c.Stderr, _ = sandbox.Text([]byte(stack[:min(len(stack), 4096)]), 4096)
	}
	return c, nil
}

// testTimeout is the -test.timeout of a replay bounded by timeout: a
// quarter of it (at most 5 s) earlier, so go test prints its goroutine
// dump before the sandbox kills the process.
func testTimeout(timeout time.Duration) time.Duration {
	return max(timeout-min(timeout/4, 5*time.Second), 500*time.Millisecond)
}

var goFailLine = regexp.MustCompile(`(?m)^\s+\S+_test\.go:\d+: (.*)$`)

// goFailureState is the state of a Go test failure that is not a panic:
// the first t.Error/t.Fatal message, masked.
func goFailureState(out []byte) State {
	if m := goFailLine.FindSubmatch(out); m != nil {
		return State{Kind: "go", Message: "test failure: " + mask(string(m[1]))}
	}
	return State{Kind: "go", Message: "test failure"}
}

func listDir(dir string) map[string]bool {
	out := map[string]bool{}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		out[e.Name()] = true
	}
	return out
}
