package fleet_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/fleet/fleettest"
	"github.com/qafleet/fleetd/trajectory"
)

type env struct {
	t        *testing.T
	reg      *fleet.Registry
	dir      string
	cleanups atomic.Int32
	reports  []fleet.Finding
	calls    map[string]*int
	seq      int
}

func newEnv(t *testing.T) *env {
	e := &env{t: t, reg: fleet.NewRegistry(), dir: t.TempDir(), calls: map[string]*int{}}
	add := func(name string, rung fleet.Dial, fn func(context.Context, json.RawMessage) (fleet.Result, error)) {
		tool, n := fleettest.Tool(name, rung, fn)
		if err := e.reg.Add(tool); err != nil {
			t.Fatal(err)
		}
		e.calls[name] = n
	}
	okCalls := new(int)
	if err := e.reg.Add(fleet.NewTool("qa_ok", "typed, takes no arguments", fleet.Observe, func(context.Context, struct{}) (fleet.Result, error) {
		*okCalls++
		return fleet.OK(map[string]any{"v": 1}), nil
	})); err != nil {
		t.Fatal(err)
	}
	e.calls["qa_ok"] = okCalls
	add("qa_fail", fleet.Observe, func(context.Context, json.RawMessage) (fleet.Result, error) { return fleet.Fail("broken"), nil })
	add("qa_write", fleet.Exercise, func(context.Context, json.RawMessage) (fleet.Result, error) { return fleet.OK(nil), nil })
	add("qa_report", fleet.Observe, func(context.Context, json.RawMessage) (fleet.Result, error) {
		return fleet.OK(map[string]any{"status": "posted"}), nil
	})
	add("qa_budget", fleet.Observe, func(context.Context, json.RawMessage) (fleet.Result, error) {
		return nil, &fleet.BudgetError{Resource: fleet.ResWrites, Limit: 1, Used: 1, Want: 1}
	})
	add("qa_panic", fleet.Observe, func(context.Context, json.RawMessage) (fleet.Result, error) { panic("tool exploded") })
	return e
}

// run runs model through the loop and returns the result and the run record.
func (e *env) run(ctx context.Context, model fleet.Model, mut func(*fleet.LoopConfig)) (fleet.RunResult, *trajectory.Run) {
	e.t.Helper()
	e.seq++
	runID := fmt.Sprintf("r-%d", e.seq)
	w, err := trajectory.Create(filepath.Join(e.dir, "runs"), runID, trajectory.Header{RunID: runID, Specialist: "test"})
	if err != nil {
		e.t.Fatal(err)
	}
	cfg := fleet.LoopConfig{
		RunID: runID, Specialist: "test", Model: model, Tools: e.reg, Dial: fleettest.Dial(fleet.Observe),
		Meter: &fleettest.Meter{}, Record: w,
		Cleanup: func(context.Context) error { e.cleanups.Add(1); return nil },
		Report:  func(_ context.Context, f fleet.Finding) error { e.reports = append(e.reports, f); return nil },
	}
	if mut != nil {
		mut(&cfg)
	}
	res, err := fleet.Run(ctx, cfg)
	if err != nil {
		e.t.Fatalf("Run: %v", err)
	}
	rec, err := trajectory.ReadAll(w.Path())
	if err != nil {
		e.t.Fatalf("read record: %v", err)
	}
	if rec.Footer == nil || rec.Footer.Outcome != res.Outcome {
		e.t.Fatalf("footer %+v, result outcome %s", rec.Footer, res.Outcome)
	}
	return res, rec
}

func turns(r *trajectory.Run) []trajectory.Turn {
	var out []trajectory.Turn
	for _, rec := range r.Records {
		if t, ok := rec.(trajectory.Turn); ok {
			out = append(out, t)
		}
	}
	return out
}

