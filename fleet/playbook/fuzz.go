package playbook

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/qafleet/fleetd/fleet"
)

// Fuzz limits.
const (
	fuzzEmptied       = 10 // bracket pairs emptied per corpus program
	fuzzConditions    = 4  // conditions made constant per corpus program
	fuzzCrashes       = 3  // distinct crash signatures minimized and reported
	fuzzCrashMinimize = 40 // compile calls per crash minimization
	fuzzHangMinimize  = 12 // compile calls per hang minimization (each hang costs a timeout)
	fuzzMaxTimeouts   = 5  // timeouts before compile fuzzing stops (each costs the compile timeout)
	fuzzToolFailures  = 3  // consecutive qa_compile failures before giving up
)

// tinySeeds are generic seeds every compiler should refuse or accept cleanly.
var tinySeeds = []string{"", "x", "{}", "()", "1", `"`, "a = 1;"}

// fuzz mutation-fuzzes the compiler and sends malformed bodies to the call
// endpoint; see the package doc.
func fuzz(p *probe) {
	fuzzCallGrammar(p) // grammar.go
	fuzzCompiler(p)
}

// fuzzer is one compile-fuzzing session.
type fuzzer struct {
	p        *probe
	seen     map[string]bool
	crashes  []string // signatures, in order found
	hang     bool
	timeouts int
	failures int // consecutive tool failures
	tries    int
	stopped  string
	known    []string // minimized reproducers: a candidate holding one is not new
}

func fuzzCompiler(p *probe) {
	switch {
	case len(p.t.Compiler) == 0:
		p.Skip("target.compiler not configured: compiler fuzzing skipped")
		return
	case !p.can("qa_compile"):
		p.Skip("qa_compile unavailable: compiler fuzzing skipped")
		return
	}
	f := &fuzzer{p: p, seen: map[string]bool{}}
	corpus := p.pb.opts.Corpus
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
	// Havoc stage: random stacked mutations until the cap.
	m := newMutator(p.rng, corpus)
	for i := 0; f.live() && i < 20*p.limit; i++ {
		seed := seeds[p.rng.IntN(len(seeds))]
		if len(corpus) > 0 && p.rng.IntN(4) > 0 {
			seed = corpus[p.rng.IntN(len(corpus))]
		}
		mut, ops := m.mutate(seed)
		f.try(mut, strings.Join(ops, "+"))
	}
	p.notef("compiled %d inputs: %d distinct crash(es), %d timeout(s)", f.tries, len(f.crashes), f.timeouts)
	if f.stopped != "" {
		p.notef("compile fuzzing stopped: %s", f.stopped)
	}
}

// live reports whether fuzzing may go on.
func (f *fuzzer) live() bool { return f.stopped == "" && f.p.room(1) }

// compile runs one qa_compile and tracks tool failures.
func (f *fuzzer) compile(src string) fleet.Result {
	r := f.p.Compile(src)
	f.tries++
	if r.IsOK() {
		f.failures = 0
		return r
	}
	if f.failures++; f.failures >= fuzzToolFailures || !f.p.can("qa_compile") {
		f.stopped = "qa_compile failed " + fmt.Sprint(f.failures) + " times in a row: " + clip(r.Err(), 120)
	}
	return r
}

// try compiles src once (never the same input twice) and handles a crash
// or a hang; origin names the mutation that made it.
func (f *fuzzer) try(src, origin string) {
	if f.seen[src] || !f.live() || len(src) > maxMutant || f.holdsKnown(src) {
		return
	}
	f.seen[src] = true
	r := f.compile(src)
	switch str(r, "outcome") {
	case "crashed":
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

// crash minimizes and reports a crash with a new signature.
func (f *fuzzer) crash(src, origin string, r fleet.Result) {
	sig := crashSignature(r)
	for _, s := range f.crashes {
		if s == sig {
			return
		}
	}
	f.crashes = append(f.crashes, sig)
	if len(f.crashes) > fuzzCrashes {
		return
	}
	small, tests := f.minimize(src, fuzzCrashMinimize, 2, func(res fleet.Result) bool {
		return str(res, "outcome") == "crashed" && crashSignature(res) == sig
	})
	f.remember(small)
	f.p.Report(fleet.SeverityHigh, fleet.SurfaceCompiler,
		fmt.Sprintf("Compiler crash on a %d-byte input (minimized with %d compiles from a %d-byte %s mutant of a seed): %s, exit %d%s, where a clean error was expected. stderr: %s",
			len(small), tests, len(src), origin, quote(sig, 160), integer(r, "exit_code"), signalText(r), quote(str(r, "stderr_tail"), 400)),
		"qa_compile", map[string]any{"source": small})
}

// hangFound minimizes and reports the first hang.
func (f *fuzzer) hangFound(src, origin string, r fleet.Result) {
	small, tests := f.minimize(src, fuzzHangMinimize, 6, func(res fleet.Result) bool {
		return str(res, "outcome") == "timeout"
	})
	f.remember(small)
	f.p.Report(fleet.SeverityMedium, fleet.SurfaceCompiler,
		fmt.Sprintf("Compiler hang: a %d-byte input (minimized with %d compiles from a %d-byte %s mutant of a seed) does not finish within the compile timeout (killed after %d ms), where a result or a clean error was expected. Input: %s",
			len(small), tests, len(src), origin, integer(r, "duration_ms"), quote(small, 200)),
		"qa_compile", map[string]any{"source": small})
}

// minimize shrinks src by delta debugging, each test one qa_compile that
// keeps failing the same way. It stops early near the cap, and after
// maxTimeouts candidates ran into the compile timeout (each costs the
// whole timeout).
func (f *fuzzer) minimize(src string, budget, maxTimeouts int, same func(fleet.Result) bool) (string, int) {
	timeouts, compiles := 0, 0
	small, _ := Minimize(src, budget, func(c string) bool {
		if !f.p.room(1) || timeouts >= maxTimeouts || f.stopped != "" {
			return false
		}
		f.seen[c] = true
		compiles++
		r := f.compile(c)
		if str(r, "outcome") == "timeout" {
			timeouts++
		}
		return same(r)
	})
	return small, compiles
}

var (
	crashLine = regexp.MustCompile(`(?m)^(?:panic: .*|fatal error: .*|thread '.*' panicked at.*|.*Segmentation fault.*|.*AddressSanitizer: \S+|.*[Aa]ssertion .*failed.*|.*internal compiler error.*|Exception in thread .*|Traceback \(most recent call last\):|.*stack overflow.*)$`)
	sigNoise  = regexp.MustCompile(`0x[0-9a-fA-F]+|\d+`)
)

// crashSignature names a crash by its first crash line with numbers and
// addresses blanked, or by its exit status when stderr has none.
func crashSignature(r fleet.Result) string {
	if l := crashLine.FindString(str(r, "stderr_tail")); l != "" {
		return clip(sigNoise.ReplaceAllString(strings.TrimSpace(l), "N"), 120)
	}
	if s := str(r, "signal"); s != "" {
		return "signal " + s
	}
	return fmt.Sprintf("exit %d", integer(r, "exit_code"))
}
