package fleet

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/qafleet/fleetd/clip"
	"github.com/qafleet/fleetd/trajectory"
)

// Call is one tool call a model chose.
type Call struct {
	Tool string          `json:"tool"`
	Args json.RawMessage `json:"args"`
	// ID is the provider's id for the call, echoed back with the result.
	ID string `json:"id,omitempty"`
}

// Exchange is one past turn as the model sees it: its call and what came back.
type Exchange struct {
	Call    Call    `json:"call"`
	Verdict Verdict `json:"verdict"`
	Result  Result  `json:"result"`
}

// State is everything a model may base its next step on. The loop owns it;
// a model must not keep references to it between calls.
type State struct {
	RunID      string
	Specialist string
	Goal       string
	Persona    string // the persona prompt (system instruction for model planners)
	Target     Target
	Dial       Dial   // the dial when this turn started
	Tools      []Tool // the tools still enabled, in a stable order
	History    []Exchange
	Turn       int
	// Retry is set when the model's previous output was malformed: what was
	// wrong with it. The model gets MalformedRetries chances to fix it.
	Retry string
	// Ending is set while the loop asks an Ender for its end-of-run calls:
	// why the run ended before the model was done. EndedAt is the
	// history's length when it ended: the calls after it are the Ender's.
	Ending  string
	EndedAt int
}

// Last returns the most recent exchange, if any.
func (s *State) Last() (Exchange, bool) {
	if len(s.History) == 0 {
		return Exchange{}, false
	}
	return s.History[len(s.History)-1], true
}

// Usage is what one model call cost.
type Usage struct {
	TokensIn  int64
	TokensOut int64
}

// Step is a model's decision: a tool call, or done with a summary.
type Step struct {
	Call    *Call
	Done    bool
	Summary string
	Usage   Usage
}

// Model is a planner: an LLM adapter or a deterministic playbook. Next
// returns the next step. An error wrapping ErrMalformed means the model's
// output could not be understood (the loop retries); any other error ends
// the run with outcome harness_error, or cancelled when ctx is done.
type Model interface {
	Next(ctx context.Context, s *State) (Step, error)
}

// Ender is a Model with calls of its own to make when a run ends before
// the model said done (the budget or the deadline spent, a tool's error,
// a cancellation, the kill switch): the undo of what its calls wrote
// (a playbook's DELETE of what its POSTs created). After such an end the
// loop calls End with State.Ending and State.EndedAt set and runs each
// call it returns as a turn of the run (the dial gate and the tools'
// fences as any call; with the kill switch on, refused without running),
// on a context of its own bounded by EndGrace and at most EndCalls of
// them, until it is done; its summary is added to the run's, so what it
// could not undo is listed there. Its calls spend no turns.
type Ender interface {
	End(ctx context.Context, s *State) (Step, error)
}

// Bounds of an Ender's end-of-run calls.
const (
	EndGrace = 30 * time.Second
	EndCalls = 32
)

// ErrMalformed marks model output that is not a usable step.
var ErrMalformed = errors.New("malformed model output")

// Meter is the run's budget counter (sandbox.Meter is one).
type Meter interface {
	Spend(r Resource, n uint64) error
	Deadline() error
	Used(r Resource) uint64
}

// LoopConfig is one run of the agent loop.
type LoopConfig struct {
	RunID      string
	Specialist string
	Goal       string
	Persona    string
	Target     Target
	Model      Model
	Tools      *Registry
	Dial       DialSource
	// Paused is the kill switch, checked at every tool boundary (nil: never).
	Paused func() (bool, error)
	Meter  Meter
	Record *trajectory.Writer
	// Cleanup runs exactly once however the run ends (panic included):
	// release names, sweep funds. Its ctx is not cancelled with the run's.
	Cleanup func(ctx context.Context) error
	// Report files a host-level finding (budget-exceeded); nil skips it.
	// It is not a tool call and never appears as one.
	Report func(ctx context.Context, f Finding) error
	// Narrate receives every turn as it is recorded (live narration).
	Narrate func(TurnEvent)
	// PageWrites returns, and forgets, the writes rendered pages tried
	// since the last call (the rendering crawl's, sent or held): each turn
	// records those of its own time. nil: none.
	PageWrites func() []trajectory.PageWrite
	// MalformedRetries is how many malformed outputs in a row the model may
	// repair (default 1); DisableAfter is how many consecutive failures
	// disable a tool (default 3).
	MalformedRetries int
	DisableAfter     int
}