func TestLoopDone(t *testing.T) {
	e := newEnv(t)
	model := &fleettest.Script{Steps: []any{
		fleettest.Calls("qa_ok", map[string]any{}),
		fleettest.Calls("qa_report", map[string]any{}),
		fleet.Step{Done: true, Summary: "all good"},
	}, Usage: fleet.Usage{TokensIn: 10, TokensOut: 5}}
	res, rec := e.run(context.Background(), model, nil)
	if res.Outcome != trajectory.OutcomeDone || res.Summary != "all good" || len(res.Findings) != 1 {
		t.Fatalf("result %+v", res)
	}
	ts := turns(rec)
	if len(ts) != 3 || ts[0].ExecutedAction == nil || ts[0].ExecutedAction.Tool != "qa_ok" || ts[1].Findings != 1 {
		t.Errorf("turns %+v", ts)
	}
	if rec.Footer.Totals.TokensIn != 30 || rec.Footer.Totals.ToolCalls != 2 || rec.Footer.Totals.Findings != 1 {
		t.Errorf("totals %+v", rec.Footer.Totals)
	}
	if e.cleanups.Load() != 1 {
		t.Errorf("cleanup ran %d times", e.cleanups.Load())
	}
	// The model saw the first result before choosing the second call.
	if len(model.States[1].History) != 1 || model.States[1].History[0].Result["v"] != 1 {
		t.Errorf("history at turn 1: %+v", model.States[1].History)
	}
}

func TestLoopDialRefusalIsData(t *testing.T) {
	e := newEnv(t)
	model := &fleettest.Script{Steps: []any{fleettest.Calls("qa_write", map[string]any{})}}
	res, rec := e.run(context.Background(), model, nil)
	ts := turns(rec)
	if res.Outcome != trajectory.OutcomeDone || *e.calls["qa_write"] != 0 {
		t.Fatalf("outcome %s, write calls %d", res.Outcome, *e.calls["qa_write"])
	}
	if ts[0].Validation.Result != trajectory.ValidationRefused || ts[0].ExecutedAction != nil || !strings.Contains(ts[0].Validation.Reason, "needs dial exercise, dial is observe") {
		t.Errorf("turn %+v", ts[0])
	}
	var seen fleet.Exchange = model.States[1].History[0]
	if seen.Verdict != fleet.VerdictRefused || seen.Result.IsOK() {
		t.Errorf("model saw %+v", seen)
	}
}

func TestLoopInvalidArgsAndMalformedRetry(t *testing.T) {
	e := newEnv(t)
	// Invalid arguments are returned to the model as data; a malformed
	// output gets one retry; a second malformed output in a row ends the run.
	model := &fleettest.Script{Steps: []any{
		fleettest.Raw("qa_ok", `{"unexpected":1}`),
		fmt.Errorf("%w: function call args are not JSON", fleet.ErrMalformed),
		fleettest.Calls("qa_ok", map[string]any{}),
		fmt.Errorf("%w: garbage", fleet.ErrMalformed),
		fmt.Errorf("%w: garbage again", fleet.ErrMalformed),
	}}
	res, rec := e.run(context.Background(), model, nil)
	ts := turns(rec)
	if res.Outcome != trajectory.OutcomeHarnessError || !strings.Contains(res.Summary, "malformed 2 times in a row") {
		t.Fatalf("result %+v", res)
	}
	if ts[0].Validation.Result != trajectory.ValidationInvalid || !strings.Contains(ts[0].Validation.Reason, `"unexpected": unknown argument`) {
		t.Errorf("turn 0 %+v", ts[0].Validation)
	}
	if ts[1].Validation.Retries != 1 || model.States[2].Retry == "" {
		t.Errorf("retry not offered: %+v / %q", ts[1].Validation, model.States[2].Retry)
	}
	if model.States[3].Retry != "" {
		t.Error("retry note not cleared after a good step")
	}
	if rec.Footer.HarnessError == "" || e.cleanups.Load() != 1 {
		t.Errorf("footer %+v cleanups %d", rec.Footer, e.cleanups.Load())
	}
}

