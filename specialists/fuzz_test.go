package specialists

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/specialists/replay"
)

// fakeCompile answers qa_compile like the tool: outcome, and crash_state
// for crashes and hangs.
type fakeCompile func(src string, timeoutMS int) fleet.Result

func (f fakeCompile) handler(calls *[]map[string]any) func(map[string]any) fleet.Result {
	return func(a map[string]any) fleet.Result {
		*calls = append(*calls, a)
		ms, _ := replay.Num(a, "timeout_ms")
		if b64, ok := a["source_base64"].(string); ok {
			b, err := base64.StdEncoding.DecodeString(b64)
			if err != nil {
				return fleet.Fail("qa_compile: source_base64 is not base64: %v", err)
			}
			return f(string(b), int(ms))
		}
		return f(a["source"].(string), int(ms))
	}
}

// TestFuzzEngineBinaryCrasher: an engine's crasher that is not UTF-8 is
// replayed from its base64 bytes (its input field has replacement
// characters), minimized, and posted with a source_base64 repro that holds
// the failing bytes.
func TestFuzzEngineBinaryCrasher(t *testing.T) {
	var calls []map[string]any
	cc := fakeCompile(func(src string, _ int) fleet.Result {
		if strings.Contains(src, "\xff\xfe") {
			return fleet.Result{"outcome": "crashed", "exit_code": -1, "signal": "segmentation fault", "crash_state": "SIGSEGV @ read_header"}
		}
		return fleet.Result{"outcome": "rejected", "exit_code": 1}
	})
	found := []byte("IMG\x00\x01\xff\xfe\x02 tail")
	w := &world{dial: fleet.Observe, handlers: map[string]func(map[string]any) fleet.Result{
		"qa_compile": cc.handler(&calls),
		"qa_fuzz": func(a map[string]any) fleet.Result {
			if a["engine"] == "auto" {
				return fleet.Result{"engine": "aflpp", "execs": 900, "crashers": []map[string]any{{
					"input": strings.ToValidUTF8(string(found), "\uFFFD"), "input_lossy": true,
					"input_base64": base64.StdEncoding.EncodeToString(found), "input_bytes": len(found),
					"outcome": "crashed", "crash_state": "SIGSEGV @ read_header",
				}}}
			}
			return fleet.Result{"engine": "builtin", "execs": 10, "crashers": []any{}}
		},
	}}
	st := fleet.State{RunID: "r-bin", Target: testTarget(), Tools: toolList("qa_compile", "qa_fuzz", "qa_report")}
	drive(t, mustNew(t, "fuzz", Options{Corpus: []string{"let x = 1;\n"}, Caps: map[string]int{"fuzz": 60}}), st, w, 70)
	if len(w.reports) != 1 {
		t.Fatalf("want one finding:%s", summaries(w.reports))
	}
	r := w.reports[0]
	args := r["repro"].(map[string]any)["args"].(map[string]any)
	b, err := base64.StdEncoding.DecodeString(fmt.Sprint(args["source_base64"]))
	if err != nil || !bytes.Contains(b, []byte("\xff\xfe")) || args["source"] != nil || r["severity"] != "high" {
		t.Errorf("finding %v: repro args %v (decoded %q, %v)", r["severity"], args, b, err)
	}
}

// TestFuzzOneFindingPerCrashState: inputs crashing the same way at the same
// place are one finding whatever else differs (here: every input holding
// "{}" crashes with one state, "[]" with another); the repro is minimized
// and replayed before it is reported.
func TestFuzzOneFindingPerCrashState(t *testing.T) {
	var calls []map[string]any
	cc := fakeCompile(func(src string, _ int) fleet.Result {
		switch {
		case strings.Contains(src, "{}"):
			return fleet.Result{"outcome": "crashed", "exit_code": 2, "crash_state": "panic: empty block @ c.block < c.program", "stderr_tail": "panic: empty block " + src}
		case strings.Contains(src, "[]"):
			return fleet.Result{"outcome": "crashed", "exit_code": 2, "crash_state": "panic: empty list @ c.list", "stderr_tail": "panic: empty list"}
		}
		return fleet.Result{"outcome": "rejected", "exit_code": 1, "duration_ms": 3}
	})
	w := &world{dial: fleet.Observe, handlers: map[string]func(map[string]any) fleet.Result{"qa_compile": cc.handler(&calls)}}
	st := fleet.State{RunID: "r-1", Target: testTarget(), Tools: toolList("qa_compile", "qa_report")}
	corpus := []string{"fn main() {\n  let xs = [1, 2];\n  print 1;\n}\n"}
	drive(t, mustNew(t, "fuzz", Options{Corpus: corpus, Caps: map[string]int{"fuzz": 120}}), st, w, 130)
	states := map[string]int{}
	for _, r := range w.reports {
		states[r["state"].(string)]++
		if r["severity"] != "high" || r["flaky"] != nil {
			t.Errorf("a reproducing crash: %v", r)
		}
	}
	want := map[string]int{"crashed: panic: empty block @ c.block < c.program": 1, "crashed: panic: empty list @ c.list": 1}
	if !mapsEqual(states, want) {
		t.Errorf("reported states %v, want %v", states, want)
	}
}