// TurnEvent is one turn, for narration.
type TurnEvent struct {
	RunID   string
	Index   int
	Tool    string
	Args    json.RawMessage // the call's arguments (untrusted model output)
	Result  Result
	Verdict Verdict
	Error   string
	Latency time.Duration
	Done    bool
	Summary string
}

// RunResult is how a run ended.
type RunResult struct {
	RunID   string
	Outcome trajectory.Outcome
	Summary string
	// Degraded are the capabilities the run fell back from (tool results'
	// degraded fields, ResultDegraded), each once.
	Degraded []trajectory.Degradation
	// Left is what the calls wrote to the platform and could not undo
	// (tool results' left_on_platform, ResultLeftOnPlatform), each once;
	// the summary lists those the model's own summary does not.
	Left     []string
	Totals   trajectory.Totals
	Findings []Result // results of successful qa_report calls
	Err      error    // the harness error, if any
	WeiSpent uint64   // what the run's throwaway keys were funded with
}

// Run drives cfg.Model through the tool loop until the model is done, a
// budget or the deadline runs out, the run is cancelled (ctx, the kill
// switch) or the harness fails. Every turn is recorded before the next one
// starts; the footer is written and Cleanup is run on every path. Run
// returns an error only when the record itself could not be finished.
func Run(ctx context.Context, cfg LoopConfig) (res RunResult, err error) {
	if cfg.MalformedRetries <= 0 {
		cfg.MalformedRetries = 1
	}
	if cfg.DisableAfter <= 0 {
		cfg.DisableAfter = 3
	}
	l := &loop{cfg: cfg, start: time.Now(), failures: map[string]int{}, disabled: map[string]bool{}}
	l.res.RunID = cfg.RunID
	defer func() {
		if p := recover(); p != nil {
			l.noEnd = true
			l.end(trajectory.OutcomeHarnessError, "the harness panicked", fmt.Errorf("panic: %v", p))
		}
		err = l.finish(context.WithoutCancel(ctx))
		res = l.res
	}()
	l.loop(ctx)
	return
}

type loop struct {
	cfg      LoopConfig
	start    time.Time
	state    State
	failures map[string]int
	disabled map[string]bool
	totals   trajectory.Totals
	res      RunResult
	ended    bool
	retries  int
	// writesBefore is the meter's writes when the current turn began.
	writesBefore uint64
	// nextTurn is the index of the next turn recorded.
	nextTurn int
	// noEnd is set when the model, the record or the harness failed:
	// no end-of-run calls (endCalls).
	noEnd bool
}

// end sets the outcome once; the first reason to stop wins.
func (l *loop) end(o trajectory.Outcome, summary string, err error) {
	if l.ended {
		return
	}
	l.ended = true
	l.res.Outcome, l.res.Summary, l.res.Err = o, summary, err
}

func (l *loop) loop(ctx context.Context) {
	cfg := l.cfg
	l.state = State{RunID: cfg.RunID, Specialist: cfg.Specialist, Goal: cfg.Goal, Persona: cfg.Persona, Target: cfg.Target, Tools: cfg.Tools.List()}
	for turn := 0; ; turn++ {
		if l.boundary(ctx) {
			return
		}
		if err := cfg.Meter.Spend(ResTurns, 1); err != nil {
			l.end(trajectory.OutcomeBudgetExhausted, err.Error(), nil)
			return
		}
		l.state.Turn = turn
		l.state.Dial, _ = cfg.Dial.Dial()
		l.nextTurn = turn + 1
		if l.step(ctx, turn) {
			return
		}
	}
}

// boundary checks everything that stops a run between tool calls.
func (l *loop) boundary(ctx context.Context) bool {
	if err := ctx.Err(); err != nil {
		l.end(trajectory.OutcomeCancelled, "cancelled: "+context.Cause(ctx).Error(), nil)
		return true
	}
	if YieldRequested(ctx) {
		l.end(trajectory.OutcomeCancelled, "cancelled: "+ErrYielded.Error(), nil)
		return true
	}
	if l.cfg.Paused != nil {
		if paused, err := l.cfg.Paused(); paused {
			why := "the kill switch is on (fleetd pause)"
			if err != nil {
				why += ": " + err.Error()
			}
			l.end(trajectory.OutcomeCancelled, "cancelled: "+why, nil)
			return true
		}
	}
	if err := l.cfg.Meter.Deadline(); err != nil {
		l.end(trajectory.OutcomeDeadlineExceeded, err.Error(), nil)
		return true
	}
	return false
}