func TestLoopAutoDisable(t *testing.T) {
	e := newEnv(t)
	var steps []any
	for range 5 {
		steps = append(steps, fleettest.Calls("qa_fail", map[string]any{}))
	}
	model := &fleettest.Script{Steps: steps}
	_, rec := e.run(context.Background(), model, nil)
	if *e.calls["qa_fail"] != 3 {
		t.Errorf("qa_fail ran %d times, want 3 then disabled", *e.calls["qa_fail"])
	}
	var disabled *trajectory.ToolDisabled
	for _, r := range rec.Records {
		if d, ok := r.(trajectory.ToolDisabled); ok {
			disabled = &d
		}
	}
	if disabled == nil || disabled.Tool != "qa_fail" || disabled.Turn != 3 || disabled.Reason != "auto_disabled_after_3_failures" {
		t.Fatalf("tool_disabled record %+v", disabled)
	}
	for _, tl := range model.States[4].Tools {
		if tl.Name == "qa_fail" {
			t.Error("disabled tool still offered to the model")
		}
	}
	ts := turns(rec)
	if !strings.Contains(ts[3].Validation.Reason, "disabled") {
		t.Errorf("call after disable: %+v", ts[3].Validation)
	}
}

func TestLoopBudgets(t *testing.T) {
	e := newEnv(t)
	// Turn budget.
	forever := &fleettest.Script{}
	for range 100 {
		forever.Steps = append(forever.Steps, fleettest.Calls("qa_ok", map[string]any{}))
	}
	res, rec := e.run(context.Background(), forever, func(c *fleet.LoopConfig) { c.Meter = &fleettest.Meter{Budget: fleet.Budget{MaxTurns: 4}} })
	if res.Outcome != trajectory.OutcomeBudgetExhausted || len(turns(rec)) != 4 {
		t.Errorf("turn budget: %s after %d turns", res.Outcome, len(turns(rec)))
	}
	// Token budget: the overspending call does not run.
	before := *e.calls["qa_ok"]
	tok := &fleettest.Script{Steps: forever.Steps, Usage: fleet.Usage{TokensIn: 60, TokensOut: 40}}
	res, _ = e.run(context.Background(), tok, func(c *fleet.LoopConfig) { c.Meter = &fleettest.Meter{Budget: fleet.Budget{MaxTokens: 250}} })
	if res.Outcome != trajectory.OutcomeBudgetExhausted || *e.calls["qa_ok"]-before != 2 {
		t.Errorf("token budget: %s, %d calls ran", res.Outcome, *e.calls["qa_ok"]-before)
	}
	// A tool's budget refusal ends the run and files a budget-exceeded finding.
	n := len(e.reports)
	res, _ = e.run(context.Background(), &fleettest.Script{Steps: []any{fleettest.Calls("qa_budget", map[string]any{})}}, nil)
	if res.Outcome != trajectory.OutcomeBudgetExhausted || len(e.reports) != n+1 || !strings.HasPrefix(e.reports[n].Summary, "budget-exceeded") {
		t.Errorf("tool budget: %s, reports %+v", res.Outcome, e.reports[n:])
	}
	// Deadline.
	res, _ = e.run(context.Background(), forever, func(c *fleet.LoopConfig) { c.Meter = &fleettest.Meter{Expired: true} })
	if res.Outcome != trajectory.OutcomeDeadlineExceeded {
		t.Errorf("deadline: %s", res.Outcome)
	}
}

func TestLoopCancellation(t *testing.T) {
	e := newEnv(t)
	// The kill switch flips during the run: the run stops at the next boundary.
	paused := false
	model := &fleettest.Script{Steps: []any{
		func(*fleet.State) (fleet.Step, error) { return fleettest.Calls("qa_ok", map[string]any{}), nil },
		func(*fleet.State) (fleet.Step, error) {
			paused = true
			return fleettest.Calls("qa_ok", map[string]any{}), nil
		},
		fleettest.Calls("qa_ok", map[string]any{}),
	}}
	res, rec := e.run(context.Background(), model, func(c *fleet.LoopConfig) {
		c.Paused = func() (bool, error) { return paused, nil }
	})
	if res.Outcome != trajectory.OutcomeCancelled || len(turns(rec)) != 2 || !strings.Contains(res.Summary, "kill switch") {
		t.Errorf("pause: %s after %d turns (%s)", res.Outcome, len(turns(rec)), res.Summary)
	}
	// Context cancelled (SIGTERM) mid-run.
	ctx, cancel := context.WithCancel(context.Background())
	model = &fleettest.Script{Steps: []any{
		func(*fleet.State) (fleet.Step, error) {
			cancel()
			return fleettest.Calls("qa_ok", map[string]any{}), nil
		},
		fleettest.Calls("qa_ok", map[string]any{}),
	}}
	res, _ = e.run(ctx, model, nil)
	if res.Outcome != trajectory.OutcomeCancelled {
		t.Errorf("ctx cancel: %s", res.Outcome)
	}
	if got := e.cleanups.Load(); got != 2 {
		t.Errorf("cleanup ran %d times over two cancelled runs", got)
	}
}

