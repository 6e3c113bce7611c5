package qatools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/qafleet/fleetd/clip"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/fuzzing"
	gen "github.com/qafleet/fleetd/fuzzing/harness"
)

// HarnessList is qa_fuzz's harness argument that generates the targets.
const HarnessList = "list"

// fuzzGenerated is qa_fuzz with a harness argument: target.repo has no
// fuzz target of its own, and fuzzing/harness makes them.
func (t *tools) fuzzGenerated(ctx context.Context, a fuzzArgs, d time.Duration) (map[string]any, error) {
	repo := t.env.Target.Repo
	if repo == nil {
		return nil, errors.New("harness needs target.repo (a Go module)")
	}
	memDir, err := t.harnessMemDir()
	if err != nil {
		return nil, err
	}
	mem, err := gen.LoadMemory(memDir)
	if err != nil {
		return nil, err
	}
	if a.Harness == HarnessList {
		return t.listHarnesses(ctx, memDir, mem)
	}
	e := findHarness(mem, a.Harness)
	if e == nil {
		return nil, fmt.Errorf("harness %q was not generated: call qa_fuzz with harness %q first", a.Harness, HarnessList)
	}
	if e.Dropped != "" && a.Replay == "" {
		return nil, fmt.Errorf("harness %s was dropped: %s", a.Harness, e.Dropped)
	}
	engine := a.Engine
	switch engine {
	case "", "auto":
		engine = fuzzing.EngineLibFuzzer
	case fuzzing.EngineLibFuzzer, fuzzing.EngineGo:
	default:
		return nil, fmt.Errorf("a generated harness runs with engine libfuzzer or go, not %s", engine)
	}
	if a.Replay != "" && a.Engine == "" {
		engine = fuzzing.EngineGo // a replay's output is go test's: the stack the judge reads
	}
	sum := sha256.New()
	var files []string
	for p := range mem.Files {
		files = append(files, p)
	}
	sort.Strings(files)
	for _, p := range files {
		sum.Write([]byte(p + "\x00" + mem.Files[p] + "\x00"))
	}
	gf := goFuzz{Package: e.Package, Func: e.Target, Prepare: mem.Prepare, KeyExtra: "-gen" + hex.EncodeToString(sum.Sum(nil))[:12]}
	out, err := t.fuzzGoTarget(ctx, a, engine, d, gf)
	if err != nil {
		return nil, err
	}
	out["harness"], out["entry"] = e.Target, e.ID
	if a.Replay == "" {
		return out, nil
	}
	return t.judgeReplay(out, memDir, mem, e, a.Replay)
}

// judgeReplay judges a replayed crash of a generated harness: a library
// bug gets a reproducer test (kept under the memory directory too); any
// other crash is counted as the harness's and its entry dropped for later
// runs.
func (t *tools) judgeReplay(out map[string]any, memDir string, mem *gen.Memory, e *gen.Entry, input string) (map[string]any, error) {
	outcome := strField(out["outcome"])
	if !fuzzing.Finding(outcome) {
		out["verdict"], out["verdict_why"] = gen.Unknown, "the replay did not fail: "+outcome
		return out, nil
	}
	v := gen.Judge(e, mem.Module, outcome, strField(out["stderr_head"]))
	if outcome == fuzzing.TimedOut {
		// A hang is judged by the stack go test's binary dumped at its
		// timeout (fuzzGo's replay, or libFuzzerHangStack's after a
		// libFuzzer replay): hang_verdict and hang_frame.
		v = gen.Verdict{Verdict: strField(out["hang_verdict"]), Why: strField(out["hang_why"])}
		v.Frame, v.File, _ = strings.Cut(strField(out["hang_frame"]), " ")
		if v.Verdict == "" {
			v = gen.Verdict{Verdict: gen.Unknown, Why: "the hang was not replayed through go test's binary: no stack to judge"}
		}
	}
	out["verdict"], out["verdict_why"] = v.Verdict, v.Why
	if v.Frame != "" {
		out["frame"] = v.Frame + " " + v.File
	}
	switch v.Verdict {
	case gen.Library:
		path, src, err := gen.Reproducer(e, []byte(input))
		if err != nil {
			out["note"] = strings.Join(nonEmpty(strField(out["note"]), "no reproducer: "+err.Error()), "; ")
			return out, nil
		}
		out["reproducer_path"], out["reproducer"] = path, src
		if t.env.FuzzDir != "" {
			keep := filepath.Join(memDir, "repro", filepath.Base(path))
			if err := os.MkdirAll(filepath.Dir(keep), 0o700); err == nil && os.WriteFile(keep, []byte(src), 0o600) == nil {
				out["reproducer_kept"] = keep
			}
		}
	case gen.Misuse, gen.Outside:
		mem.HarnessCrash(e, v.Why)
		out["harness_crashes"] = mem.TotalCrashes()
		if err := mem.Save(memDir); err != nil {
			out["note"] = strings.Join(nonEmpty(strField(out["note"]), "harness memory not kept: "+clip.Text(err.Error(), 200)), "; ")
		}
	}
	return out, nil
}