// step runs one turn; it returns true when the run is over.
func (l *loop) step(ctx context.Context, turn int) bool {
	cfg := l.cfg
	started := time.Now()
	obs := map[string]any{"dial": l.state.Dial.String(), "tools": len(l.state.Tools), "history": len(l.state.History)}
	if l.state.Retry != "" {
		obs["retry"] = l.state.Retry
	}
	mStart := time.Now()
	// A turn's writes include the model's: a playbook renders pages, and
	// a page's write spends from the same meter.
	writesBefore := cfg.Meter.Used(ResWrites)
	step, merr := cfg.Model.Next(ctx, &l.state)
	meta := trajectory.ModelMetadata{TokensIn: step.Usage.TokensIn, TokensOut: step.Usage.TokensOut, DurationMS: time.Since(mStart).Milliseconds()}
	l.totals.TokensIn += meta.TokensIn
	l.totals.TokensOut += meta.TokensOut
	tokenErr := cfg.Meter.Spend(ResTokens, uint64(meta.TokensIn+meta.TokensOut))
	rec := trajectory.Turn{Index: turn, Observation: obs, ModelMetadata: meta, StartedAt: started}
	l.writesBefore = writesBefore

	switch {
	case merr != nil && ctx.Err() != nil:
		l.end(trajectory.OutcomeCancelled, "cancelled during the model call", nil)
		return true
	case merr != nil && errors.Is(merr, ErrMalformed) && l.retries < cfg.MalformedRetries:
		l.retries++
		l.state.Retry = merr.Error()
		rec.Validation = trajectory.Validation{Result: trajectory.ValidationInvalid, Reason: merr.Error(), Retries: l.retries}
		return l.write(rec, started, TurnEvent{Index: turn, Verdict: VerdictInvalid, Error: merr.Error()}) || l.tokens(tokenErr)
	case merr != nil:
		// The summary is what `fleetd probe` prints: it names the error
		// (a playbook stopping its run says why; an API says what failed).
		reason := "the model failed: " + clip.Text(oneLine(merr.Error()), 300)
		if errors.Is(merr, ErrMalformed) {
			reason = fmt.Sprintf("the model's output was malformed %d times in a row", l.retries+1)
		}
		rec.Validation = trajectory.Validation{Result: trajectory.ValidationInvalid, Reason: merr.Error(), Retries: l.retries}
		l.write(rec, started, TurnEvent{Index: turn, Verdict: VerdictInvalid, Error: merr.Error()})
		l.noEnd = true
		l.end(trajectory.OutcomeHarnessError, reason, merr)
		return true
	}
	l.retries, l.state.Retry = 0, ""
	if step.Done || step.Call == nil {
		rec.Validation = trajectory.Validation{Result: trajectory.ValidationOK}
		l.write(rec, started, TurnEvent{Index: turn, Done: true, Summary: step.Summary})
		summary := step.Summary
		if summary == "" {
			summary = "done"
		}
		l.end(trajectory.OutcomeDone, summary, nil)
		return true
	}

	call := *step.Call
	action := &trajectory.Action{Tool: call.Tool, Args: validJSON(call.Args)}
	rec.ProposedAction = action
	// The model may have taken minutes to answer (an LLM, or an MCP client
	// whose agent was thinking, or idle): the kill switch, the deadline and
	// ctx are checked again so its call never runs after any of them stopped
	// the run. The call is recorded as proposed and refused.
	if l.boundary(ctx) {
		why := l.res.Summary
		res := Result{"ok": false, "error": why, "latency_ms": 0}
		rec.Result = res
		rec.Validation = trajectory.Validation{Result: trajectory.ValidationRefused, Reason: why}
		l.write(rec, started, TurnEvent{Index: turn, Tool: call.Tool, Args: call.Args, Result: res, Verdict: VerdictRefused, Error: why})
		return true
	}
	if tokenErr != nil {
		// The model's answer overspent the token budget: its call does not run.
		rec.Validation = trajectory.Validation{Result: trajectory.ValidationRefused, Reason: tokenErr.Error()}
		l.write(rec, started, TurnEvent{Index: turn, Tool: call.Tool, Verdict: VerdictRefused, Error: tokenErr.Error()})
		l.budgetExceeded(ctx, tokenErr)
		return true
	}
	var out Outcome
	var herr error
	if l.disabled[call.Tool] {
		out = Outcome{Verdict: VerdictRefused, Result: Fail("tool %s is disabled for the rest of this run after %d consecutive failures", call.Tool, cfg.DisableAfter)}
		out.Result["latency_ms"] = 0
	} else {
		out, herr = cfg.Tools.Dispatch(ctx, cfg.Dial, call.Tool, call.Args)
	}
	rec.Result = out.Result
	if d, ok := out.Result.Degradation(); ok && !slices.Contains(l.res.Degraded, d) {
		l.res.Degraded = append(l.res.Degraded, d)
	}
	for _, s := range out.Result.LeftOnPlatform() {
		if !slices.Contains(l.res.Left, s) {
			l.res.Left = append(l.res.Left, s)
		}
	}
	switch out.Verdict {
	case VerdictRefused:
		rec.Validation = trajectory.Validation{Result: trajectory.ValidationRefused, Reason: out.Result.Err()}
		l.totals.Refusals++
	case VerdictInvalid, VerdictUnknown:
		rec.Validation = trajectory.Validation{Result: trajectory.ValidationInvalid, Reason: out.Result.Err()}
	default:
		rec.Validation = trajectory.Validation{Result: trajectory.ValidationOK}
		rec.ExecutedAction = action
		l.totals.ToolCalls++
	}
	if call.Tool == "qa_report" && out.Verdict == VerdictOK {
		rec.Findings = 1
		l.res.Findings = append(l.res.Findings, out.Result)
	}
	l.state.History = append(l.state.History, Exchange{Call: call, Verdict: out.Verdict, Result: out.Result})
	if l.write(rec, started, TurnEvent{Index: turn, Tool: call.Tool, Args: call.Args, Result: out.Result, Verdict: out.Verdict, Error: out.Result.Err(), Latency: out.Latency}) {
		return true
	}
	if herr != nil {
		switch {
		case errors.Is(herr, ErrBudget):
			l.budgetExceeded(ctx, herr)
		case ctx.Err() != nil:
			l.end(trajectory.OutcomeCancelled, "cancelled during "+call.Tool, nil)
		default:
			l.end(trajectory.OutcomeHarnessError, call.Tool+" failed the run", herr)
		}
		return true
	}
	l.countFailure(call.Tool, out.Verdict, turn)
	return false
}

