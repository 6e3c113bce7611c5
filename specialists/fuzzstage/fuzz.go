package fuzzstage

import (
	"encoding/base64"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/fuzzing"
	"github.com/qafleet/fleetd/specialists/replay"
)

// Fuzz limits.
const (
	fuzzEmptied       = 10 // bracket pairs emptied per corpus program
	fuzzConditions    = 4  // conditions made constant per corpus program
	fuzzCrashes       = 3  // distinct crash states minimized and reported
	fuzzCrashMinimize = 40 // compile calls per crash minimization
	fuzzHangMinimize  = 30 // compile calls per hang minimization (each at a shortened timeout)
	fuzzHangTimeouts  = 15 // timeouts per hang minimization
	fuzzMaxTimeouts   = 5  // timeouts before compile fuzzing stops (each costs the compile timeout)
	fuzzToolFailures  = 3  // consecutive qa_compile failures before giving up
)

// Hang minimization timeouts: each ddmin step runs with a timeout well
// above the slowest normal compile seen, but far below the configured one.
const (
	hangStepFactor = 20   // times the slowest clean compile
	hangStepMinMS  = 1000 // never below this
)

// tinySeeds are generic seeds every compiler should refuse or accept cleanly.
var tinySeeds = []string{"", "x", "{}", "()", "1", `"`, "a = 1;"}

// Run mutation-fuzzes the compiler and sends malformed bodies to the call
// endpoint; see the package doc.
func Run(p *replay.Play, corpus []string) {
	fuzzCallGrammar(p) // grammar.go
	// The Go fuzz target runs after the compiler's cheap deterministic
	// stage (which finds shallow crashes and hangs in seconds) and before
	// its engine and havoc stages, which run until the cap; without a
	// compiler stage it runs on its own.
	ranRepo := false
	repo := func() {
		if !ranRepo {
			ranRepo = true
			fuzzRepo(p)
		}
	}
	fuzzCompiler(p, corpus, repo)
	repo()
	fuzzHarness(p)   // fuzz_engine.go: a C/C++ harness without a compiler
	fuzzGenerated(p) // fuzz_generated.go: a Go repository without a fuzz target
}

// fuzzer is one compile-fuzzing session.
type fuzzer struct {
	p        *replay.Play
	seen     map[string]bool
	states   []string // crash states, in order found
	hang     bool
	timeouts int
	failures int // consecutive tool failures
	tries    int
	stopped  string
	known    []string // minimized reproducers: a candidate holding one is not new
	slowMS   int      // the slowest compile that finished (compiled or rejected)
}

func fuzzCompiler(p *replay.Play, corpus []string, afterDeterministic func()) {
	switch {
	case len(p.Target().Compiler) == 0:
		p.Skip("target.compiler not configured: compiler fuzzing skipped")
		return
	case !p.Can("qa_compile"):
		p.Skip("qa_compile unavailable: compiler fuzzing skipped")
		return
	}
	f := &fuzzer{p: p, seen: map[string]bool{}}
	if len(corpus) == 0 {
		p.Skip("no corpus (target.corpus): fuzzing from the generic tiny seeds only")
	}
	seeds := append(append([]string(nil), corpus...), tinySeeds...)
	for _, s := range seeds {
		f.try(s, "seed")
	}
	// Deterministic stage: one structure-aware mutation at a time, at every
	// bracket pair and condition of every corpus program.
	for _, s := range corpus {
		for _, v := range emptiedVariants(s, fuzzEmptied) {
			f.try(v, "empty-brackets")
		}
	}
	for _, s := range corpus {
		for _, v := range conditionVariants(s, fuzzConditions) {
			f.try(v, "condition-true")
		}
	}
	for _, s := range corpus {
		for _, v := range numberVariants(s, "0", "9223372036854775808") {
			f.try(v, "boundary-number")
		}
	}
	afterDeterministic()
	// Engine stage: bounded sessions of a fuzz engine inside the tool
	// (thousands of inputs each); its crashers are replayed here.
	f.engine()
	// Havoc stage: random stacked mutations until the cap.
	m := fuzzing.NewTextMutator(p.Rand(), corpus, textAnalyses)
	for i := 0; f.live() && i < 20*p.Cap(); i++ {
		seed := seeds[p.Rand().IntN(len(seeds))]
		if len(corpus) > 0 && p.Rand().IntN(4) > 0 {
			seed = corpus[p.Rand().IntN(len(corpus))]
		}
		mut, ops := m.MutateText(seed)
		f.try(mut, strings.Join(ops, "+"))
	}
	p.Notef("compiled %d inputs: %d distinct crash state(s), %d timeout(s)", f.tries, len(f.states), f.timeouts)
	if f.stopped != "" {
		p.Notef("compile fuzzing stopped: %s", f.stopped)
	}
}

