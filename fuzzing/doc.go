// Package fuzzing finds and describes the ways a program falls over on its
// input: it classifies one run of a target (compiled, rejected, crashed, a
// hang, resource exhaustion), reads a crash's output into a normalized
// crash state (the message with literals masked and the top frames that
// belong to the target) so one bug is one finding, and runs bounded fuzzing
// sessions with one of four engines:
//
//   - builtin: a mutation engine for programs given as argv with {src},
//     with a dictionary harvested from the seed corpus (tokens, tags,
//     keywords, punctuation pairs), splicing and nesting of corpus
//     fragments, and a persistent corpus of interesting inputs (a new
//     behaviour signature) kept across sessions;
//   - go: Go's coverage-guided `go test -fuzz` on a native fuzz target of a
//     repository, its crashers read from testdata/fuzz in the
//     `go test fuzz v1` format;
//   - libfuzzer: LLVM's libFuzzer on the same native Go fuzz target, built
//     with the Go compiler's libFuzzer instrumentation and a generated
//     harness, with comparison feedback (-use_value_profile=1 on every
//     second worker), a dictionary, a kept corpus pruned with -merge=1, a
//     bounded seed pass (the smallest inputs first, the rest fed in while
//     the workers fuzz), a working corpus in RAM (RAMScratch) and crashes
//     minimized with -minimize_crash=1; its crash states are the go
//     engine's;
//   - aflpp: AFL++'s afl-fuzz on the same argv, in its non-instrumented mode
//     (or QEMU mode when the install has it), when afl-fuzz is installed.
//
// Every engine but go runs the one session flow of session.go (stage →
// merge → dictionary → rounds → keep), each filling in its steps; one
// Mutator serves the builtin engine (bytes, markup) and the compiler
// playbook (program text, MutateText). A hang replayed through the go
// engine carries the stack at go test's timeout, and JudgeHang says whose
// loop it is (hang.go).
//
// It is a leaf beside sandbox: it imports sandbox (bounded exec) and the
// standard library only, so qatools (the qa_compile and qa_fuzz tools) and
// tests can use it; nothing here knows a tool, a finding or a chain.
// Every program it runs goes through sandbox.Exec (timeout, rlimits,
// process-group kill, scrubbed environment) in a directory the caller
// gives it, normally the run's jail.
package fuzzing