// TestFuzzFlakyCrashIsLow: a crash whose minimized repro does not crash
// when replayed is posted at low with flaky, never at high.
func TestFuzzFlakyCrashIsLow(t *testing.T) {
	var calls []map[string]any
	crashed := 0
	cc := fakeCompile(func(src string, _ int) fleet.Result {
		if src == "{}" && crashed < 1 { // crashes once, then never again
			crashed++
			return fleet.Result{"outcome": "crashed", "exit_code": -1, "signal": "segmentation fault", "crash_state": "signal segmentation fault"}
		}
		return fleet.Result{"outcome": "rejected", "exit_code": 1}
	})
	w := &world{dial: fleet.Observe, handlers: map[string]func(map[string]any) fleet.Result{"qa_compile": cc.handler(&calls)}}
	st := fleet.State{RunID: "r-1", Target: testTarget(), Tools: toolList("qa_compile", "qa_report")}
	drive(t, mustNew(t, "fuzz", Options{Caps: map[string]int{"fuzz": 40}}), st, w, 50)
	if len(w.reports) != 1 {
		t.Fatalf("want one finding:%s", summaries(w.reports))
	}
	if r := w.reports[0]; r["severity"] != "low" || r["flaky"] != true || !strings.Contains(r["summary"].(string), "Flaky") {
		t.Errorf("a crash that did not reproduce: %v", r)
	}
}

