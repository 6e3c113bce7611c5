package fuzzing

import (
	"regexp"

	"github.com/qafleet/fleetd/sandbox"
)

// Outcomes of one run of a target on one input (qa_compile's outcome).
const (
	Compiled = "compiled" // exit 0
	Rejected = "rejected" // a clean error: non-zero exit, no crash or exhaustion signature
	Crashed  = "crashed"  // a panic, a fatal signal or a sanitizer report
	TimedOut = "timeout"  // a hang: killed at the timeout or by the CPU rlimit
	Resource = "resource" // resource exhaustion: out of memory under the address-space limit
)

// CrashSignatures mark a program that fell over rather than refusing the
// input: runtime panics, sanitizer reports, uncaught exceptions and internal
// errors of the common toolchains. A clean "error: ..." matches none.
var CrashSignatures = regexp.MustCompile(`(?m)(^panic: |^goroutine \d+ \[|runtime error:|fatal error: |thread '.*' panicked at|^Traceback \(most recent call last\)|Segmentation fault|core dumped|AddressSanitizer|UndefinedBehaviorSanitizer|LeakSanitizer|MemorySanitizer|Exception in thread "|Unhandled exception|internal compiler error|Assertion .* failed|assertion failed|SIGSEGV|SIGABRT|SIGBUS|stack overflow)`)

// oomSignatures mark a program that ran out of memory: under RLIMIT_AS an
// allocation fails long before the host is in danger, and each runtime says
// so in its own words. Go's "fatal error: stack overflow" is not here: a
// goroutine stack past its maximum is unbounded recursion, a crash.
var oomSignatures = regexp.MustCompile(`(?m)(fatal error: out of memory|runtime: out of memory|runtime: cannot allocate memory|cannot allocate memory|std::bad_alloc|memory allocation of \d+ bytes failed|MemoryError|java\.lang\.OutOfMemoryError|JavaScript heap out of memory|out of memory|AddressSanitizer: (?:allocation-size-too-big|out of memory|requested allocation size)|LeakSanitizer: .*out of memory|==\d+==ERROR: .*: (?:calloc|malloc|realloc)-overflow|rss limit exhausted|malloc limit|libFuzzer: out-of-memory)`)

// Classify names what one run of a target did (see the outcome constants):
//
//   - killed at the timeout, or by the CPU rlimit (SIGXCPU, or SIGKILL
//     after the soft limit's worth of CPU): a hang, TimedOut;
//   - an out-of-memory report on stderr (Go, C++ std::bad_alloc, Rust,
//     Python, Java, Node, sanitizers), whatever the exit status or signal
//     (an allocation failure often ends in SIGABRT or SIGSEGV): Resource;
//   - a SIGKILL nobody here sent and no CPU limit explains: the kernel's OOM
//     killer is what sends those, so Resource too;
//   - any other signal, a shell's 128+n status, or a crash signature on
//     stderr (panic, sanitizer, assertion, traceback): Crashed;
//   - exit 0: Compiled; any other exit: Rejected.
//
// The order matters: a Go program killed at the CPU limit and one that
// printed "fatal error: out of memory" both die by signal or with status 2,
// and neither is a crash.
func Classify(r *sandbox.ExecResult) string {
	switch {
	case r.TimedOut || r.CPULimited:
		return TimedOut
	case r.ExitCode != 0 && oomSignatures.Match(r.Stderr):
		return Resource
	case r.Signal == "killed":
		return Resource
	case r.Signal != "":
		return Crashed
	case r.ExitCode == 0:
		return Compiled
	case r.ExitCode >= 128 || r.ExitCode < 0:
		return Crashed // a shell reporting a signal, or no status at all
	case CrashSignatures.Match(r.Stderr):
		return Crashed
	}
	return Rejected
}

// Finding reports whether an outcome is a bug (crash, hang or exhaustion)
// rather than an answer (compiled or rejected).
func Finding(outcome string) bool {
	return outcome == Crashed || outcome == TimedOut || outcome == Resource
}
