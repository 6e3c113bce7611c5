package fuzzstage

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strings"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/fuzzing"
	"github.com/qafleet/fleetd/specialists/replay"
)

// Engine stage limits: qa_fuzz sessions run thousands of inputs inside the
// tool, so a few calls buy more fuzzing than the rest of the cap.
const (
	engineSessions = 2  // compiler sessions per run without kept statistics (one per engine)
	engineSeconds  = 20 // per full compiler session; the stage's budget is this per engine
	enginePlateau  = 3  // sessions in a row without new coverage that make a plateau
	engineScout    = 5  // seconds of a check session on an engine not yet run this run
	engineMaxCalls = 4  // compiler sessions per run with statistics
	engineCrashers = 4  // crashers per session replayed through qa_compile
	goFuzzSeconds  = 60 // the Go fuzz target's session
	goFuzzCrashers = 3
)

// engineRun is what the engine stage knows of one engine in this run, all
// of it from its sessions' results.
type engineRun struct {
	name    string
	ran     bool
	seconds int  // given to it in this run
	stats   bool // its last result carried plateau_sessions
	newCov  bool // its last session found new coverage
	plateau int  // sessions in a row without new coverage, as of its last
}

// record takes in a session's result.
func (e *engineRun) record(r fleet.Result, secs int) {
	e.ran, e.seconds = true, e.seconds+secs
	_, e.stats = replay.Num(r, "plateau_sessions")
	e.newCov, e.plateau = replay.Flag(r, "new_coverage"), replay.Int(r, "plateau_sessions")
}

// kept takes in what another engine's session said of this one's kept
// statistics (engine_plateaus): an engine the target's history shows on a
// plateau is left alone without a check session of its own.
func (e *engineRun) kept(r fleet.Result) {
	m, ok := r["engine_plateaus"].(map[string]any)
	if !ok || e.ran {
		return
	}
	if _, ok := replay.Num(fleet.Result(m), e.name); ok {
		e.stats, e.newCov, e.plateau = true, false, replay.Int(fleet.Result(m), e.name)
	}
}

// stale reports whether the engine is on a plateau: its kept statistics
// say it has found nothing new on this target for enginePlateau sessions.
func (e *engineRun) stale() bool {
	return e.stats && !e.newCov && e.plateau >= enginePlateau
}

// engine runs bounded qa_fuzz sessions on the compiler (engine auto:
// AFL++ when installed, else the built-in engine; after an AFL++ session,
// whose non-instrumented mode is blind, the built-in engine with its
// corpus dictionary) and replays each crasher through qa_compile, which
// classifies, minimizes and reports it like any other input.
//
// Without kept statistics each engine gets one full session. With them
// (the first result carries plateau_sessions) the stage's budget,
// engineSeconds per engine, follows coverage: an engine not yet run gets a
// short check session, and the rest goes, a session at a time, to the
// engine still finding new coverage; an engine on a plateau gets nothing
// more, and when every engine is on one the stage stops early and says
// what it spent. The first session always runs in full: a playbook learns
// an engine's plateau only from a session's result.
func (f *fuzzer) engine() {
	p := f.p
	if !p.Can("qa_fuzz") {
		p.Skip("qa_fuzz unavailable: no fuzz-engine session")
		return
	}
	r, ok := f.session("auto", engineSeconds, "")
	if !ok {
		return
	}
	engines := []*engineRun{{name: replay.Str(r, "engine")}}
	if engines[0].name == "aflpp" {
		engines = append(engines, &engineRun{name: "builtin"})
	}
	engines[0].record(r, engineSeconds)
	for _, e := range engines[1:] {
		e.kept(r)
	}
	if !engines[0].stats {
		for _, e := range engines[1:min(len(engines), engineSessions)] {
			if _, ok := f.session(e.name, engineSeconds, ""); !ok {
				return
			}
		}
		return
	}
	budget, spent := engineSeconds*len(engines), engineSeconds
	for calls := 1; calls < engineMaxCalls && spent < budget; calls++ {
		e, secs, why := nextEngine(engines, budget-spent)
		if e == nil {
			break
		}
		r, ok := f.session(e.name, secs, why)
		if !ok {
			return
		}
		e.record(r, secs)
		spent += secs
	}
	var on []string
	for _, e := range engines {
		if !e.stale() {
			return
		}
		on = append(on, fmt.Sprintf("%s %d", e.name, e.plateau))
	}
	p.Notef("all engines on a plateau (sessions without new coverage: %s): spent %d s of the engine stage's %d", strings.Join(on, ", "), spent, budget)
}