// TestFuzzHangMinimizedAtShortTimeouts: a hang is minimized with a
// shortened timeout per step, replayed at the configured timeout, and
// reported once, as a hang (medium), with the minimized input.
func TestFuzzHangMinimizedAtShortTimeouts(t *testing.T) {
	var calls []map[string]any
	cc := fakeCompile(func(src string, timeoutMS int) fleet.Result {
		if strings.Contains(src, "while true {}") {
			if timeoutMS == 0 {
				timeoutMS = 5000
			}
			return fleet.Result{"outcome": "timeout", "exit_code": -1, "signal": "killed", "cpu_limited": true,
				"duration_ms": timeoutMS, "timeout_ms": timeoutMS, "crash_state": "hang: " + strings.Join(strings.Fields(src), " ")}
		}
		return fleet.Result{"outcome": "compiled", "exit_code": 0, "duration_ms": 20, "timeout_ms": 5000}
	})
	w := &world{dial: fleet.Observe, handlers: map[string]func(map[string]any) fleet.Result{"qa_compile": cc.handler(&calls)}}
	st := fleet.State{RunID: "r-1", Target: testTarget(), Tools: toolList("qa_compile", "qa_report")}
	corpus := []string{"let a = 1;\nwhile a < 3 { a = a + 1; }\nprint a;\n"}
	drive(t, mustNew(t, "fuzz", Options{Corpus: corpus, Caps: map[string]int{"fuzz": 120}}), st, w, 130)
	if len(w.reports) != 1 {
		t.Fatalf("want one hang finding:%s", summaries(w.reports))
	}
	r := w.reports[0]
	src := r["repro"].(map[string]any)["args"].(map[string]any)["source"].(string)
	if r["severity"] != "medium" || src != "while true {}" || r["state"] != "timeout: hang: while true {}" || !strings.Contains(r["summary"].(string), "Compiler hang") {
		t.Errorf("hang finding %v", r)
	}
	if _, has := r["repro"].(map[string]any)["args"].(map[string]any)["timeout_ms"]; has {
		t.Error("the repro must replay at the configured timeout")
	}
	short, full := 0, 0
	for _, c := range calls {
		if strings.Contains(c["source"].(string), "while true {}") {
			if c["timeout_ms"] != nil {
				short++
				if ms, _ := replay.Num(c, "timeout_ms"); ms != 1000 {
					t.Errorf("step timeout %v ms, want 1000 (20 x the 20 ms compile, at least 1 s, at most half of 5 s)", ms)
				}
			} else {
				full++
			}
		}
	}
	if short == 0 || full != 2 { // found at full, minimized short, replayed at full
		t.Errorf("hang compiles: %d at a short timeout, %d at the configured one", short, full)
	}
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestFuzzEngineStage: qa_fuzz sessions run (auto, then the built-in
// engine after an AFL++ one) and their crashers are replayed, minimized
// and reported through qa_compile like any other input.
func TestFuzzEngineStage(t *testing.T) {
	var calls []map[string]any
	var sessions []string
	cc := fakeCompile(func(src string, _ int) fleet.Result {
		if strings.Contains(src, "@@") {
			return fleet.Result{"outcome": "crashed", "exit_code": -1, "signal": "aborted", "crash_state": "panic: at-at @ c.lex"}
		}
		return fleet.Result{"outcome": "rejected", "exit_code": 1}
	})
	w := &world{dial: fleet.Observe, handlers: map[string]func(map[string]any) fleet.Result{
		"qa_compile": cc.handler(&calls),
		"qa_fuzz": func(a map[string]any) fleet.Result {
			sessions = append(sessions, a["engine"].(string))
			if a["engine"] == "auto" {
				return fleet.Result{"engine": "aflpp", "execs": 900, "crashers": []map[string]any{
					{"input": "let x = 1; @@ print x;", "outcome": "crashed", "crash_state": "panic: at-at @ c.lex"},
					{"input": "cut", "input_truncated": true},
				}}
			}
			return fleet.Result{"engine": "builtin", "execs": 1200, "crashers": []any{}}
		},
	}}
	st := fleet.State{RunID: "r-1", Target: testTarget(), Tools: toolList("qa_compile", "qa_fuzz", "qa_report")}
	_, summary := drive(t, mustNew(t, "fuzz", Options{Corpus: []string{"let x = 1;\nprint x;\n"}, Caps: map[string]int{"fuzz": 60}}), st, w, 70)
	if strings.Join(sessions, ",") != "auto,builtin" {
		t.Errorf("sessions %v, want auto then builtin", sessions)
	}
	if len(w.reports) != 1 {
		t.Fatalf("want one finding:%s", summaries(w.reports))
	}
	r := w.reports[0]
	if src := r["repro"].(map[string]any)["args"].(map[string]any)["source"]; src != "@@" || r["severity"] != "high" || !strings.Contains(r["summary"].(string), "engine aflpp") {
		t.Errorf("finding %v", r)
	}
	if !strings.Contains(summary, "qa_fuzz engine aflpp ran 900 inputs") {
		t.Errorf("summary %q does not say which engine ran", summary)
	}
}

// TestFuzzRepoGoTarget: a crasher of Go's fuzzer is replayed through
// qa_fuzz replay and reported with that replay as the repro: high when it
// reproduces, low and flaky when it does not.
func TestFuzzRepoGoTarget(t *testing.T) {
	for _, reproduces := range []bool{true, false} {
		input := "go test fuzz v1\n[]byte(\"<template><object>\")\n"
		state := "panic: runtime error: invalid memory address or nil pointer dereference @ html.(*parser).parseCurrentToken"
		w := &world{dial: fleet.Observe, handlers: map[string]func(map[string]any) fleet.Result{
			"qa_fuzz": func(a map[string]any) fleet.Result {
				if a["replay"] != nil {
					if a["replay"] != input || a["engine"] != "go" {
						t.Errorf("replayed %q with engine %v, want the engine that found it", a["replay"], a["engine"])
					}
					if reproduces {
						return fleet.Result{"outcome": "crashed", "crash_state": state}
					}
					return fleet.Result{"outcome": "compiled"}
				}
				return fleet.Result{"engine": "go", "execs": 5000, "crashers": []any{map[string]any{"input": input, "input_bytes": 48, "outcome": "crashed", "crash_state": state}}}
			},
		}}
		tg := testTarget()
		tg.Compiler = nil
		tg.Repo = &fleet.Repo{URL: "/src/parser", FuzzPackage: "./html", FuzzTarget: "FuzzParse", Surfaces: []string{"parser"}}
		st := fleet.State{RunID: "r-1", Target: tg, Tools: toolList("qa_fuzz", "qa_report")}
		drive(t, mustNew(t, "fuzz", Options{}), st, w, 20)
		if len(w.reports) != 1 {
			t.Fatalf("reproduces=%v: want one finding:%s", reproduces, summaries(w.reports))
		}
		r := w.reports[0]
		repro := r["repro"].(map[string]any)
		wantSev := map[bool]string{true: "high", false: "low"}[reproduces]
		if r["severity"] != wantSev || r["surface"] != "parser" || repro["tool"] != "qa_fuzz" || repro["args"].(map[string]any)["replay"] != input || (r["flaky"] == true) == reproduces {
			t.Errorf("reproduces=%v: finding %v", reproduces, r)
		}
	}
}

// TestFuzzRepoHangJudged: a hang in a repository's own fuzz target is
// posted only when its replay's goroutine dump puts the loop in the
// library (or cannot tell); a loop in the fuzz function itself, or in
// code it calls without the module, is noted and not posted.
func TestFuzzRepoHangJudged(t *testing.T) {
	in := map[string]string{"library": "go test fuzz v1\nstring(\"[[[\")\n", "harness": "go test fuzz v1\nstring(\"x\")\n", "outside": "go test fuzz v1\nstring(\"y\")\n"}
	w := &world{dial: fleet.Observe, handlers: map[string]func(map[string]any) fleet.Result{
		"qa_fuzz": func(a map[string]any) fleet.Result {
			if a["replay"] != nil {
				for v, input := range in {
					if a["replay"] == input {
						return fleet.Result{"outcome": "timeout", "crash_state": "hang: " + v, "hang_verdict": v, "hang_frame": "p." + v + "Loop p.go:7", "hang_why": "because " + v}
					}
				}
				t.Errorf("replayed %v", a["replay"])
				return fleet.Result{"outcome": "compiled"}
			}
			var cs []any
			for _, v := range []string{"library", "harness", "outside"} {
				cs = append(cs, map[string]any{"input": in[v], "input_bytes": len(in[v]), "outcome": "timeout", "crash_state": "hang: " + v})
			}
			return fleet.Result{"engine": "go", "execs": 5000, "crashers": cs}
		},
	}}
	tg := testTarget()
	tg.Compiler = nil
	tg.Repo = &fleet.Repo{URL: "/src/p", FuzzPackage: "./p", FuzzTarget: "FuzzParse"}
	st := fleet.State{RunID: "r-1", Target: tg, Tools: toolList("qa_fuzz", "qa_report")}
	_, summary := drive(t, mustNew(t, "fuzz", Options{}), st, w, 30)
	if len(w.reports) != 1 || w.reports[0]["severity"] != "medium" || !strings.Contains(w.reports[0]["summary"].(string), "hang: library") {
		t.Fatalf("want the library's hang alone, at medium:%s", summaries(w.reports))
	}
	for _, want := range []string{"not reported: a hang of Go fuzz target FuzzParse in ./p whose loop is not the library's (harness at p.harnessLoop p.go:7)", "(outside at p.outsideLoop p.go:7)"} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary lacks %q:\n%s", want, summary)
		}
	}
}

