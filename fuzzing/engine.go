package fuzzing

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/qafleet/fleetd/sandbox"
)

// Engine names, as qa_fuzz and the run record say them.
const (
	EngineBuiltin = "builtin"
	EngineGo      = "go"
	EngineAFL     = "aflpp"
	// EngineLibFuzzer is in libfuzzer.go.
)

// Target is a program that reads one input from a file: Argv holds {src}
// where the input's path goes (the target's compiler argv; AFL++ gets @@
// there). Every run goes through sandbox.Exec in Dir.
type Target struct {
	Argv        []string
	Dir         string        // working directory (the jail); the input file is written here
	Timeout     time.Duration // per run; default 2 s
	MemoryBytes uint64        // RLIMIT_AS per run; 0 = sandbox default
	Env         []string      // nil: sandbox default (scrubbed)
}

// Session bounds one fuzzing session and gives it its material.
type Session struct {
	Seeds    [][]byte      // the seed corpus (target.corpus)
	Corpus   *Corpus       // persistent interesting inputs; nil: none kept
	Duration time.Duration // wall-clock budget; default 20 s
	MaxExecs int           // 0: no limit but the duration
	Seed     uint64        // PRNG seed; 0: from the clock
	Blind    bool          // builtin: no dictionary (byte-level havoc and splicing only)
	// StopAtFirst ends the session at the first crash (or hang, with
	// StopAtHang): for time-to-first-crash measurements.
	StopAtFirst bool
	StopAtHang  bool
	MaxCrashers int // distinct crash states kept; default 8
}

// Crasher is one distinct failure a session found.
type Crasher struct {
	Input    []byte        `json:"-"`
	Outcome  string        `json:"outcome"` // crashed, timeout or resource
	State    string        `json:"crash_state"`
	ExitCode int           `json:"exit_code"`
	Signal   string        `json:"signal,omitempty"`
	Stderr   string        `json:"stderr_head,omitempty"` // the first 2 KiB
	At       time.Duration `json:"-"`                     // since the session started
	Execs    int           `json:"execs"`                 // runs before it, this one included
	// Raw is the input as the engine ran it when Input is another form of
	// it (libfuzzer: Input is the `go test fuzz v1` file, Raw the bytes).
	Raw []byte `json:"-"`
	// Note says how a hang was confirmed when its first replay was
	// starved (ran out of wall time on little CPU): by CPU time on a
	// replay given more wall time, or only by wall time ("hang confirmed
	// only by wall time: ..."); "" for a hang whose replay spun through
	// its limit, and for crashes.
	Note string `json:"note,omitempty"`
	// site is where the panic was raised (file:line), as the libfuzzer
	// harness prints it; "" for other engines and other failures.
	site string
	// cpu is the CPU time a replay's input used (its setup's subtracted
	// where the harness reports it): what confirmHang judges a timeout by.
	cpu time.Duration
}

// Tally is what a session did.
type Tally struct {
	Engine  string        `json:"engine"`
	Note    string        `json:"note,omitempty"`     // why this engine (a fallback), or what limited it
	Mode    string        `json:"mode,omitempty"`     // aflpp: instrumented+persistent, instrumented, non-instrumented or qemu
	ModeWhy string        `json:"mode_why,omitempty"` // aflpp: why Mode ran (what the build offered, or a fallback's cause)
	Execs   int           `json:"execs"`
	Elapsed time.Duration `json:"-"`
	// CPU is the processor time the fuzzing itself used (user+system, the
	// target's processes included; not the build or the corpus merge; for
	// the built-in engine its own process's share too): a rate per
	// CPU-second compares engines on a loaded machine. 0 = not measured
	// (the go engine, whose process also builds the test).
	CPU         time.Duration `json:"-"`
	Crashers    []Crasher     `json:"crashers"`
	Timeouts    int           `json:"timeouts"`
	NewInputs   int           `json:"new_inputs"`  // interesting inputs added to the persistent corpus
	CorpusSize  int           `json:"corpus_size"` // inputs mutated from at the end
	DictEntries int           `json:"dict_entries"`
	FirstCrash  time.Duration `json:"-"` // 0: none
	// Coverage-guided engines' statistics (libfuzzer): inputs per second,
	// edges covered, coverage features (comparison operands among them),
	// and the inputs the session started from (the merged kept corpus,
	// other engines' inputs and the seeds).
	ExecsPerSec int `json:"execs_per_sec,omitempty"`
	Coverage    int `json:"coverage,omitempty"`
	Features    int `json:"features,omitempty"`
	StartedFrom int `json:"started_from,omitempty"`
	// InitialCoverage is the edges the starting inputs covered (libFuzzer's
	// INITED line, the first round's): Coverage above it is what fuzzing
	// found past the seeds and the kept corpus.
	InitialCoverage int `json:"initial_coverage,omitempty"`
	// Pruned is how many staged inputs a prune of the kept corpus dropped
	// (they added no coverage); 0 when the session did not prune.
	Pruned int `json:"pruned,omitempty"`
}