// sourceArgs are qa_compile's arguments for src: source when it is UTF-8
// text, else source_base64, so a binary input reaches the compiler (and the
// posted repro) byte for byte instead of with its invalid bytes replaced.
func sourceArgs(src string) map[string]any {
	if utf8.ValidString(src) {
		return map[string]any{"source": src}
	}
	return map[string]any{"source_base64": base64.StdEncoding.EncodeToString([]byte(src))}
}

// live reports whether fuzzing may go on.
func (f *fuzzer) live() bool { return f.stopped == "" && f.p.Room(1) }

// compile runs one qa_compile (timeoutMS 0: the configured timeout) and
// tracks tool failures and the slowest clean compile.
func (f *fuzzer) compile(src string, timeoutMS int) fleet.Result {
	args := sourceArgs(src)
	if timeoutMS > 0 {
		args["timeout_ms"] = timeoutMS
	}
	r := f.p.Call("qa_compile", args)
	f.tries++
	if r.IsOK() {
		f.failures = 0
		if o := replay.Str(r, "outcome"); o == "compiled" || o == "rejected" {
			f.slowMS = max(f.slowMS, replay.Int(r, "duration_ms"))
		}
		return r
	}
	if f.failures++; f.failures >= fuzzToolFailures || !f.p.Can("qa_compile") {
		f.stopped = "qa_compile failed " + fmt.Sprint(f.failures) + " times in a row: " + replay.Clip(r.Err(), 120)
	}
	return r
}

// try compiles src once (never the same input twice) and handles a crash,
// a resource exhaustion or a hang; origin names the mutation that made it.
func (f *fuzzer) try(src, origin string) {
	if f.seen[src] || !f.live() || len(src) > fuzzing.MaxTextMutant || f.holdsKnown(src) {
		return
	}
	f.seen[src] = true
	r := f.compile(src, 0)
	switch replay.Str(r, "outcome") {
	case "crashed", "resource":
		f.crash(src, origin, r)
	case "timeout":
		f.timeouts++
		if !f.hang {
			f.hang = true
			f.hangFound(src, origin, r)
		}
		if f.timeouts >= fuzzMaxTimeouts {
			f.stopped = fmt.Sprintf("%d compile timeouts", f.timeouts)
		}
	}
}

// holdsKnown reports whether src contains a reproducer already found: it
// would most likely fail the same way, and a hang costs a whole timeout.
func (f *fuzzer) holdsKnown(src string) bool {
	flat := strings.Join(strings.Fields(src), " ")
	for _, k := range f.known {
		if strings.Contains(flat, k) {
			return true
		}
	}
	return false
}

// remember records a minimized reproducer for holdsKnown.
func (f *fuzzer) remember(small string) {
	if k := strings.Join(strings.Fields(small), " "); k != "" {
		f.known = append(f.known, k)
	}
}

// crashState is a result's crash state: qa_compile's crash_state (the
// message with literals masked and the target's top frames), else, from a
// tool that has none, the first crash line of stderr, the signal or the
// exit status.
func crashState(r fleet.Result) string {
	if s := replay.Str(r, "crash_state"); s != "" {
		return s
	}
	return crashSignature(r)
}

// crash minimizes, replays and reports a crash (or a resource exhaustion)
// with a new crash state: one finding per state, whatever the input.
func (f *fuzzer) crash(src, origin string, r fleet.Result) {
	kind, state := replay.Str(r, "outcome"), crashState(r)
	if slices.Contains(f.states, state) {
		return
	}
	f.states = append(f.states, state)
	if len(f.states) > fuzzCrashes {
		return
	}
	small, tests := f.minimize(src, fuzzCrashMinimize, 2, 0, func(res fleet.Result) bool {
		return replay.Str(res, "outcome") == kind && crashState(res) == state
	})
	f.remember(small)
	// The quality bar: replay the repro exactly as posted before saying it
	// reproduces; one that does not is posted at most low, flaky=true.
	rep := f.compile(small, 0)
	ok := replay.Str(rep, "outcome") == kind && crashState(rep) == state
	if ok {
		r = rep
	}
	sev, what, expected := fleet.SeverityHigh, "Compiler crash", "a clean error"
	if kind == "resource" {
		sev, what, expected = fleet.SeverityMedium, "Compiler resource exhaustion (out of memory)", "a clean error within the memory limit"
	}
	flaky := ""
	if !ok {
		sev, flaky = fleet.SeverityLow, fmt.Sprintf(" Flaky: the minimized input did not fail the same way when replayed (%s).", replay.Str(rep, "outcome"))
	}
	f.p.File(sev, fleet.SurfaceCompiler,
		fmt.Sprintf("%s: %s, on a %d-byte input (minimized with %d compiles from a %d-byte %s mutant of a seed), exit %d%s, where %s was expected.%s stderr: %s",
			what, replay.Quote(state, 240), len(small), tests, len(src), origin, replay.Int(r, "exit_code"), replay.SignalText(r), expected, flaky, replay.Quote(stderrOf(r), 400)),
		"qa_compile", sourceArgs(small), replay.StateArgs{State: kind + ": " + state, Flaky: !ok})
}