// TestFuzzHarness: a C harness with a build command and no compiler gets
// an AFL++ session; the summary says which mode ran and why, and a binary
// crasher is replayed in base64 on the instrumented build before it is
// reported: high when it reproduces, low and flaky when it does not.
func TestFuzzHarness(t *testing.T) {
	for _, reproduces := range []bool{true, false} {
		b64 := "UgUA4cI/ejA=" // R\x05\x00 and the magic: not UTF-8
		state := "signal aborted"
		var replays int
		w := &world{dial: fleet.Observe, handlers: map[string]func(map[string]any) fleet.Result{
			"qa_fuzz": func(a map[string]any) fleet.Result {
				if a["engine"] != "aflpp" {
					t.Errorf("engine %v, want aflpp", a["engine"])
				}
				if a["replay_base64"] != nil {
					replays++
					if a["replay_base64"] != b64 {
						t.Errorf("replayed %v, want the crasher's base64", a["replay_base64"])
					}
					if reproduces {
						return fleet.Result{"outcome": "crashed", "crash_state": state}
					}
					return fleet.Result{"outcome": "compiled"}
				}
				return fleet.Result{"engine": "aflpp", "mode": "instrumented+persistent", "mode_why": "its harness links AFL++'s persistent loop", "execs": 5000,
					"crashers": []any{map[string]any{"input": "R\x05\x00\ufffd?z0", "input_lossy": true, "input_base64": b64, "input_bytes": 8, "outcome": "crashed", "crash_state": state}}}
			},
		}}
		tg := testTarget()
		tg.Compiler = nil
		tg.Repo = &fleet.Repo{URL: "/src/rec", Harness: "fuzz/harness.c", Build: []string{"make", "OUT={out}"}, Surfaces: []string{"parser"}}
		st := fleet.State{RunID: "r-1", Target: tg, Tools: toolList("qa_fuzz", "qa_report")}
		_, summary := drive(t, mustNew(t, "fuzz", Options{}), st, w, 20)
		if len(w.reports) != 1 || replays != 1 {
			t.Fatalf("reproduces=%v: %d replays, want one finding:%s", reproduces, replays, summaries(w.reports))
		}
		r := w.reports[0]
		args := r["repro"].(map[string]any)["args"].(map[string]any)
		wantSev := map[bool]string{true: "high", false: "low"}[reproduces]
		if r["severity"] != wantSev || r["surface"] != "parser" || args["replay_base64"] != b64 || args["engine"] != "aflpp" || (r["flaky"] == true) == reproduces ||
			!strings.Contains(r["summary"].(string), "harness fuzz/harness.c") {
			t.Errorf("reproduces=%v: finding %v", reproduces, r)
		}
		if !strings.Contains(summary, "AFL++ (instrumented+persistent: its harness links AFL++'s persistent loop) on harness fuzz/harness.c ran 5000 inputs") {
			t.Errorf("summary %q does not say which mode ran and why", summary)
		}
	}
}

// TestFuzzRepoAndCompilerShareTheCap: with both a compiler and a Go fuzz
// target, the Go target still gets its two sessions (compiler havoc runs
// to the cap).
func TestFuzzRepoAndCompilerShareTheCap(t *testing.T) {
	var calls []map[string]any
	goSessions := 0
	w := &world{dial: fleet.Observe, handlers: map[string]func(map[string]any) fleet.Result{
		"qa_compile": fakeCompile(func(string, int) fleet.Result { return fleet.Result{"outcome": "rejected", "exit_code": 1} }).handler(&calls),
		"qa_fuzz": func(a map[string]any) fleet.Result {
			if a["engine"] == "libfuzzer" { // the Go fuzz target's session (qa_fuzz falls back to go)
				goSessions++
			}
			return fleet.Result{"engine": a["engine"], "crashers": []any{}}
		},
	}}
	tg := testTarget()
	tg.Repo = &fleet.Repo{URL: "/src/c", FuzzPackage: "./c", FuzzTarget: "FuzzCompile"}
	st := fleet.State{RunID: "r-1", Target: tg, Tools: toolList("qa_compile", "qa_fuzz", "qa_report")}
	drive(t, mustNew(t, "fuzz", Options{Corpus: []string{"let a = 1;\n"}, Caps: map[string]int{"fuzz": 40}}), st, w, 50)
	if goSessions != 2 || len(calls) < 20 {
		t.Errorf("go sessions %d, compiles %d", goSessions, len(calls))
	}
}

