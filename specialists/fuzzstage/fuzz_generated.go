package fuzzstage

import (
	"fmt"
	"strings"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/specialists/replay"
)

// Generated-harness stage limits: the time across the harnesses fuzzing/
// harness makes for a repository without a fuzz target.
const (
	genHarnesses   = 6   // harnesses given a first session, best ranked first
	genFirstSecs   = 20  // each one's first session
	genMoreSecs    = 60  // a later session, for a harness still finding coverage
	genBudgetSecs  = 420 // the stage's fuzzing seconds in all
	genCrashers    = 3   // crashers per session replayed and judged
	genMaxSessions = 16
)

// genHarness is what the stage knows of one generated harness in this run.
type genHarness struct {
	target, entry, why string
	sessions, secs     int
	newCov             bool
	plateau            int
	stats              bool
}

// fuzzGenerated fuzzes a Go repository given only as target.repo (no fuzz
// target, no C harness, no compiler): qa_fuzz harness=list generates
// native fuzz targets for its ranked entry points; each of the best
// genHarnesses gets a short first session, then the rest of the budget
// goes, genMoreSecs at a time, to the harnesses whose last session found
// new coverage (a harness on a plateau of enginePlateau sessions, by its
// kept statistics, gets no more). Each crasher is replayed and judged by
// qa_fuzz: only a library bug is reported (high when it reproduces), with
// the replay as its repro, which returns the standalone reproducer test;
// harness crashes are counted in a note and never reported.
func fuzzGenerated(p *replay.Play) {
	tg := p.Target()
	repo := tg.Repo
	switch {
	case repo == nil || repo.FuzzTarget != "" || repo.Harness != "" || len(tg.Compiler) > 0 || !canFuzz(p, repo.URL, "to generate fuzz targets for "+repo.URL):
		return
	}
	r := p.Call("qa_fuzz", map[string]any{"harness": "list"})
	if !r.IsOK() {
		p.Notef("no fuzz target could be generated for %s: %s", repo.URL, replay.Clip(r.Err(), 300))
		return
	}
	var hs []*genHarness
	for _, h := range results(r["harnesses"]) {
		hs = append(hs, &genHarness{target: replay.Str(h, "target"), entry: replay.Str(h, "entry"), why: replay.Str(h, "why")})
	}
	p.Notef("%d fuzz target(s) generated for %s (%d dropped, %d harness crash(es) counted so far)%s", len(hs), replay.Str(r, "module"),
		len(results(r["dropped"])), replay.Int(r, "harness_crashes"), bestWhy(hs))
	if len(hs) == 0 {
		return
	}
	seen := map[string]bool{}
	spent, sessions, harnessCrashes := 0, 0, 0
	run := func(h *genHarness, secs int) bool {
		if !p.Room(2) || spent+secs > genBudgetSecs || sessions >= genMaxSessions {
			return false
		}
		spent, sessions = spent+secs, sessions+1
		r := p.Call("qa_fuzz", map[string]any{"harness": h.target, "seconds": secs})
		h.sessions, h.secs = h.sessions+1, h.secs+secs
		if !r.IsOK() {
			p.Notef("qa_fuzz on generated %s: %s", h.target, replay.Clip(r.Err(), 200))
			h.plateau = enginePlateau // not run again this run
			h.stats = true
			return true
		}
		_, h.stats = replay.Num(r, "plateau_sessions")
		h.newCov, h.plateau = replay.Flag(r, "new_coverage"), replay.Int(r, "plateau_sessions")
		crashers := results(r["crashers"])
		p.Notef("%s on generated %s (%s) ran %d inputs, %d crasher(s)%s", replay.Str(r, "engine"), h.target, h.entry, replay.Int(r, "execs"), len(crashers), plateau(r))
		harnessCrashes += judgeCrashers(p, h, replay.Str(r, "engine"), crashers, seen)
		return true
	}
	for i, h := range hs {
		if i == genHarnesses || !run(h, genFirstSecs) {
			break
		}
	}
	for more := true; more; {
		more = false
		for _, h := range hs {
			if h.sessions == 0 || h.stats && !h.newCov && h.plateau >= enginePlateau {
				continue
			}
			if h.stats && !h.newCov {
				continue // no new coverage in its last session: the time goes to those still growing
			}
			if !run(h, genMoreSecs) {
				more = false
				break
			}
			more = true
		}
	}
	if harnessCrashes > 0 {
		p.Notef("%d harness crash(es) this run: misuses the generated harnesses made (not reported; their entry points are dropped for later runs)", harnessCrashes)
	}
}