// listHarnesses discovers target.repo's entry points in a fresh copy,
// generates and compiles their fuzz targets, and remembers them.
func (t *tools) listHarnesses(ctx context.Context, memDir string, mem *gen.Memory) (map[string]any, error) {
	work, src, err := t.fuzzCheckout(ctx, "harness-gen", nil)
	if err != nil {
		return nil, err
	}
	goCmd, err := fuzzing.GoCommand()
	if err != nil {
		return nil, err
	}
	shared := t.env.FuzzDir
	if shared == "" {
		shared = work
	}
	env := fuzzing.GoEnv(goCmd, work, filepath.Join(shared, "go"), 1<<30)
	start := time.Now()
	entries, err := gen.Discover(ctx, src, gen.Options{Env: env, Skip: mem.Dropped})
	if err != nil {
		return nil, err
	}
	entries, err = gen.Generate(ctx, src, goCmd, env, entries)
	if err != nil {
		return nil, err
	}
	var modelNote string
	var modelDeg map[string]any
	if t.env.HarnessModel != nil {
		var meter fleet.Meter
		if t.run.Meter != nil {
			meter = t.run.Meter
		}
		if entries, err = AuthorHarnesses(ctx, src, goCmd, env, entries, HarnessAuthor(t.env.HarnessModel, meter)); err != nil {
			modelNote = "the model's harnesses stopped: " + clip.Text(err.Error(), 200)
			// The configured model (tools.harness_planner) is a capability
			// lost for this run: the run's footer, runs show, the console
			// and /metrics say so, not only this note.
			modelDeg = map[string]any{"component": "harness model", "fallback": "generated harnesses only", "cause": clip.Text(err.Error(), 300)}
		}
	}
	if err := mem.Remember(src, entries); err != nil {
		return nil, err
	}
	if err := mem.Save(memDir); err != nil {
		return nil, err
	}
	var live, dropped []map[string]any
	for _, e := range entries {
		if e.Dropped != "" {
			dropped = append(dropped, map[string]any{"entry": e.ID, "why": e.Dropped})
			continue
		}
		live = append(live, map[string]any{"target": e.Target, "package": e.Package, "entry": e.ID, "kind": e.Kind,
			"shape": e.Shape, "score": e.Score, "why": strings.Join(e.Why, "; "), "reach": e.Reach, "tested": e.Tested})
	}
	for _, id := range mem.DroppedIDs() {
		dropped = append(dropped, map[string]any{"entry": id, "why": mem.Dropped[id]})
	}
	out := map[string]any{"module": mem.Module, "harnesses": live, "dropped": dropped,
		"harness_crashes": mem.TotalCrashes(), "generate_ms": time.Since(start).Milliseconds()}
	if modelNote != "" {
		out["note"] = modelNote
		out[fleet.ResultDegraded] = modelDeg
	}
	return out, nil
}

// findHarness finds a remembered harness by its fuzz target's name, or by
// "<package>:<name>" when two packages have one of that name.
func findHarness(mem *gen.Memory, name string) *gen.Entry {
	pkg, fn, ok := strings.Cut(name, ":")
	if ok {
		return mem.Entry(pkg, fn)
	}
	for _, e := range mem.Entries {
		if e.Target == name {
			return e
		}
	}
	return nil
}

// harnessMemDir is where the generator's memory for target.repo is kept:
// under the fuzz data dir, else in the jail (this run only).
func (t *tools) harnessMemDir() (string, error) {
	key := fuzzing.TargetKey("harness-gen", t.env.Target.Repo.URL)
	if t.env.FuzzDir != "" {
		return filepath.Join(t.env.FuzzDir, key), nil
	}
	if err := t.run.Sandbox.Root().MkdirAll("fuzz", 0o700); err != nil {
		return "", err
	}
	return filepath.Join(t.run.Sandbox.JailDir(), "fuzz", key), nil
}