// TestFuzzRepoPlateau: the Go fuzz target's second session goes to the
// engine still finding new coverage: libFuzzer again while it finds some,
// go test -fuzz when libFuzzer is on a plateau and go is not (by the kept
// statistics the first result carries), none when both are on one.
func TestFuzzRepoPlateau(t *testing.T) {
	for _, tt := range []struct {
		name    string
		first   fleet.Result
		want    string // engines and seconds, in order
		noteHas string
	}{
		{"finding new coverage", fleet.Result{"new_coverage": true, "plateau_sessions": 0, "engine_plateaus": map[string]any{"libfuzzer": 0}}, "libfuzzer:30 libfuzzer:30", ""},
		{"libfuzzer on a plateau", fleet.Result{"new_coverage": false, "plateau_sessions": 4, "engine_plateaus": map[string]any{"libfuzzer": 4, "go": 1}}, "libfuzzer:30 go:30", "libfuzzer is on a plateau (4 sessions"},
		{"go never ran", fleet.Result{"new_coverage": false, "plateau_sessions": 3, "engine_plateaus": map[string]any{"libfuzzer": 3}}, "libfuzzer:30 go:30", "libfuzzer is on a plateau"},
		{"both on a plateau", fleet.Result{"new_coverage": false, "plateau_sessions": 5, "engine_plateaus": map[string]any{"libfuzzer": 5, "go": 3}}, "libfuzzer:30", "every engine on a plateau (libfuzzer 5, go 3 sessions"},
		{"libfuzzer degraded", fleet.Result{"engine": "go", fleet.ResultDegraded: map[string]any{"component": "libfuzzer engine", "fallback": "go test -fuzz", "cause": "on FuzzParse: p_test.go:9:2: undefined: seeds"}},
			"libfuzzer:30 go:30", "libfuzzer engine degraded: on FuzzParse: p_test.go:9:2: undefined: seeds; go test -fuzz ran instead"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			w := &world{dial: fleet.Observe, handlers: map[string]func(map[string]any) fleet.Result{
				"qa_fuzz": func(a map[string]any) fleet.Result {
					got = append(got, fmt.Sprintf("%v:%v", a["engine"], a["seconds"]))
					r := fleet.Result{"engine": a["engine"], "crashers": []any{}}
					if len(got) == 1 {
						for k, v := range tt.first {
							r[k] = v
						}
					}
					return r
				},
			}}
			tg := testTarget()
			tg.Compiler = nil
			tg.Repo = &fleet.Repo{URL: "/src/p", FuzzPackage: "./p", FuzzTarget: "FuzzParse"}
			st := fleet.State{RunID: "r-1", Target: tg, Tools: toolList("qa_fuzz", "qa_report")}
			_, summary := drive(t, mustNew(t, "fuzz", Options{}), st, w, 20)
			if strings.Join(got, " ") != tt.want {
				t.Errorf("sessions %q, want %q", strings.Join(got, " "), tt.want)
			}
			if tt.noteHas != "" && !strings.Contains(summary, tt.noteHas) {
				t.Errorf("summary %q lacks %q", summary, tt.noteHas)
			}
		})
	}
}