// bestWhy says why the best-ranked harness was ranked first.
func bestWhy(hs []*genHarness) string {
	if len(hs) == 0 {
		return ""
	}
	return fmt.Sprintf("; best: %s (%s)", hs[0].entry, replay.Clip(hs[0].why, 200))
}

// judgeCrashers replays a session's crashers on their harness, reports
// the library bugs and returns how many were the harness's. A crash that
// reproduces is high; a hang the replay confirms (it times out again, and
// the stack at its timeout is in the module) medium; a library bug that
// does not fail the same way again low and flaky.
func judgeCrashers(p *replay.Play, h *genHarness, engine string, crashers []fleet.Result, seen map[string]bool) int {
	n := 0
	replayCrashers(p, crashers, genCrashers, seen, h.target, func(c fleet.Result) map[string]any {
		if replay.Flag(c, "input_truncated") || replay.Flag(c, "input_lossy") {
			return nil
		}
		return map[string]any{"harness": h.target, "replay": replay.Str(c, "input")}
	}, func(r crasherReplay) {
		verdict := replay.Str(r.rep, "verdict")
		if !r.rep.IsOK() {
			p.Notef("replaying a crasher of %s: %s", h.target, replay.Clip(r.rep.Err(), 200))
			return
		}
		if verdict != "library" {
			if verdict == "harness" || verdict == "outside" {
				n++
			}
			article := "a"
			if strings.ContainsAny(verdict[:min(1, len(verdict))], "aeiou") {
				article = "an"
			}
			p.Notef("not reported: %s %s %s of %s (%s): %s", article, verdict, failureWord(r.kind), h.target, replay.Clip(r.state, 160), replay.Clip(replay.Str(r.rep, "verdict_why"), 200))
			return
		}
		// The replay's failure is the one reported: an engine's hang or
		// resource report that replays as a crash is that crash, and two
		// sessions' crashers that replay as one state are one finding.
		rkind, rstate := replay.Str(r.rep, "outcome"), replay.Str(r.rep, "crash_state")
		if seen["replay|"+rstate] {
			return
		}
		seen["replay|"+rstate] = true
		sev, failure := failureSeverity(rkind)
		flaky, also := "", ""
		switch {
		case rkind == "crashed" && r.kind != "crashed":
			also = fmt.Sprintf(" (the engine saw a %s; its replay crashes)", r.kind)
		case rkind == "crashed", rkind == "timeout" && r.kind == "timeout":
		default:
			sev, flaky = fleet.SeverityLow, fmt.Sprintf(" Flaky: replaying it gave %s.", rkind)
		}
		text := fmt.Sprintf("Go library %s: %s %s found by %s through a generated fuzz target (%s)%s; %s. Replaying the repro returns a standalone regression test (%s).%s",
			h.entry, failure, replay.Quote(rstate, 240), engine, h.target, also, replay.Clip(replay.Str(r.rep, "verdict_why"), 200), replay.Str(r.rep, "reproducer_path"), flaky)
		p.File(sev, fleet.Surface("code"), text+r.notes(p, h.target, text),
			"qa_fuzz", r.args, replay.StateArgs{State: orText(rkind, "crashed") + ": " + rstate, Flaky: sev == fleet.SeverityLow})
	})
	return n
}

// failureWord is what a note calls a crasher of an outcome.
func failureWord(outcome string) string {
	_, w := failureSeverity(outcome)
	return w
}