// nextEngine picks the next session from what the run has seen: a check
// session for an engine not yet run, else the engine not on a plateau that
// best deserves the time (new coverage first, then the shorter plateau,
// then the one given less so far, then the fixed order); nil when every
// engine is on a plateau.
func nextEngine(engines []*engineRun, rest int) (*engineRun, int, string) {
	for _, e := range engines {
		if !e.ran && !e.stale() {
			return e, min(engineScout, rest), fmt.Sprintf(", a %d s check of an engine not yet run", min(engineScout, rest))
		}
	}
	var best *engineRun
	for _, e := range engines {
		if e.stale() {
			continue
		}
		if best == nil || deserves(e, best) {
			best = e
		}
	}
	if best == nil {
		// Every engine is on a plateau: one short check of an engine known
		// stale only from earlier runs, so that history is re-tested now
		// and then rather than trusted for ever.
		for _, e := range engines {
			if !e.ran {
				return e, min(engineScout, rest), fmt.Sprintf(", a %d s re-check of an engine on a plateau in earlier runs", min(engineScout, rest))
			}
		}
		return nil, 0, ""
	}
	why := ", given the budget: still finding new coverage"
	if !best.newCov {
		why = ", given the budget: not on a plateau"
	}
	return best, min(engineSeconds, rest), why
}

// deserves reports whether a should get the next session before b.
func deserves(a, b *engineRun) bool {
	switch {
	case a.newCov != b.newCov:
		return a.newCov
	case a.plateau != b.plateau:
		return a.plateau < b.plateau
	}
	return a.seconds < b.seconds
}