// TestFuzzEnginePlateau: the engine stage's sessions (engine and seconds,
// in order) follow the kept statistics qa_fuzz returns: unchanged without
// them; with them, a short check of the engine not yet run, the rest of the
// budget to the engine still finding new coverage, and an early stop, said
// in the summary, when every engine is on a plateau.
func TestFuzzEnginePlateau(t *testing.T) {
	type stats struct {
		newCov  bool
		plateau int // -1: no statistics kept
	}
	for _, tt := range []struct {
		name    string
		afl     bool // AFL++ installed: auto runs aflpp
		aflpp   stats
		builtin stats
		want    string
		summary string // a note the summary must hold ("" for none)
		noNote  bool   // the summary must not say all engines are on a plateau
		history bool   // results carry every engine's kept plateau (engine_plateaus)
	}{
		{name: "history: builtin on a plateau, aflpp finding", afl: true, history: true, aflpp: stats{true, 0}, builtin: stats{false, 4}, want: "auto:20 aflpp:20",
			summary: "still finding new coverage", noNote: true},
		{name: "history: both on a plateau, builtin re-checked", afl: true, history: true, aflpp: stats{false, 5}, builtin: stats{false, 4}, want: "auto:20 builtin:5",
			summary: "a 5 s re-check of an engine on a plateau in earlier runs"},
		{name: "no statistics", afl: true, aflpp: stats{false, -1}, builtin: stats{false, -1}, want: "auto:20 builtin:20", noNote: true},
		{name: "no statistics, no AFL++", builtin: stats{false, -1}, want: "auto:20", noNote: true},
		{name: "aflpp on a plateau, builtin finding", afl: true, aflpp: stats{false, 5}, builtin: stats{true, 0}, want: "auto:20 builtin:5 builtin:15",
			summary: "qa_fuzz engine aflpp ran 900 inputs in 20000 ms, 0 crasher(s), on a plateau: no new coverage in 5 sessions", noNote: true},
		{name: "aflpp finding, builtin on a plateau", afl: true, aflpp: stats{true, 0}, builtin: stats{false, 3}, want: "auto:20 builtin:5 aflpp:15",
			summary: "still finding new coverage", noNote: true},
		{name: "both finding", afl: true, aflpp: stats{true, 0}, builtin: stats{true, 0}, want: "auto:20 builtin:5 builtin:15", noNote: true},
		{name: "aflpp finding, builtin short of a plateau", afl: true, aflpp: stats{true, 0}, builtin: stats{false, 1}, want: "auto:20 builtin:5 aflpp:15", noNote: true},
		{name: "neither finding, builtin short of a plateau", afl: true, aflpp: stats{false, 4}, builtin: stats{false, 2}, want: "auto:20 builtin:5 builtin:15",
			summary: "not on a plateau", noNote: true},
		{name: "all on a plateau", afl: true, aflpp: stats{false, 5}, builtin: stats{false, 4}, want: "auto:20 builtin:5",
			summary: "all engines on a plateau (sessions without new coverage: aflpp 5, builtin 4): spent 25 s of the engine stage's 40"},
		{name: "the only engine on a plateau", builtin: stats{false, 7}, want: "auto:20",
			summary: "all engines on a plateau (sessions without new coverage: builtin 7): spent 20 s of the engine stage's 20"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var calls []map[string]any
			var sessions []string
			w := &world{dial: fleet.Observe, handlers: map[string]func(map[string]any) fleet.Result{
				"qa_compile": fakeCompile(func(string, int) fleet.Result { return fleet.Result{"outcome": "rejected", "exit_code": 1} }).handler(&calls),
				"qa_fuzz": func(a map[string]any) fleet.Result {
					secs, _ := replay.Num(a, "seconds")
					sessions = append(sessions, fmt.Sprintf("%v:%v", a["engine"], secs))
					engine, s := "builtin", tt.builtin
					if a["engine"] == "aflpp" || (a["engine"] == "auto" && tt.afl) {
						engine, s = "aflpp", tt.aflpp
					}
					r := fleet.Result{"engine": engine, "execs": 900, "elapsed_ms": int(secs) * 1000, "crashers": []any{}}
					if s.plateau >= 0 {
						r["new_coverage"], r["plateau_sessions"] = s.newCov, s.plateau
					}
					if tt.history {
						r["engine_plateaus"] = map[string]any{"aflpp": tt.aflpp.plateau, "builtin": tt.builtin.plateau}
					}
					return r
				},
			}}
			st := fleet.State{RunID: "r-1", Target: testTarget(), Tools: toolList("qa_compile", "qa_fuzz", "qa_report")}
			_, summary := drive(t, mustNew(t, "fuzz", Options{Corpus: []string{"let x = 1;\nprint x;\n"}, Caps: map[string]int{"fuzz": 60}}), st, w, 70)
			if got := strings.Join(sessions, " "); got != tt.want {
				t.Errorf("sessions %q, want %q", got, tt.want)
			}
			if tt.summary != "" && !strings.Contains(summary, tt.summary) {
				t.Errorf("summary %q does not hold %q", summary, tt.summary)
			}
			if tt.noNote && strings.Contains(summary, "all engines on a plateau") {
				t.Errorf("summary %q says all engines are on a plateau", summary)
			}
			if len(calls) < 20 {
				t.Errorf("only %d compiles: the other stages lost their calls", len(calls))
			}
		})
	}
}