// tokens ends the run when the model's last call overspent its token budget.
func (l *loop) tokens(err error) bool {
	if err != nil {
		l.end(trajectory.OutcomeBudgetExhausted, err.Error(), nil)
		return true
	}
	return false
}

func (l *loop) budgetExceeded(ctx context.Context, err error) {
	l.end(trajectory.OutcomeBudgetExhausted, err.Error(), nil)
	if l.cfg.Report == nil {
		return
	}
	f := Finding{Source: "qa-" + l.cfg.Specialist, Severity: SeverityInfo, Surface: SurfaceFleet, Run: l.cfg.RunID,
		Summary: fmt.Sprintf("budget-exceeded: run %s of %s stopped: %v", l.cfg.RunID, l.cfg.Specialist, err)}
	if rerr := l.cfg.Report(context.WithoutCancel(ctx), f); rerr == nil {
		l.totals.Findings++
	}
}

// countFailure disables a tool after DisableAfter consecutive failures.
func (l *loop) countFailure(tool string, v Verdict, turn int) {
	if v == VerdictOK || v == VerdictInvalid || v == VerdictUnknown {
		l.failures[tool] = 0
		return
	}
	if l.disabled[tool] {
		return
	}
	l.failures[tool]++
	if l.failures[tool] < l.cfg.DisableAfter {
		return
	}
	l.disabled[tool] = true
	l.state.Tools = slices.DeleteFunc(l.state.Tools, func(t Tool) bool { return t.Name == tool })
	err := l.cfg.Record.WriteToolDisabled(trajectory.ToolDisabled{Tool: tool, Reason: fmt.Sprintf("auto_disabled_after_%d_failures", l.cfg.DisableAfter), Turn: turn + 1})
	if err != nil {
		l.recordFailed(err)
	}
}

