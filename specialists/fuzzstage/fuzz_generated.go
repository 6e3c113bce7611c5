package fuzzstage

import (
	"fmt"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/specialists/probe"
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
func fuzzGenerated(p *probe.Probe) {
	tg := p.Target()
	repo := tg.Repo
	switch {
	case repo == nil || repo.FuzzTarget != "" || repo.Harness != "" || len(tg.Compiler) > 0:
		return
	case !p.Can("qa_fuzz"):
		p.Skip("qa_fuzz unavailable: %s not fuzzed", repo.URL)
		return
	case !p.Room(3):
		p.Skip("no calls left to generate fuzz targets for %s", repo.URL)
		return
	}
	r := p.Call("qa_fuzz", map[string]any{"harness": "list"})
	if !r.IsOK() {
		p.Notef("no fuzz target could be generated for %s: %s", repo.URL, probe.Clip(r.Err(), 300))
		return
	}
	var hs []*genHarness
	for _, h := range results(r["harnesses"]) {
		hs = append(hs, &genHarness{target: probe.Str(h, "target"), entry: probe.Str(h, "entry"), why: probe.Str(h, "why")})
	}
	p.Notef("%d fuzz target(s) generated for %s (%d dropped, %d harness crash(es) counted so far)%s", len(hs), probe.Str(r, "module"),
		len(results(r["dropped"])), probe.Int(r, "harness_crashes"), bestWhy(hs))
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
			p.Notef("qa_fuzz on generated %s: %s", h.target, probe.Clip(r.Err(), 200))
			h.plateau = enginePlateau // not run again this run
			h.stats = true
			return true
		}
		_, h.stats = probe.Num(r, "plateau_sessions")
		h.newCov, h.plateau = probe.Flag(r, "new_coverage"), probe.Int(r, "plateau_sessions")
		crashers := results(r["crashers"])
		p.Notef("%s on generated %s (%s) ran %d inputs, %d crasher(s)%s", probe.Str(r, "engine"), h.target, h.entry, probe.Int(r, "execs"), len(crashers), plateau(r))
		harnessCrashes += judgeCrashers(p, h, probe.Str(r, "engine"), crashers, seen)
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
	return fmt.Sprintf("; best: %s (%s)", hs[0].entry, probe.Clip(hs[0].why, 200))
}

// judgeCrashers replays a session's crashers on their harness, reports
// the library bugs and returns how many were the harness's.
func judgeCrashers(p *probe.Probe, h *genHarness, engine string, crashers []fleet.Result, seen map[string]bool) int {
	n := 0
	for i, c := range crashers {
		if i == genCrashers || !p.Room(2) {
			break
		}
		kind, state := probe.Str(c, "outcome"), probe.Str(c, "crash_state")
		if seen[kind+"|"+state] {
			continue
		}
		seen[kind+"|"+state] = true
		if probe.Flag(c, "input_truncated") || probe.Flag(c, "input_lossy") {
			p.Notef("a %d-byte crasher of %s cannot be carried in a repro", probe.Int(c, "input_bytes"), h.target)
			continue
		}
		args := map[string]any{"harness": h.target, "replay": probe.Str(c, "input")}
		rep := p.Call("qa_fuzz", args)
		verdict := probe.Str(rep, "verdict")
		if !rep.IsOK() {
			p.Notef("replaying a crasher of %s: %s", h.target, probe.Clip(rep.Err(), 200))
			continue
		}
		if verdict != "library" {
			if verdict == "harness" || verdict == "outside" {
				n++
			}
			p.Notef("not reported: a %s crash of %s (%s): %s", verdict, h.target, probe.Clip(state, 160), probe.Clip(probe.Str(rep, "verdict_why"), 200))
			continue
		}
		// The replay's crash is the one reported: an engine's hang or
		// resource report that replays as a crash is that crash, and two
		// sessions' crashers that replay as one state are one finding.
		rstate := probe.Str(rep, "crash_state")
		if seen["replay|"+rstate] {
			continue
		}
		seen["replay|"+rstate] = true
		sev, flaky, also := fleet.SeverityHigh, "", ""
		if probe.Str(rep, "outcome") != "crashed" {
			sev, flaky = fleet.SeverityLow, fmt.Sprintf(" Flaky: replaying it gave %s.", probe.Str(rep, "outcome"))
		} else if kind != "crashed" {
			also = fmt.Sprintf(" (the engine saw a %s; its replay crashes)", kind)
		}
		p.Report(sev, fleet.Surface("code"),
			fmt.Sprintf("Go library %s: crash %s found by %s through a generated fuzz target (%s)%s; %s. Replaying the repro returns a standalone regression test (%s).%s",
				h.entry, probe.Quote(rstate, 240), engine, h.target, also, probe.Clip(probe.Str(rep, "verdict_why"), 200), probe.Str(rep, "reproducer_path"), flaky),
			"qa_fuzz", args, probe.StateArgs{State: "crashed: " + rstate, Flaky: sev == fleet.SeverityLow})
	}
	return n
}