// TestFuzzGenerated: a Go repository without a fuzz target gets generated
// harnesses: each of the best gets a first session, the rest of the time
// goes to the one still finding coverage, and of its crashers only the
// library's bug is reported (once), the harness's misuse counted.
func TestFuzzGenerated(t *testing.T) {
	sessions := map[string]int{}
	replays := 0
	libState, misuseState := "panic: runtime error: slice bounds out of range @ gjson.squash", "panic: nil pointer dereference @ gjson.(*Machine).Feed"
	w := &world{dial: fleet.Observe, handlers: map[string]func(map[string]any) fleet.Result{
		"qa_fuzz": func(a map[string]any) fleet.Result {
			h, _ := a["harness"].(string)
			switch {
			case h == "list":
				return fleet.Result{"module": "github.com/tidwall/gjson", "harness_crashes": 1,
					"harnesses": []any{
						map[string]any{"target": "FuzzGet", "entry": "github.com/tidwall/gjson.Get", "why": "its name says it parses (Get)"},
						map[string]any{"target": "FuzzFeed", "entry": "github.com/tidwall/gjson.(*Machine).Feed", "why": "zero receiver"},
						map[string]any{"target": "FuzzValid", "entry": "github.com/tidwall/gjson.Valid", "why": "Valid"},
					},
					"dropped": []any{map[string]any{"entry": "github.com/tidwall/gjson.Hidden", "why": "does not compile"}}}
			case a["replay"] != nil:
				replays++
				if h == "FuzzFeed" {
					return fleet.Result{"outcome": "crashed", "crash_state": misuseState, "verdict": "harness", "verdict_why": "a nil dereference through a zero-value receiver"}
				}
				return fleet.Result{"outcome": "crashed", "crash_state": libState, "verdict": "library", "verdict_why": "the innermost frame is in the module",
					"reproducer_path": "fleetd_repro_get_test.go"}
			}
			sessions[h]++
			r := fleet.Result{"engine": "libfuzzer", "execs": 1000, "plateau_sessions": 1, "new_coverage": false, "crashers": []any{}}
			switch h {
			case "FuzzGet":
				r["new_coverage"], r["plateau_sessions"] = true, 0
				r["crashers"] = []any{map[string]any{"input": "go test fuzz v1\nstring(\"0\")\nstring(\"@\")\n", "outcome": "crashed", "crash_state": libState},
					// libFuzzer's timeout on an input that replays as the same crash: one finding
					map[string]any{"input": "go test fuzz v1\nstring(\"00\")\nstring(\"@@\")\n", "outcome": "timeout", "crash_state": "hang: N"}}
			case "FuzzFeed":
				r["crashers"] = []any{map[string]any{"input": "go test fuzz v1\nstring(\"\")\n", "outcome": "crashed", "crash_state": misuseState}}
			}
			return r
		},
	}}
	r, summary := driveGenerated(t, w, 80)
	args := r["repro"].(map[string]any)["args"].(map[string]any)
	if r["severity"] != "high" || args["harness"] != "FuzzGet" || !strings.Contains(r["summary"].(string), "github.com/tidwall/gjson.Get") {
		t.Errorf("finding %v", r)
	}
	if sessions["FuzzFeed"] != 1 || sessions["FuzzValid"] != 1 || sessions["FuzzGet"] < 3 {
		t.Errorf("sessions %v: each harness one first session, the rest to FuzzGet (still finding coverage)", sessions)
	}
	if replays != 3 {
		t.Errorf("%d replays, want one per crash state the engines saw", replays)
	}
	for _, want := range []string{"3 fuzz target(s) generated for github.com/tidwall/gjson (1 dropped", "not reported: a harness crash of FuzzFeed", "1 harness crash(es) this run"} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary lacks %q:\n%s", want, summary)
		}
	}
}

// TestFuzzGeneratedHang: a hang a generated harness finds is posted when
// its replay times out again and the stack at the timeout is the
// library's (medium, the hang's state), counted when it is the harness's
// own loop, and not posted when the replay finishes.
func TestFuzzGeneratedHang(t *testing.T) {
	hang := func(in string) map[string]any {
		return map[string]any{"input": "go test fuzz v1\nstring(\"" + in + "\")\n", "outcome": "timeout", "crash_state": "hang: " + in}
	}
	w := &world{dial: fleet.Observe, handlers: map[string]func(map[string]any) fleet.Result{
		"qa_fuzz": func(a map[string]any) fleet.Result {
			h, _ := a["harness"].(string)
			switch {
			case h == "list":
				return fleet.Result{"module": "github.com/tidwall/gjson", "harnesses": []any{
					map[string]any{"target": "FuzzGet", "entry": "github.com/tidwall/gjson.Get"},
					map[string]any{"target": "FuzzLoop", "entry": "github.com/tidwall/gjson.Loop"},
					map[string]any{"target": "FuzzSlow", "entry": "github.com/tidwall/gjson.Slow"}}}
			case a["replay"] != nil && h == "FuzzGet":
				return fleet.Result{"outcome": "timeout", "crash_state": "hang: #(a%*a*b)", "verdict": "library",
					"verdict_why": "the hung goroutine's innermost frame in the module is github.com/tidwall/gjson.queryMatches", "reproducer_path": "fleetd_repro_get_test.go"}
			case a["replay"] != nil && h == "FuzzLoop":
				return fleet.Result{"outcome": "timeout", "crash_state": "hang: x", "verdict": "harness", "verdict_why": "the hung goroutine is in the harness's own code"}
			case a["replay"] != nil:
				return fleet.Result{"outcome": "compiled", "verdict": "unknown", "verdict_why": "the replay did not fail: compiled"}
			}
			r := fleet.Result{"engine": "libfuzzer", "execs": 100, "plateau_sessions": 3, "new_coverage": false}
			r["crashers"] = []any{hang(map[string]string{"FuzzGet": "#(a%*a*b)", "FuzzLoop": "x", "FuzzSlow": "y"}[h])}
			return r
		},
	}}
	r, summary := driveGenerated(t, w, 40)
	if r["severity"] != "medium" || !strings.Contains(r["summary"].(string), "hang") || !strings.Contains(r["summary"].(string), "gjson.queryMatches") {
		t.Errorf("finding %v", r)
	}
	for _, want := range []string{"not reported: a harness hang of FuzzLoop", "not reported: an unknown hang of FuzzSlow", "1 harness crash(es) this run"} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary lacks %q:\n%s", want, summary)
		}
	}
}