// session runs one qa_fuzz session of engine for secs seconds, notes it
// (why: the reason for its length, "" for a full one) and replays its
// crashers; ok is false when the stage must stop (no room, fuzzing
// stopped, or the tool failed).
func (f *fuzzer) session(engine string, secs int, why string) (fleet.Result, bool) {
	p := f.p
	if !f.live() || !p.Room(3) {
		return nil, false
	}
	r := p.Call("qa_fuzz", map[string]any{"engine": engine, "seconds": secs})
	if d, ok := r.Degradation(); ok {
		// Also in the run's footer (the loop gathers it): said here so the
		// summary reads it where the session is.
		p.Notef("%s", d)
	}
	if !r.IsOK() {
		p.Notef("qa_fuzz %s: %s", engine, replay.Clip(r.Err(), 160))
		return nil, false
	}
	ran := replay.Str(r, "engine")
	crashers := results(r["crashers"])
	note := ""
	if n := replay.Str(r, "note"); n != "" {
		note = " (" + replay.Clip(n, 120) + ")"
	}
	p.Notef("qa_fuzz engine %s ran %d inputs in %d ms, %d crasher(s)%s%s%s", ran, replay.Int(r, "execs"), replay.Int(r, "elapsed_ms"), len(crashers), plateau(r), note, why)
	for i, c := range crashers {
		if i == engineCrashers || !f.live() {
			break
		}
		if replay.Flag(c, "input_truncated") {
			continue // cannot be replayed as it was found
		}
		in := replay.Str(c, "input")
		if b64 := replay.Str(c, "input_base64"); b64 != "" {
			b, err := base64.StdEncoding.DecodeString(b64)
			if err != nil {
				continue
			}
			in = string(b) // the bytes as found, not input's replacement characters
		}
		f.try(in, "engine "+ran)
	}
	return r, true
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
func fuzzRepo(p *replay.Play) {
	repo := p.Target().Repo
	switch {
	case repo == nil || repo.FuzzTarget == "" || !canFuzz(p, repo.FuzzTarget, "for "+repo.FuzzTarget):
		return
	}
	// Two sessions of half the time each: the second goes to the engine
	// still finding new coverage (libFuzzer unless it is on a plateau and
	// go test -fuzz is not), or is not run when both are on one.
	seen := map[string]bool{}
	r, ok := repoSession(p, "libfuzzer", goFuzzSeconds/2, "", seen)
	if !ok || !p.Room(3) {
		return
	}
	ran := replay.Str(r, "engine")
	next, why := ran, ""
	if _, stats := replay.Num(r, "plateau_sessions"); stats && !replay.Flag(r, "new_coverage") && replay.Int(r, "plateau_sessions") >= enginePlateau {
		other := &engineRun{name: "go"}
		if ran == "go" {
			other.name = "libfuzzer"
		}
		other.kept(r)
		if other.stale() {
			p.Notef("%s: every engine on a plateau (%s %d, %s %d sessions without new coverage): the second session is not run", repo.FuzzTarget, ran, replay.Int(r, "plateau_sessions"), other.name, other.plateau)
			return
		}
		next, why = other.name, fmt.Sprintf(", given the time: %s is on a plateau (%d sessions without new coverage)", ran, replay.Int(r, "plateau_sessions"))
	}
	repoSession(p, next, goFuzzSeconds-goFuzzSeconds/2, why, seen)
}

// repoSession runs one qa_fuzz session of engine on target.repo's fuzz
// target and reports its crashers of states not in seen (see fuzzRepo).
func repoSession(p *replay.Play, engine string, secs int, why string, seen map[string]bool) (fleet.Result, bool) {
	repo := p.Target().Repo
	r := p.Call("qa_fuzz", map[string]any{"engine": engine, "seconds": secs})
	if d, ok := r.Degradation(); ok {
		// Also in the run's footer (the loop gathers it): said here so the
		// summary reads it where the session is.
		p.Notef("%s", d)
	}
	if !r.IsOK() {
		p.Notef("qa_fuzz on %s: %s", repo.FuzzTarget, replay.Clip(r.Err(), 200))
		return r, false
	}
	crashers := results(r["crashers"])
	engine, found := replay.Str(r, "engine"), "go test -fuzz"
	if engine == "libfuzzer" {
		found = "libFuzzer"
	}
	note := ""
	if n := replay.Str(r, "note"); n != "" {
		note = " (" + replay.Clip(n, 160) + ")"
	}
	p.Notef("%s on %s ran %d inputs, %d crasher(s)%s%s%s", found, repo.FuzzTarget, replay.Int(r, "execs"), len(crashers), plateau(r), note, why)
	reportCrashers(p, crashers, goFuzzCrashers, seen, fmt.Sprintf("Go fuzz target %s in %s", repo.FuzzTarget, repo.FuzzPackage), found,
		func(c fleet.Result) map[string]any {
			if replay.Flag(c, "input_truncated") || replay.Flag(c, "input_lossy") {
				return nil // a 'go test fuzz v1' input is text: this one was cut or mangled
			}
			return map[string]any{"engine": engine, "replay": replay.Str(c, "input")}
		})
	return r, true
}

// reportCrashers replays each of a session's crashers (up to max, states
// not in seen) through qa_fuzz replay with the args replay gives, and
// reports it with that replay as the repro: high for a crash that
// reproduces with its crash state, medium for a hang or resource
// exhaustion, low with flaky=true when the replay does not fail the same
// way. what names the fuzzed code, found the engine; replay returns nil
// for a crasher whose input cannot be carried in a repro (noted).
func reportCrashers(p *replay.Play, crashers []fleet.Result, max int, seen map[string]bool, what, found string, replayOf func(fleet.Result) map[string]any) {
	repo := p.Target().Repo
	surface := fleet.Surface("code")
	if len(repo.Surfaces) > 0 {
		if s, err := fleet.ParseSurface(repo.Surfaces[0]); err == nil {
			surface = s
		}
	}
	replayCrashers(p, crashers, max, seen, what, replayOf, func(r crasherReplay) {
		ok := r.rep.IsOK() && replay.Str(r.rep, "outcome") == r.kind && replay.Str(r.rep, "crash_state") == r.state
		if v := replay.Str(r.rep, "hang_verdict"); ok && r.kind == "timeout" && (v == fuzzing.HangHarness || v == fuzzing.HangOutside) {
			// The replay's goroutine dump puts the loop in the fuzz
			// function itself, or in code it calls without the module:
			// not the library's bug (issue 31's rule 5, for shipped
			// targets too).
			p.Notef("not reported: a hang of %s whose loop is not the library's (%s at %s): %s", what, v, orText(replay.Str(r.rep, "hang_frame"), "no frame"), replay.Clip(replay.Str(r.rep, "hang_why"), 200))
			return
		}
		sev, failure := failureSeverity(r.kind)
		flaky := ""
		if !ok {
			sev, flaky = fleet.SeverityLow, fmt.Sprintf(" Flaky: replaying it gave %s.", orText(replay.Str(r.rep, "outcome"), replay.Clip(r.rep.Err(), 100)))
		}
		text := fmt.Sprintf("%s: %s %s on a %d-byte input found by %s (minimized by it), where the target was expected to pass.%s",
			what, failure, replay.Quote(r.state, 240), replay.Int(r.c, "input_bytes"), found, flaky)
		p.File(sev, surface, text+r.notes(p, what, text)+" Output: "+replay.Quote(strings.TrimSpace(replay.Str(r.c, "stderr_head")), 400),
			"qa_fuzz", r.args, replay.StateArgs{State: r.kind + ": " + r.state, Flaky: !ok})
	})
}

// notes are the crasher's and its replay's notes (qa_fuzz's note: how a
// hang was confirmed when its replay was starved, "hang confirmed only by
// wall time: ...", or why it is none) that text does not already hold, as
// a sentence for the finding (" Note: ..."; "" when none); each is noted
// in the run's summary too, where `fleetd runs show` prints it.
func (r crasherReplay) notes(p *replay.Play, what, text string) string {
	var ns []string
	for _, n := range []string{replay.Str(r.rep, "note"), replay.Str(r.c, "note")} {
		if n = replay.Clip(n, 300); n != "" && !strings.Contains(text, n) && !slices.Contains(ns, n) {
			ns = append(ns, n)
		}
	}
	if len(ns) == 0 {
		return ""
	}
	p.Notef("a %s of %s %s: %s", failureWord(r.kind), what, replay.Clip(r.state, 120), strings.Join(ns, "; "))
	return " Note: " + strings.Join(ns, "; ") + "."
}

// failureSeverity is a reproduced failure's severity by its outcome, and
// what the report calls it: a crash high, a hang or resource exhaustion
// medium.
func failureSeverity(outcome string) (fleet.Severity, string) {
	switch outcome {
	case "timeout":
		return fleet.SeverityMedium, "hang"
	case "resource":
		return fleet.SeverityMedium, "resource exhaustion"
	}
	return fleet.SeverityHigh, "crash"
}

// crasherReplay is one crasher of a session (c, its outcome kind and
// state), the qa_fuzz args that replay it and the replay's result.
type crasherReplay struct {
	c, rep      fleet.Result
	args        map[string]any
	kind, state string
}

// replayCrashers is the one loop over a session's crashers that every
// fuzz stage reports from: up to max of them, each outcome and state once
// across the run (seen), replayed through qa_fuzz with the args replay
// gives (nil: the input cannot be carried in a repro, noted with what),
// each replay handed to report, while calls are left.
func replayCrashers(p *replay.Play, crashers []fleet.Result, max int, seen map[string]bool, what string, replayOf func(fleet.Result) map[string]any, report func(crasherReplay)) {
	for i, c := range crashers {
		if i == max || !p.Room(2) {
			break
		}
		kind, state := replay.Str(c, "outcome"), replay.Str(c, "crash_state")
		if seen[kind+"|"+state] {
			continue // found by the run's other session: reported once
		}
		seen[kind+"|"+state] = true
		args := replayOf(c)
		if args == nil {
			p.Notef("a %d-byte crasher of %s cannot be carried in a repro", replay.Int(c, "input_bytes"), what)
			continue
		}
		report(crasherReplay{c: c, rep: p.Call("qa_fuzz", args), args: args, kind: kind, state: state})
	}
}

// canFuzz reports whether a fuzz stage may start on what: qa_fuzz is
// there and three calls are left; when not, the skip says so ("qa_fuzz
// unavailable: <what> not fuzzed", "no calls left <left>").
func canFuzz(p *replay.Play, what, left string) bool {
	switch {
	case !p.Can("qa_fuzz"):
		p.Skip("qa_fuzz unavailable: %s not fuzzed", what)
		return false
	case !p.Room(3):
		p.Skip("no calls left %s", left)
		return false
	}
	return true
}

// harnessSeconds is the AFL++ session on target.repo's C/C++ harness.
const harnessSeconds = 60

// fuzzHarness runs instrumented AFL++ on target.repo's C or C++ harness
// when there is no target.compiler (with one, the compiler's engine stage
// runs the harness build and replays its crashers through qa_compile):
// one qa_fuzz session, whose note says which AFL++ mode ran and why, then
// each crasher replayed on the instrumented build through qa_fuzz replay
// and reported as fuzzRepo does. A binary input travels in base64.
func fuzzHarness(p *replay.Play) {
	tg := p.Target()
	repo := tg.Repo
	switch {
	case repo == nil || repo.Harness == "" || len(repo.Build) == 0 || len(tg.Compiler) > 0 || !canFuzz(p, "harness "+repo.Harness, "for harness "+repo.Harness):
		return
	}
	r := p.Call("qa_fuzz", map[string]any{"engine": "aflpp", "seconds": harnessSeconds})
	if !r.IsOK() {
		p.Notef("qa_fuzz on harness %s: %s", repo.Harness, replay.Clip(r.Err(), 300))
		return
	}
	crashers := results(r["crashers"])
	p.Notef("AFL++ (%s: %s) on harness %s ran %d inputs, %d crasher(s)%s", orText(replay.Str(r, "mode"), "mode unknown"), replay.Clip(replay.Str(r, "mode_why"), 200),
		repo.Harness, replay.Int(r, "execs"), len(crashers), plateau(r))
	reportCrashers(p, crashers, goFuzzCrashers, map[string]bool{}, "C/C++ harness "+repo.Harness, "AFL++ "+replay.Str(r, "mode"),
		func(c fleet.Result) map[string]any {
			switch {
			case replay.Flag(c, "input_truncated"):
				return nil
			case replay.Str(c, "input_base64") != "":
				return map[string]any{"engine": "aflpp", "replay_base64": replay.Str(c, "input_base64")}
			}
			return map[string]any{"engine": "aflpp", "replay": replay.Str(c, "input")}
		})
}

// plateau says, from a session's kept statistics, whether it found new
// coverage or how many sessions in a row the engine has not ("" when the
// tool kept no statistics): the summary shows a plateau to the operator.
func plateau(r fleet.Result) string {
	switch {
	case replay.Flag(r, "new_coverage"):
		return ", new coverage"
	case replay.Int(r, "plateau_sessions") >= enginePlateau:
		return fmt.Sprintf(", on a plateau: no new coverage in %d sessions", replay.Int(r, "plateau_sessions"))
	case replay.Int(r, "plateau_sessions") > 0:
		return fmt.Sprintf(", no new coverage in %d session(s)", replay.Int(r, "plateau_sessions"))
	}
	return ""
}

func orText(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
