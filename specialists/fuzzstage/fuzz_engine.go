package fuzzstage

import (
	"fmt"
	"strings"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/specialists/probe"
)

// Engine stage limits: qa_fuzz sessions run thousands of inputs inside the
// tool, so a few calls buy more fuzzing than the rest of the cap.
const (
	engineSessions = 2  // compiler sessions per run
	engineSeconds  = 20 // per compiler session
	engineCrashers = 4  // crashers per session replayed through qa_compile
	goFuzzSeconds  = 60 // the Go fuzz target's session
	goFuzzCrashers = 3
)

// engine runs bounded qa_fuzz sessions on the compiler (engine auto:
// AFL++ when installed, else the built-in engine; after an AFL++ session,
// whose non-instrumented mode is blind, one of the built-in engine with its
// corpus dictionary) and replays each crasher through qa_compile, which
// classifies, minimizes and reports it like any other input.
func (f *fuzzer) engine() {
	p := f.p
	if !p.Can("qa_fuzz") {
		p.Skip("qa_fuzz unavailable: no fuzz-engine session")
		return
	}
	next := "auto"
	for range engineSessions {
		if !f.live() || !p.Room(3) || next == "" {
			return
		}
		r := p.Call("qa_fuzz", map[string]any{"engine": next, "seconds": engineSeconds})
		if !r.IsOK() {
			p.Notef("qa_fuzz %s: %s", next, probe.Clip(r.Err(), 160))
			return
		}
		ran := probe.Str(r, "engine")
		crashers := results(r["crashers"])
		note := ""
		if n := probe.Str(r, "note"); n != "" {
			note = " (" + probe.Clip(n, 120) + ")"
		}
		p.Notef("qa_fuzz engine %s ran %d inputs in %d ms, %d crasher(s)%s%s", ran, probe.Int(r, "execs"), probe.Int(r, "elapsed_ms"), len(crashers), plateau(r), note)
		for i, c := range crashers {
			if i == engineCrashers || !f.live() {
				break
			}
			if probe.Flag(c, "input_truncated") {
				continue // cannot be replayed as it was found
			}
			f.try(probe.Str(c, "input"), "engine "+ran)
		}
		next = ""
		if ran == "aflpp" {
			next = "builtin"
		}
	}
}

// results reads a list of objects from a result field: live tools give
// []map[string]any, run records []any.
func results(v any) []fleet.Result {
	var out []fleet.Result
	switch l := v.(type) {
	case []map[string]any:
		for _, m := range l {
			out = append(out, fleet.Result(m))
		}
	case []any:
		for _, x := range l {
			if m, ok := x.(map[string]any); ok {
				out = append(out, fleet.Result(m))
			}
		}
	}
	return out
}

// fuzzRepo runs a coverage-guided fuzzer on target.repo's native fuzz
// target through qa_fuzz (libFuzzer, which qa_fuzz replaces with go test
// -fuzz when clang is missing or the harness does not build), replays each
// crasher (already minimized by the engine) through qa_fuzz replay with the
// engine that found it, and reports it with that replay as the repro: high
// for a crash that reproduces, medium for a hang or resource exhaustion,
// low with flaky=true when the replay does not fail the same way.
func fuzzRepo(p *probe.Probe) {
	repo := p.Target().Repo
	switch {
	case repo == nil || repo.FuzzTarget == "":
		return
	case !p.Can("qa_fuzz"):
		p.Skip("qa_fuzz unavailable: %s not fuzzed", repo.FuzzTarget)
		return
	case !p.Room(3):
		p.Skip("no calls left for %s", repo.FuzzTarget)
		return
	}
	r := p.Call("qa_fuzz", map[string]any{"engine": "libfuzzer", "seconds": goFuzzSeconds})
	if !r.IsOK() {
		p.Notef("qa_fuzz on %s: %s", repo.FuzzTarget, probe.Clip(r.Err(), 200))
		return
	}
	crashers := results(r["crashers"])
	engine, found := probe.Str(r, "engine"), "go test -fuzz"
	if engine == "libfuzzer" {
		found = "libFuzzer"
	}
	note := ""
	if n := probe.Str(r, "note"); n != "" {
		note = " (" + probe.Clip(n, 160) + ")"
	}
	p.Notef("%s on %s ran %d inputs, %d crasher(s)%s%s", found, repo.FuzzTarget, probe.Int(r, "execs"), len(crashers), plateau(r), note)
	surface := fleet.Surface("code")
	if len(repo.Surfaces) > 0 {
		if s, err := fleet.ParseSurface(repo.Surfaces[0]); err == nil {
			surface = s
		}
	}
	for i, c := range crashers {
		if i == goFuzzCrashers || !p.Room(2) {
			break
		}
		input, kind, state := probe.Str(c, "input"), probe.Str(c, "outcome"), probe.Str(c, "crash_state")
		if probe.Flag(c, "input_truncated") || probe.Flag(c, "input_lossy") {
			p.Notef("a %s crasher of %d bytes cannot be carried in a repro", repo.FuzzTarget, probe.Int(c, "input_bytes"))
			continue
		}
		args := map[string]any{"engine": engine, "replay": input}
		rep := p.Call("qa_fuzz", args)
		ok := rep.IsOK() && probe.Str(rep, "outcome") == kind && probe.Str(rep, "crash_state") == state
		sev, what := fleet.SeverityHigh, "crash"
		switch kind {
		case "timeout":
			sev, what = fleet.SeverityMedium, "hang"
		case "resource":
			sev, what = fleet.SeverityMedium, "resource exhaustion"
		}
		flaky := ""
		if !ok {
			sev, flaky = fleet.SeverityLow, fmt.Sprintf(" Flaky: replaying it gave %s.", orText(probe.Str(rep, "outcome"), probe.Clip(rep.Err(), 100)))
		}
		p.Report(sev, surface,
			fmt.Sprintf("Go fuzz target %s in %s: %s %s on a %d-byte input found by %s (minimized by it), where the target was expected to pass.%s Output: %s",
				repo.FuzzTarget, repo.FuzzPackage, what, probe.Quote(state, 240), probe.Int(c, "input_bytes"), found, flaky, probe.Quote(strings.TrimSpace(probe.Str(c, "stderr_head")), 400)),
			"qa_fuzz", args, probe.StateArgs{State: kind + ": " + state, Flaky: !ok})
	}
}

// plateau says, from a session's kept statistics, whether it found new
// coverage or how many sessions in a row the engine has not ("" when the
// tool kept no statistics): the summary shows a plateau to the operator.
func plateau(r fleet.Result) string {
	switch {
	case probe.Flag(r, "new_coverage"):
		return ", new coverage"
	case probe.Int(r, "plateau_sessions") > 0:
		return fmt.Sprintf(", no new coverage in %d session(s)", probe.Int(r, "plateau_sessions"))
	}
	return ""
}

func orText(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