// runInput writes input to the target's input file and runs the target.
func runInput(ctx context.Context, t Target, input []byte) (*sandbox.ExecResult, error) {
	path := filepath.Join(t.Dir, "fuzz-input")
	if err := os.WriteFile(path, input, 0o600); err != nil {
		return nil, fmt.Errorf("fuzz input: %w", err)
	}
	argv := make([]string, len(t.Argv))
	for i, a := range t.Argv {
		argv[i] = strings.ReplaceAll(a, "{src}", path)
	}
	timeout := t.Timeout
	if timeout <= 0 {
		timeout = 2 * time.Second
	}
	return sandbox.Exec(ctx, sandbox.ExecSpec{Argv: argv, Dir: t.Dir, Timeout: timeout, MemoryBytes: t.MemoryBytes, Env: t.Env, OutputCap: 256 << 10})
}

// Describe runs the target once on input and returns its outcome and, for
// a failure, its state: what qa_fuzz uses to describe another engine's
// crasher. A hang's state is "hang: " and the input's Shape.
func Describe(ctx context.Context, t Target, input []byte) (Crasher, error) {
	res, err := runInput(ctx, t, input)
	if err != nil {
		return Crasher{}, err
	}
	return describe(res, input), nil
}

func describe(res *sandbox.ExecResult, input []byte) Crasher {
	c := Crasher{Input: input, Outcome: Classify(res), ExitCode: res.ExitCode, Signal: res.Signal}
	switch c.Outcome {
	case TimedOut:
		c.State = "hang: " + Shape(string(input))
	case Crashed, Resource:
		st := ParseCrash(res.Stderr)
		if st.IsZero() {
			st = FallbackState(res.Signal, res.ExitCode)
		}
		c.State = st.String()
	}
	head := res.Stderr[:min(len(res.Stderr), 2048)]
	c.Stderr, _ = sandbox.Text(head, 2048)
	return c
}

// signature is an input's behaviour, what "interesting" means without
// coverage: the outcome, exit status, signal and the first stderr line
// with its literals masked (a new diagnostic is a new path through the
// target's checks).
func signature(res *sandbox.ExecResult, outcome string) string {
	first, _, _ := strings.Cut(strings.TrimSpace(string(res.Stderr[:min(len(res.Stderr), 512)])), "\n")
	first = locRE.ReplaceAllString(first, "")
	return fmt.Sprintf("%s|%d|%s|%s", outcome, res.ExitCode, res.Signal, mask(first))
}

// locRE strips a diagnostic's "file:line:col:" prefix: the message, not the
// position, is the behaviour.
var locRE = regexp.MustCompile(`^\S*?:\d+(?::\d+)?:\s*`)

// RunBuiltin runs a session of the built-in engine: seeds and the
// persistent corpus are run first (each new behaviour recorded), then
// mutants of the growing corpus until the duration or MaxExecs. Each
// distinct crash state (and the first hang) becomes a Crasher; interesting
// inputs are added to s.Corpus as they are found, so a cancelled session
// keeps what it learned. Errors are infrastructure failures (the target
// cannot be started, the corpus cannot be written); ctx's cancellation
// ends the session early without error.
func RunBuiltin(ctx context.Context, t Target, s Session) (*Tally, error) {
	if len(t.Argv) == 0 {
		return nil, errors.New("builtin fuzz: empty argv")
	}
	ss := newSession(EngineBuiltin, s)
	ss.oneHang, ss.keepCap = true, ss.maxCrashers+1
	return runSession(ctx, &builtinSession{t: t}, ss)
}

// builtinSession is the built-in engine's part of a session.
type builtinSession struct {
	t      Target
	pool   [][]byte // the inputs mutated from
	queued [][]byte // the persistent corpus's inputs, run after the seeds
	mut    *Mutator
	rng    *rand.Rand
	seen   map[string]bool // behaviour signatures met in this session
}

