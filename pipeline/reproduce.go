package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/qafleet/fleetd/fixer"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/qatools"
	"github.com/qafleet/fleetd/sandbox"
)

// replay is how the fix stage replays one tool's repros.
type replay struct {
	input    string // the argument that is the input a regression test holds
	corpus   bool   // the input argument is a `go test fuzz v1` file: the regression test holds its value
	detail   string // the result field with the failure's output
	outcomes []string
}

// reproTools are the repros the fix stage can replay: the tool, the
// argument that is the input a regression test holds, and the outcomes
// that mean "still broken".
var reproTools = map[string]replay{
	"qa_compile": {input: "source", detail: "stderr_tail", outcomes: []string{qatools.Crashed, qatools.TimedOut, qatools.Resource}},
	// A Go fuzz target's crasher replayed through the target (qa_fuzz
	// engine go): the best case for the fix stage, whose regression test is
	// that same input as a corpus file.
	"qa_fuzz": {input: "replay", corpus: true, detail: "stderr_head", outcomes: []string{qatools.Crashed, qatools.TimedOut, qatools.Resource}},
	// A finding only two identities show (issue 33): qa_authz signs in
	// fresh identities of its own each time, so the replay needs nothing
	// of the run that found it. It has no input a regression test holds.
	"qa_authz": {detail: "detail", outcomes: []string{qatools.AuthzReproduced}},
}

// toolReproducer replays a repro the way `fleetd tool call` does: a fresh
// sandbox run, the same registry, dial gate and fences as a probe, cleanup
// after.
type toolReproducer struct {
	tools      *qatools.Env
	dial       fleet.DialSource
	sandboxDir string
	budget     fleet.Budget
}

var _ fixer.Reproducer = (*toolReproducer)(nil)

// Reproduce replays repro. The error is a tool the fix stage does not
// replay, a replay the tool refused or could not run, a call that erred
// (the tool's error, or the call cut short: the budget spent, cancelled),
// or the sandbox's. A call that ran and erred comes back with the error
// as its Reproduction: the call's error and whole result, and what it
// left on the platform, for the job to keep.
func (r *toolReproducer) Reproduce(ctx context.Context, repro fleet.Repro) (fixer.Reproduction, error) {
	spec, ok := reproTools[repro.Tool]
	if !ok {
		return fixer.Reproduction{}, fmt.Errorf("the fix stage replays %s repros only, not %s", strings.Join(slices.Sorted(maps.Keys(reproTools)), ", "), repro.Tool)
	}
	runID := sandbox.NewRunID(time.Now())
	sb, err := sandbox.Open(r.sandboxDir, runID)
	if err != nil {
		return fixer.Reproduction{}, err
	}
	run := &qatools.Run{ID: runID, Source: "qa-fixer", Sandbox: sb, Meter: sandbox.NewMeter(r.budget)}
	reg, err := qatools.NewRegistry(r.tools, run, repro.Tool)
	if err != nil {
		sb.Discard() // the run never started
		return fixer.Reproduction{}, err
	}
	out, derr := reg.Dispatch(ctx, r.dial, repro.Tool, repro.Args)
	cerr := qatools.CleanupRun(context.WithoutCancel(ctx), r.tools, run)
	if out.Verdict == fleet.VerdictRefused || out.Verdict == fleet.VerdictInvalid || out.Verdict == fleet.VerdictUnknown {
		// The tool did not run: nothing to keep.
		return fixer.Reproduction{}, errors.Join(fmt.Errorf("replay %s: %s: %s", repro.Tool, out.Verdict, out.Result.Err()), cerr)
	}
	res := spec.reproduction(out.Result, repro.Args)
	res.RunID = runID
	if derr != nil || out.Verdict == fleet.VerdictError {
		// The call ran and erred: what it returned is the record of what
		// it did (qa_authz cut short answers ok false with what it wrote,
		// undid and left). It is no verdict on the finding either way.
		res.Reproduced = false
		res.Error, res.Result = out.Result.Err(), out.Result
		if derr == nil {
			derr = fmt.Errorf("replay %s: %s: %s", repro.Tool, out.Verdict, res.Error)
		}
	}
	if derr != nil || cerr != nil {
		return res, errors.Join(derr, cerr)
	}
	return res, nil
}

// reproduction reads what a replay showed from the tool's result and the
// repro's arguments: its outcome and output, and the input a regression
// test holds.
func (spec replay) reproduction(result fleet.Result, args json.RawMessage) fixer.Reproduction {
	var res fixer.Reproduction
	res.Outcome, _ = result["outcome"].(string)
	res.Detail, _ = result[spec.detail].(string)
	res.Reproduced = slices.Contains(spec.outcomes, res.Outcome)
	res.LeftOnPlatform = result.LeftOnPlatform()
	// A generated harness's crash comes back with its standalone
	// reproducer test (qa_fuzz harness=… replay=…): the regression test.
	if p, ok := result["reproducer_path"].(string); ok && p != "" {
		if src, ok := result["reproducer"].(string); ok && src != "" {
			res.Test = &fixer.ReproTest{Path: p, Content: []byte(src)}
		}
	}
	var a map[string]any
	if json.Unmarshal(args, &a) == nil {
		if s, ok := a[spec.input].(string); ok {
			res.Input, res.HasInput = []byte(s), true
			if spec.corpus {
				_, v, err := fixer.DecodeCorpus([]byte(s))
				res.Input, res.HasInput = v, err == nil
			}
		}
	}
	return res
}