// write records a turn and narrates it; it returns true when the record
// cannot take more (the run must end).
func (l *loop) write(rec trajectory.Turn, started time.Time, ev TurnEvent) bool {
	rec.LatencyMS = time.Since(started).Milliseconds()
	rec.Writes = int(l.cfg.Meter.Used(ResWrites) - l.writesBefore)
	if l.cfg.PageWrites != nil {
		rec.PageWrites = l.cfg.PageWrites()
	}
	l.totals.Turns++
	l.totals.Findings += rec.Findings
	l.totals.Writes += rec.Writes
	for _, w := range rec.PageWrites {
		if w.Held {
			l.totals.HeldWrites++
		}
	}
	if err := l.cfg.Record.WriteTurn(rec); err != nil {
		l.recordFailed(err)
		return true
	}
	if l.cfg.Narrate != nil {
		ev.RunID = l.cfg.RunID
		l.cfg.Narrate(ev)
	}
	return false
}

func (l *loop) recordFailed(err error) {
	l.noEnd = true
	if errors.Is(err, trajectory.ErrSizeBudget) {
		l.end(trajectory.OutcomeSizeExceeded, "the run record reached its size budget", nil)
		return
	}
	l.end(trajectory.OutcomeHarnessError, "writing the run record failed", err)
}

// finish runs cleanup and writes the footer, whatever happened before.
func (l *loop) finish(ctx context.Context) error {
	if !l.ended {
		l.noEnd = true
		l.end(trajectory.OutcomeHarnessError, "the loop stopped without an outcome", errors.New("no outcome"))
	}
	l.endCalls(ctx)
	if l.cfg.Cleanup != nil {
		if cerr := safeCleanup(ctx, l.cfg.Cleanup); cerr != nil {
			if l.res.Err == nil {
				l.res.Err = cerr
			}
			l.res.Summary += "; cleanup failed: " + cerr.Error()
		}
	}
	if l.cfg.PageWrites != nil {
		for _, w := range l.cfg.PageWrites() { // tried after the last turn's record
			if w.Held {
				l.totals.HeldWrites++
			}
		}
	}
	var unsaid []string
	for _, s := range l.res.Left {
		if !strings.Contains(l.res.Summary, s) {
			unsaid = append(unsaid, s)
		}
	}
	if len(unsaid) > 0 {
		// A run ended by a call (cancelled, the budget) has no summary of
		// the model's to list them: the footer must (fleetd runs, probe).
		l.res.Summary += "; left on the platform by its calls: " + strings.Join(unsaid, "; ")
	}
	if n := l.totals.HeldWrites; n > 0 {
		// Where the user looks first: the footer's summary (fleetd probe
		// prints it, fleetd runs lists it).
		l.res.Summary += fmt.Sprintf("; %d page writes held by the dial or the write budget (fleetd runs show lists them)", n)
	}
	l.totals.DurationMS = time.Since(l.start).Milliseconds()
	l.res.Totals = l.totals
	l.res.WeiSpent = l.cfg.Meter.Used(ResWei)
	f := trajectory.Footer{Outcome: l.res.Outcome, FinalSummary: l.res.Summary, Totals: l.totals, Degraded: l.res.Degraded}
	if l.res.Outcome == trajectory.OutcomeHarnessError {
		msg := "harness error"
		if l.res.Err != nil {
			msg = l.res.Err.Error()
		}
		f.HarnessError = msg
	}
	return l.cfg.Record.Close(f)
}

// endCalls runs an Ender's end-of-run calls (see Ender) when the run
// ended before the model was done and its record can still take turns.
func (l *loop) endCalls(ctx context.Context) {
	e, ok := l.cfg.Model.(Ender)
	switch l.res.Outcome {
	case trajectory.OutcomeDone, trajectory.OutcomeSizeExceeded:
		return // done: the model made its own end; full: no more turns
	}
	if !ok || l.noEnd {
		return // the model or the record failed: no more turns
	}
	ctx, cancel := context.WithTimeout(ctx, EndGrace)
	defer cancel()
	l.state.Ending, l.state.EndedAt, l.state.Retry = l.res.Summary, len(l.state.History), ""
	for n := 0; ; n++ {
		step, err := safeEnd(ctx, e, &l.state)
		switch {
		case err != nil:
			l.res.Summary += "; its end-of-run calls failed: " + clip.Text(oneLine(err.Error()), 300)
			return
		case step.Done || step.Call == nil:
			if step.Summary != "" {
				l.res.Summary += "; at the run's end: " + step.Summary
			}
			return
		case n == EndCalls:
			l.res.Summary += fmt.Sprintf("; its end-of-run calls stopped after %d", EndCalls)
			return
		}
		if l.endCall(ctx, *step.Call) {
			return
		}
	}
}