// stage takes the seeds (those small enough to mutate) and the persistent
// corpus's queue.
func (b *builtinSession) stage(_ context.Context, s *session) ([][]byte, error) {
	b.pool = make([][]byte, 0, len(s.Seeds))
	for _, sd := range s.Seeds {
		if len(sd) <= maxInput {
			b.pool = append(b.pool, sd)
		}
	}
	if s.Corpus != nil {
		var err error
		if b.queued, err = s.Corpus.Load(maxQueue); err != nil {
			return nil, err
		}
	}
	return s.Seeds, nil
}

// merge: without coverage there is nothing to merge by.
func (b *builtinSession) merge(context.Context, *session) error { return nil }

// dictionary harvests the seeds' tokens for the mutator (none when blind).
func (b *builtinSession) dictionary(_ context.Context, s *session, sample [][]byte) error {
	seed := s.Seed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	b.rng = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var dict *Dictionary
	if !s.Blind {
		dict = Harvest(sample)
		s.rep.DictEntries = dict.Len()
	}
	b.mut = NewMutator(b.rng, dict)
	return nil
}

// round is the whole session: the seeds and queued inputs, then mutants
// until the time, MaxExecs or the crash states run out.
func (b *builtinSession) round(ctx context.Context, s *session, _ int) (bool, error) {
	rep := s.rep
	b.seen = map[string]bool{}
	start := time.Now()
	selfStart := selfCPU()
	deadline := start.Add(s.Duration)
	done := func() bool {
		return ctx.Err() != nil || time.Now().After(deadline) || s.MaxExecs > 0 && rep.Execs >= s.MaxExecs ||
			s.StopAtFirst && rep.FirstCrash > 0 || s.crashStates() >= s.maxCrashers && s.states[TimedOut]
	}
	// Seeds and queued inputs run first; those that fail are not mutated
	// (their mutants would mostly fail the same way, a hang at full cost).
	var ok [][]byte
	for _, in := range append(append([][]byte(nil), b.pool...), b.queued...) {
		if done() {
			break
		}
		n := len(rep.Crashers) + rep.Timeouts
		if err := b.handle(ctx, s, start, in, true); err != nil {
			return false, err
		}
		if len(rep.Crashers)+rep.Timeouts == n {
			ok = append(ok, in)
		}
	}
	b.pool = ok
	if len(b.pool) == 0 {
		b.pool = [][]byte{{}}
	}
	for !done() {
		base := b.pool[b.rng.IntN(len(b.pool))]
		if err := b.handle(ctx, s, start, b.mut.Mutate(base, b.pool), false); err != nil {
			return false, err
		}
	}
	rep.Elapsed = time.Since(start)
	rep.CPU += selfCPU() - selfStart // the engine's own share: mutating, writing, fork and exec
	rep.CorpusSize = len(b.pool)
	return false, nil
}

// handle runs one input: a failure of a new state is a crasher (not
// mutated further), a new behaviour joins the pool and the persistent
// corpus.
func (b *builtinSession) handle(ctx context.Context, s *session, start time.Time, input []byte, isSeed bool) error {
	rep := s.rep
	res, err := runInput(ctx, b.t, input)
	if err != nil {
		return err
	}
	if ctx.Err() != nil {
		return nil // cancelled mid-run: not a hang of the target
	}
	rep.Execs++
	rep.CPU += res.CPUTime
	c := describe(res, input)
	sig := signature(res, c.Outcome)
	if c.Outcome == TimedOut {
		rep.Timeouts++
	}
	if Finding(c.Outcome) {
		if !s.known(c) {
			c.At, c.Execs = time.Since(start), rep.Execs
			if _, err := s.record(c, input); err != nil {
				return err
			}
		}
		return nil // crashers are not mutated further
	}
	if !b.seen[sig] {
		b.seen[sig] = true
		if !isSeed {
			b.pool = append(b.pool, input)
		}
		if s.Corpus != nil && !s.Corpus.Known(sig) {
			added, err := s.Corpus.Add(input, sig)
			if err != nil {
				return err
			}
			if added {
				rep.NewInputs++
			}
		}
	}
	return nil
}

// keep: the interesting inputs joined the persistent corpus as they were
// found, so a cancelled session keeps them too.
func (b *builtinSession) keep(context.Context, *session) error { return nil }

// selfCPU is this process's user+system time so far. The built-in engine
// adds its delta over a session to its targets' CPU: forking and feeding a
// process per input is the engine's cost too. Other work in the process
// during the session counts as well, so the figure is an upper bound.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