// driveGenerated runs the fuzz playbook on a Go repository given only as
// target.repo (w answers qa_fuzz) and returns its one finding and the
// summary; more or fewer findings fail the test.
func driveGenerated(t *testing.T, w *world, turns int) (fleet.Result, string) {
	t.Helper()
	tg := testTarget()
	tg.Compiler = nil
	tg.Repo = &fleet.Repo{URL: "/src/gjson"}
	st := fleet.State{RunID: "r-1", Target: tg, Tools: toolList("qa_fuzz", "qa_report")}
	_, summary := drive(t, mustNew(t, "fuzz", Options{}), st, w, turns)
	if len(w.reports) != 1 {
		t.Fatalf("want one finding (the library's bug):%s", summaries(w.reports))
	}
	return w.reports[0], summary
}

// TestFuzzHangNoteInFinding: a hang confirmed only by wall time (qa_fuzz's
// note on the session's crasher and on its replay) says so in its
// finding's text, once, and in the run's summary, which `fleetd runs
// show` prints; for a Go fuzz target of the repository and for a
// generated one. Before, the note never reached either.
func TestFuzzHangNoteInFinding(t *testing.T) {
	const note = "hang confirmed only by wall time: its replay ran out of its 10s limit on 1.1s of CPU, and 1.2s of CPU again in 40s: blocked (a sleep, a lock, a channel) or starved by a loaded machine, not shown to spin"
	check := func(t *testing.T, finding fleet.Result, summary string) {
		t.Helper()
		text, _ := finding["summary"].(string)
		if finding["severity"] != "medium" || strings.Count(text, note) != 1 || !strings.Contains(text, "Note: "+note) {
			t.Errorf("the finding does not carry the note once: %v", finding)
		}
		if !strings.Contains(summary, note) {
			t.Errorf("the run's summary lacks the note:\n%s", summary)
		}
	}
	t.Run("repository target", func(t *testing.T) {
		input := "go test fuzz v1\nstring(\"[[[\")\n"
		w := &world{dial: fleet.Observe, handlers: map[string]func(map[string]any) fleet.Result{
			"qa_fuzz": func(a map[string]any) fleet.Result {
				if a["replay"] != nil {
					return fleet.Result{"outcome": "timeout", "crash_state": "hang: p.Scan", "hang_verdict": "library", "hang_frame": "p.Scan p.go:7", "hang_why": "a loop in the library", "note": note}
				}
				return fleet.Result{"engine": "go", "execs": 5000, "crashers": []any{map[string]any{"input": input, "input_bytes": len(input), "outcome": "timeout", "crash_state": "hang: p.Scan", "note": note}}}
			},
		}}
		tg := testTarget()
		tg.Compiler = nil
		tg.Repo = &fleet.Repo{URL: "/src/p", FuzzPackage: "./p", FuzzTarget: "FuzzParse"}
		st := fleet.State{RunID: "r-1", Target: tg, Tools: toolList("qa_fuzz", "qa_report")}
		_, summary := drive(t, mustNew(t, "fuzz", Options{}), st, w, 30)
		if len(w.reports) != 1 {
			t.Fatalf("want one finding:%s", summaries(w.reports))
		}
		check(t, w.reports[0], summary)
	})
	t.Run("generated target", func(t *testing.T) {
		w := &world{dial: fleet.Observe, handlers: map[string]func(map[string]any) fleet.Result{
			"qa_fuzz": func(a map[string]any) fleet.Result {
				switch {
				case a["harness"] == "list":
					return fleet.Result{"module": "github.com/tidwall/gjson", "harnesses": []any{map[string]any{"target": "FuzzGet", "entry": "github.com/tidwall/gjson.Get"}}}
				case a["replay"] != nil:
					return fleet.Result{"outcome": "timeout", "crash_state": "hang: gjson.queryMatches", "verdict": "library", "note": note,
						"verdict_why": "the hung goroutine's innermost frame in the module is github.com/tidwall/gjson.queryMatches", "reproducer_path": "fleetd_repro_get_test.go"}
				}
				return fleet.Result{"engine": "go", "execs": 100, "crashers": []any{map[string]any{"input": "go test fuzz v1\nstring(\"#\")\n", "outcome": "timeout", "crash_state": "hang: gjson.queryMatches", "note": note}}}
			},
		}}
		finding, summary := driveGenerated(t, w, 40)
		check(t, finding, summary)
	})
}