func TestLoopPanicsStillCleanUp(t *testing.T) {
	e := newEnv(t)
	res, rec := e.run(context.Background(), &fleettest.Script{Steps: []any{fleettest.Calls("qa_panic", map[string]any{})}}, nil)
	if res.Outcome != trajectory.OutcomeHarnessError || !strings.Contains(rec.Footer.HarnessError, "tool exploded") || e.cleanups.Load() != 1 {
		t.Errorf("tool panic: %s %q cleanups %d", res.Outcome, rec.Footer.HarnessError, e.cleanups.Load())
	}
	boom := &fleettest.Script{Steps: []any{func(*fleet.State) (fleet.Step, error) { panic("model exploded") }}}
	res, _ = e.run(context.Background(), boom, func(c *fleet.LoopConfig) {
		c.Cleanup = func(context.Context) error { e.cleanups.Add(1); panic("cleanup exploded too") }
	})
	if res.Outcome != trajectory.OutcomeHarnessError || e.cleanups.Load() != 2 || !strings.Contains(res.Summary, "cleanup failed") {
		t.Errorf("model panic: %+v cleanups %d", res, e.cleanups.Load())
	}
	// An infrastructure error from a model ends the run as harness_error.
	res, _ = e.run(context.Background(), &fleettest.Script{Steps: []any{errors.New("503 from the API after retries")}}, nil)
	if res.Outcome != trajectory.OutcomeHarnessError || res.Summary != "the model failed: 503 from the API after retries" {
		t.Errorf("model error: %s %q", res.Outcome, res.Summary)
	}
}

func TestLoopRecordSizeBudget(t *testing.T) {
	e := newEnv(t)
	w, err := trajectory.Create(filepath.Join(e.dir, "runs"), "r-size", trajectory.Header{RunID: "r-size"}, trajectory.WithMaxBytes(70<<10))
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 4000)
	tool, _ := fleettest.Tool("qa_big", fleet.Observe, func(context.Context, json.RawMessage) (fleet.Result, error) {
		return fleet.OK(map[string]any{"body": big}), nil
	})
	e.reg.Add(tool)
	model := &fleettest.Script{}
	for range 100 {
		model.Steps = append(model.Steps, fleettest.Calls("qa_big", map[string]any{}))
	}
	res, err := fleet.Run(context.Background(), fleet.LoopConfig{RunID: "r-size", Model: model, Tools: e.reg, Dial: fleettest.Dial(fleet.Observe), Meter: &fleettest.Meter{}, Record: w})
	if err != nil || res.Outcome != trajectory.OutcomeSizeExceeded {
		t.Fatalf("size budget: %v %+v", err, res)
	}
	rec, err := trajectory.ReadAll(w.Path())
	if err != nil || rec.Footer == nil || rec.Footer.Outcome != trajectory.OutcomeSizeExceeded {
		t.Errorf("record after size budget: %v %+v", err, rec.Footer)
	}
}