// stderrOf is the most telling part of a result's stderr: the head (the
// panic message and top frames) when the tool kept one, else the tail.
func stderrOf(r fleet.Result) string {
	if h := replay.Str(r, "stderr_head"); h != "" {
		return h
	}
	return replay.Str(r, "stderr_tail")
}

// hangFound minimizes, replays and reports the first hang. Each ddmin
// step runs with a timeout well above the slowest clean compile seen but
// below the configured one, so minimizing costs seconds, not minutes; the
// minimized input is then replayed at the configured timeout.
func (f *fuzzer) hangFound(src, origin string, r fleet.Result) {
	full := replay.Int(r, "timeout_ms")
	if full <= 0 {
		full = replay.Int(r, "duration_ms")
	}
	step := min(max(hangStepFactor*f.slowMS, hangStepMinMS), full/2)
	if step <= 0 {
		step = 0 // an old tool without timeout_ms: the configured timeout
	}
	small, tests := f.minimize(src, fuzzHangMinimize, fuzzHangTimeouts, step, func(res fleet.Result) bool {
		return replay.Str(res, "outcome") == "timeout"
	})
	f.remember(small)
	rep := f.compile(small, 0)
	ok := replay.Str(rep, "outcome") == "timeout"
	if !ok && small != src {
		// Shortened steps can keep a candidate that is only slow: fall back
		// to the input that hung at the configured timeout.
		if rep2 := f.compile(src, 0); replay.Str(rep2, "outcome") == "timeout" {
			small, rep, ok = src, rep2, true
		}
	}
	state := replay.Str(rep, "crash_state")
	if state == "" || !ok {
		state = "hang: " + replay.OneLine(small)
	}
	sev, flaky := fleet.SeverityMedium, ""
	if !ok {
		sev, flaky = fleet.SeverityLow, " Flaky: it did not time out again when replayed."
	}
	f.p.File(sev, fleet.SurfaceCompiler,
		fmt.Sprintf("Compiler hang: a %d-byte input (minimized with %d compiles at a %d ms timeout each from a %d-byte %s mutant of a seed) does not finish within the compile timeout (killed after %d ms%s), where a result or a clean error was expected.%s Input: %s",
			len(small), tests, step, len(src), origin, replay.Int(rep, "duration_ms"), cpuText(rep), flaky, replay.Quote(small, 200)),
		"qa_compile", sourceArgs(small), replay.StateArgs{State: "timeout: " + state, Flaky: !ok})
}

// cpuText notes a hang ended by the CPU limit rather than the timeout.
func cpuText(r fleet.Result) string {
	if replay.Flag(r, "cpu_limited") {
		return ", by the CPU time limit"
	}
	return ""
}

// minimize shrinks src by delta debugging, each test one qa_compile (at
// timeoutMS, 0 for the configured timeout) that keeps failing the same
// way. It stops early near the cap, and after maxTimeouts candidates ran
// into the timeout.
func (f *fuzzer) minimize(src string, budget, maxTimeouts, timeoutMS int, same func(fleet.Result) bool) (string, int) {
	timeouts, compiles := 0, 0
	small, _ := Minimize(src, budget, func(c string) bool {
		if !f.p.Room(2) || timeouts >= maxTimeouts || f.stopped != "" {
			return false
		}
		f.seen[c] = true
		compiles++
		r := f.compile(c, timeoutMS)
		if replay.Str(r, "outcome") == "timeout" {
			timeouts++
		}
		return same(r)
	})
	return small, compiles
}

var (
	crashLine = regexp.MustCompile(`(?m)^(?:panic: .*|fatal error: .*|thread '.*' panicked at.*|.*Segmentation fault.*|.*AddressSanitizer: \S+|.*[Aa]ssertion .*failed.*|.*internal compiler error.*|Exception in thread .*|Traceback \(most recent call last\):|.*stack overflow.*)$`)
)

// crashSignature names a crash by its first crash line with numbers and
// addresses blanked, or by its exit status when stderr has none: the
// fallback for a qa_compile without crash_state.
func crashSignature(r fleet.Result) string {
	if l := crashLine.FindString(replay.Str(r, "stderr_tail")); l != "" {
		return replay.Clip(replay.SigNoise.ReplaceAllString(strings.TrimSpace(l), "N"), 120)
	}
	if s := replay.Str(r, "signal"); s != "" {
		return "signal " + s
	}
	return fmt.Sprintf("exit %d", replay.Int(r, "exit_code"))
}