// endCall runs and records one end-of-run call; it returns true when the
// record cannot take more.
func (l *loop) endCall(ctx context.Context, call Call) bool {
	started := time.Now()
	turn := l.nextTurn
	l.nextTurn++
	l.writesBefore = l.cfg.Meter.Used(ResWrites)
	action := &trajectory.Action{Tool: call.Tool, Args: validJSON(call.Args)}
	rec := trajectory.Turn{Index: turn, Observation: map[string]any{"ending": l.state.Ending}, ProposedAction: action, StartedAt: started}
	var out Outcome
	if paused, _ := l.paused(); paused {
		out = Outcome{Verdict: VerdictRefused, Result: Result{"ok": false, "error": "refused: the kill switch is on (fleetd pause)", "latency_ms": 0}}
	} else {
		out, _ = l.cfg.Tools.Dispatch(ctx, l.cfg.Dial, call.Tool, call.Args)
	}
	rec.Result = out.Result
	for _, s := range out.Result.LeftOnPlatform() {
		if !slices.Contains(l.res.Left, s) {
			l.res.Left = append(l.res.Left, s)
		}
	}
	if out.Verdict == VerdictOK || out.Verdict == VerdictError {
		rec.Validation, rec.ExecutedAction = trajectory.Validation{Result: trajectory.ValidationOK}, action
		l.totals.ToolCalls++
	} else {
		rec.Validation = trajectory.Validation{Result: trajectory.ValidationRefused, Reason: out.Result.Err()}
		l.totals.Refusals++
	}
	l.state.History = append(l.state.History, Exchange{Call: call, Verdict: out.Verdict, Result: out.Result})
	return l.write(rec, started, TurnEvent{Index: turn, Tool: call.Tool, Args: call.Args, Result: out.Result, Verdict: out.Verdict, Error: out.Result.Err(), Latency: out.Latency})
}

// paused reads the kill switch (false without one).
func (l *loop) paused() (bool, error) {
	if l.cfg.Paused == nil {
		return false, nil
	}
	return l.cfg.Paused()
}

// safeEnd calls e.End, turning a panic into an error.
func safeEnd(ctx context.Context, e Ender, s *State) (step Step, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return e.End(ctx, s)
}

// safeCleanup runs cleanup, turning a panic into an error.
func safeCleanup(ctx context.Context, cleanup func(context.Context) error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("cleanup panicked: %v", p)
		}
	}()
	return cleanup(ctx)
}

// validJSON returns raw if it is valid JSON, else the raw text as a JSON
// string, so a malformed argument blob is still recorded faithfully.
func validJSON(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return nil
	}
	if json.Valid(raw) {
		return raw
	}
	b, _ := json.Marshal(string(raw))
	return b
}

// ToolManifest describes tools for a run record header.
func ToolManifest(tools []Tool) []trajectory.ToolInfo {
	out := make([]trajectory.ToolInfo, len(tools))
	for i, t := range tools {
		schema, _ := json.Marshal(t.Schema)
		sum := sha256.Sum256(schema)
		out[i] = trajectory.ToolInfo{Name: t.Name, Rung: t.Rung.String(), SchemaSHA256: hex.EncodeToString(sum[:])}
	}
	return out
}

// TrajectoryBudget converts a Budget for a run record header.
func TrajectoryBudget(b Budget) trajectory.Budget {
	tb := trajectory.Budget{MaxTurns: b.MaxTurns, MaxWrites: b.MaxWrites, MaxTokens: b.MaxTokens, DeadlineMS: b.Deadline.Milliseconds()}
	if b.MaxWei > 0 {
		tb.MaxWei = fmt.Sprint(b.MaxWei)
	}
	return tb
}

// SummaryLine renders a narration line for one turn.
func (e TurnEvent) SummaryLine() string {
	if e.Done {
		return fmt.Sprintf("turn %d: done: %s", e.Index, oneLine(e.Summary))
	}
	tool := e.Tool
	if tool == "" {
		tool = "(no call)"
	}
	s := fmt.Sprintf("turn %d: %-10s %-8s %5dms", e.Index, tool, e.Verdict, e.Latency.Milliseconds())
	if e.Error != "" {
		s += "  " + clip.Text(oneLine(e.Error), 120)
	}
	return s
}