// TestLoopRecordsPageWrites: the writes a model's renders make (a page's,
// spent on the meter and decided outside any tool call) land in the turn
// that made them, with method and URL, count in the turn's and the run's
// writes, and held ones are counted in the footer and named in the
// summary.
func TestLoopRecordsPageWrites(t *testing.T) {
	e := newEnv(t)
	meter := &fleettest.Meter{}
	var pending []trajectory.PageWrite
	model := &fleettest.Script{Steps: []any{
		func(*fleet.State) (fleet.Step, error) {
			meter.Spend(fleet.ResWrites, 1) // a page's POST, sent
			pending = append(pending, trajectory.PageWrite{Method: "POST", URL: "http://a/x", Via: "page"},
				trajectory.PageWrite{Method: "DELETE", URL: "http://a/y", Held: true, Reason: "held: the dial is observe", Via: "proxy"})
			return fleettest.Calls("qa_ok", map[string]any{}), nil
		},
		fleet.Step{Done: true, Summary: "done"},
	}}
	res, rec := e.run(context.Background(), model, func(c *fleet.LoopConfig) {
		c.Meter = meter
		c.PageWrites = func() []trajectory.PageWrite { out := pending; pending = nil; return out }
	})
	ts := turns(rec)
	if len(ts) != 2 || len(ts[0].PageWrites) != 2 || ts[0].Writes != 1 || len(ts[1].PageWrites) != 0 {
		t.Fatalf("turns %+v", ts)
	}
	if w := ts[0].PageWrites[1]; w.Method != "DELETE" || w.URL != "http://a/y" || !w.Held || w.Reason == "" {
		t.Errorf("held write recorded as %+v", w)
	}
	if tot := rec.Footer.Totals; tot.Writes != 1 || tot.HeldWrites != 1 {
		t.Errorf("totals %+v", tot)
	}
	if !strings.Contains(res.Summary, "1 page writes held") || rec.Footer.FinalSummary != res.Summary {
		t.Errorf("summary %q, footer %q", res.Summary, rec.Footer.FinalSummary)
	}
}

// TestLoopDegraded: a tool result's degraded field (an engine that fell
// back, a failed session naming one) reaches the run's result and footer,
// each degradation once, in the order first met.
func TestLoopDegraded(t *testing.T) {
	e := newEnv(t)
	lf := map[string]any{"component": "libfuzzer engine", "fallback": "go test -fuzz", "cause": "on FuzzParse: parse_test.go:9:2: undefined: seeds"}
	calls := 0
	tool, _ := fleettest.Tool("qa_fuzz", fleet.Observe, func(context.Context, json.RawMessage) (fleet.Result, error) {
		calls++
		if calls == 3 {
			r := fleet.Fail("qa_fuzz: go test -fuzz failed too")
			r[fleet.ResultDegraded] = map[string]any{"component": "libfuzzer engine", "cause": "on FuzzOther: no func FuzzOther"}
			return r, nil
		}
		return fleet.OK(map[string]any{"engine": "go", fleet.ResultDegraded: lf}), nil
	})
	if err := e.reg.Add(tool); err != nil {
		t.Fatal(err)
	}
	model := &fleettest.Script{Steps: []any{
		fleettest.Calls("qa_fuzz", map[string]any{}),
		fleettest.Calls("qa_fuzz", map[string]any{}),
		fleettest.Calls("qa_fuzz", map[string]any{}),
		fleettest.Calls("qa_ok", map[string]any{}),
		fleet.Step{Done: true, Summary: "fuzzed"},
	}}
	res, rec := e.run(context.Background(), model, nil)
	want := []trajectory.Degradation{
		{Component: "libfuzzer engine", Fallback: "go test -fuzz", Cause: "on FuzzParse: parse_test.go:9:2: undefined: seeds"},
		{Component: "libfuzzer engine", Cause: "on FuzzOther: no func FuzzOther"},
	}
	if res.Outcome != trajectory.OutcomeDone || fmt.Sprint(res.Degraded) != fmt.Sprint(want) || fmt.Sprint(rec.Footer.Degraded) != fmt.Sprint(want) {
		t.Errorf("degraded: result %+v, footer %+v", res.Degraded, rec.Footer.Degraded)
	}
	if s := want[0].String(); s != "libfuzzer engine degraded: on FuzzParse: parse_test.go:9:2: undefined: seeds; go test -fuzz ran instead" {
		t.Errorf("String: %s", s)
	}
}
