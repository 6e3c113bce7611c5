package qatools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/poster"
)

// Reporter posts a finding to the feedback log: a *poster.Poster, whose
// outbox, dedupe and rate limit qa_report relies on. A nil error
// acknowledges the finding (posted, queued, a duplicate, or over its
// source's rate limit); an error wrapping poster.ErrRejected means the log
// refuses its text; any other error means nothing could be acknowledged.
type Reporter interface {
	Report(ctx context.Context, f fleet.Finding) (poster.Result, error)
}

// reportArgs are qa_report's arguments; source and run come from the run.
type reportArgs struct {
	Severity string     `json:"severity" enum:"critical,high,medium,low,info" desc:"how bad it is"`
	Surface  string     `json:"surface" desc:"what part of the platform: chain, registry, compiler, face, call, docs, fleet, or another lowercase token" maxlen:"32"`
	Summary  string     `json:"summary" desc:"what is wrong and what was expected, without secrets" maxlen:"1800"`
	Repro    *reproArgs `json:"repro,omitempty" desc:"a machine-runnable reproduction: a qa_* tool call"`
	// State and Flaky: see fuzzState in report_crash.go.
	State string `json:"state,omitempty" desc:"a crash state naming the bug independently of the input (qa_compile's crash_state); findings with one state are one fingerprint" maxlen:"512"`
	Flaky bool   `json:"flaky,omitempty" desc:"the repro did not reproduce when replayed: posted at most low, with flaky=true in the header"`
}

type reproArgs struct {
	Tool string          `json:"tool" desc:"a qa_* tool name"`
	Args json.RawMessage `json:"args" desc:"that tool's arguments"`
}

func (t *tools) report(ctx context.Context, a reportArgs) (fleet.Result, error) {
	if t.env.Reporter == nil {
		return fleet.Fail("qa_report: no reporter configured"), nil
	}
	sev, err := fleet.ParseSeverity(a.Severity)
	if err != nil {
		return fleet.Fail("%v", err), nil
	}
	surface, err := fleet.ParseSurface(a.Surface)
	if err != nil {
		return fleet.Fail("%v", err), nil
	}
	f := fleet.Finding{Source: t.run.Source, Severity: sev, Surface: surface, Run: t.run.ID, Summary: strings.TrimSpace(a.Summary)}
	if a.Repro != nil {
		if !strings.HasPrefix(a.Repro.Tool, "qa_") {
			return fleet.Fail("repro.tool %q is not a qa_* tool", a.Repro.Tool), nil
		}
		f.Repro = &fleet.Repro{Tool: a.Repro.Tool, Args: a.Repro.Args}
	}
	f = fuzzState(f, a)
	res, err := t.env.Reporter.Report(ctx, f)
	if err != nil {
		if errors.Is(err, poster.ErrRejected) {
			return fleet.Fail("qa_report: %v", err), nil
		}
		return nil, fmt.Errorf("qa_report: %w", err) // the outbox failed: nothing can be acknowledged
	}
	out := map[string]any{"status": string(res.Status), "fp": res.FP}
	switch res.Status {
	case poster.Posted:
		out["entry_id"], out["tx"] = res.Entry.Index, res.Entry.Tx
	case poster.Queued:
		out["queued"] = true
	case poster.Deduped:
		out["deduped"] = true
	case poster.RateLimited:
		r := fleet.Fail("qa_report: rate limited: source %s posted %d findings in the last %s", t.run.Source, res.Limit.PerSource, res.Limit.Window)
		r["status"] = string(res.Status)
		return r, nil
	}
	return fleet.OK(out), nil
}
