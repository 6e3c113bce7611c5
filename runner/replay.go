package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/poster"
	"github.com/qafleet/fleetd/qatools"
	"github.com/qafleet/fleetd/sandbox"
	"github.com/qafleet/fleetd/trajectory"
)

// NotReplayable is LoadReplayable's refusal of a run: not a run id, no such
// record, or a record that cannot be replayed (torn, cut short by a crash,
// another harness version, no tool calls). Trying again will not help.
type NotReplayable struct{ Err error }

func (e *NotReplayable) Error() string { return e.Err.Error() }
func (e *NotReplayable) Unwrap() error { return e.Err }

// The comparisons of one replayed turn with the turn it replays.
const (
	ReplaySame        = "same"         // same verdict and the same salient result fields
	ReplayChanged     = "changed"      // it ran (or did not) differently
	ReplayRefusedNow  = "refused_now"  // it ran then; today's dial refuses it
	ReplayNotReplayed = "not_replayed" // the replay ended first (today's budget, a signal)
)

// ReplayNotPosted is the status qa_report answers in a replay: a replay
// never posts a finding (its findings are on the log from the original run,
// or were refused then), so replaying a run leaves the log alone.
const ReplayNotPosted = "not_posted"

// ReplayRow is one recorded tool call and what it did when replayed.
type ReplayRow struct {
	// Turn is the replay's turn index, RecordedTurn the original's (they
	// differ when the original had turns without a call, such as a model
	// output that had to be repaired). Turn is -1 for a call not replayed.
	Turn         int    `json:"turn"`
	RecordedTurn int    `json:"recorded_turn"`
	Tool         string `json:"tool"`
	Then         string `json:"then"`
	Now          string `json:"now,omitempty"`
	Comparison   string `json:"comparison"`
	Detail       string `json:"detail,omitempty"`
}

// ReplayComparison is what `fleetd runs replay` prints.
type ReplayComparison struct {
	RunID      string         `json:"run_id"`
	ReplayOf   string         `json:"replay_of"`
	Specialist string         `json:"specialist"`
	Dial       string         `json:"dial"`
	RecordedAt string         `json:"recorded_dial"`
	Outcome    string         `json:"outcome"`
	Summary    string         `json:"summary"`
	Turns      []ReplayRow    `json:"turns"`
	Counts     map[string]int `json:"counts"`
	// Names maps the recorded run's throwaway names (and their owners) to
	// the ones the replay minted in their place.
	Names map[string]string `json:"names,omitempty"`
}

// LoadReplayable reads run id's record and checks that it can be replayed:
// a run id, a record that exists, whole (not torn, with a footer that is
// not recovery's), written by this harness version, with tool calls in it.
// Each refusal is a *NotReplayable (the input is wrong; trying again will
// not help); a file that cannot be read is returned as it is.
func LoadReplayable(dataDir, id string) (*trajectory.Run, error) {
	usage := func(format string, args ...any) error {
		return &NotReplayable{Err: fmt.Errorf(format, args...)}
	}
	if !sandbox.ValidRunID(id) {
		return nil, usage("%q is not a run id (fleetd runs lists them)", id)
	}
	path := trajectory.Path(dataDir, id)
	run, err := trajectory.ReadAll(path)
	var ce *trajectory.CorruptError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, usage("no run %q in %s (fleetd runs lists them)", id, filepath.Dir(path))
	case errors.Is(err, trajectory.ErrNoHeader), errors.As(err, &ce):
		return nil, usage("run %s cannot be replayed: %w", id, err)
	case err != nil:
		return nil, err
	}
	h := run.Header
	switch {
	case h.RunID != id:
		return nil, usage("run record %s holds run %q", path, h.RunID)
	case h.HarnessVersion != HarnessVersion:
		return nil, usage("run %s was recorded by harness %q; this fleetd replays %q records", id, h.HarnessVersion, HarnessVersion)
	case run.Torn || run.Footer == nil:
		return nil, usage("run %s is truncated (a crash cut it short or it is still running): its turns are incomplete", id)
	case run.Footer.Outcome == trajectory.OutcomeHarnessError && run.Footer.FinalSummary == trajectory.RecoveredSummary:
		return nil, usage("run %s was cut short by a crash (its footer was written by recovery: %s): its turns are incomplete", id, run.Footer.HarnessError)
	}
	if len(ReplayCalls(run)) == 0 {
		return nil, usage("run %s has no tool calls to replay", id)
	}
	return run, nil
}

// ReplayCalls are the recorded turns that carry a tool call, in order.
func ReplayCalls(run *trajectory.Run) []trajectory.Turn {
	var out []trajectory.Turn
	for _, t := range run.Turns() {
		if replayAction(t) != nil {
			out = append(out, t)
		}
	}
	return out
}

// replayAction is the call a recorded turn made: the executed one when it
// ran (after any argument repair), else the proposed one.
func replayAction(t trajectory.Turn) *trajectory.Action {
	if t.ExecutedAction != nil {
		return t.ExecutedAction
	}
	return t.ProposedAction
}

// cappedDial is the stored dial, lowered to at most max.
type cappedDial struct {
	src fleet.DialSource
	max fleet.Dial
}

func (c cappedDial) Dial() (fleet.Dial, error) {
	d, err := c.src.Dial()
	return min(d, c.max), err
}

// replayReporter is qa_report's reporter in a replay: it checks the finding
// encodes as the poster would and fingerprints it, and posts nothing.
type replayReporter struct{}

func (replayReporter) Report(_ context.Context, f fleet.Finding) (poster.Result, error) {
	f.Fingerprint = fleet.Fingerprint(f)
	text, err := fleet.Format(f)
	if err != nil {
		return poster.Result{}, fmt.Errorf("%w: %w", poster.ErrRejected, err)
	}
	return poster.Result{Status: ReplayNotPosted, FP: f.Fingerprint, Text: text}, nil
}

// ReplayOptions are the knobs of a replay.
type ReplayOptions struct {
	// Persona is the specialist that recorded the run as configured today;
	// nil for one no longer configured (or an MCP session's run): then its
	// recorded goal and the default budget.
	Persona *fleet.Persona
	// CapDial, when set, caps the stored dial for the replay (--dial).
	CapDial *fleet.Dial
	Logger  *slog.Logger
}

// Replay runs orig's tool calls again as a run of its own (through Run, on
// c) and compares them with the recorded ones. The report is returned
// whenever the replay ran, with the error of a run that ended in a harness
// error. A replay posts nothing: qa_report answers ReplayNotPosted.
func Replay(ctx context.Context, c Config, env *Env, orig *trajectory.Run, o ReplayOptions) (*ReplayComparison, error) {
	h := orig.Header
	p := fleet.Persona{Name: h.Specialist, Goal: h.Goal}
	if o.Persona != nil {
		p = *o.Persona
	}
	p.Planner = ""
	p.Goal = fmt.Sprintf("replay of run %s: %s", h.RunID, h.Goal)
	known, err := qatools.NewRegistry(&qatools.Env{}, &qatools.Run{}) // today's tools
	if err != nil {
		return nil, err
	}
	// The recorded manifest's tools that exist today; a call to one that
	// does not is dispatched anyway and comes back "unknown tool".
	p.Tools = nil
	for _, ti := range h.Tools {
		if _, ok := known.Get(ti.Name); ok && !slices.Contains(p.Tools, ti.Name) {
			p.Tools = append(p.Tools, ti.Name)
		}
	}
	if len(p.Tools) == 0 {
		for _, t := range known.List() {
			p.Tools = append(p.Tools, t.Name)
		}
	}
	// A replay posts nothing: not qa_report's findings, not a budget finding.
	dry := *env.Env
	dry.Reporter = replayReporter{}
	renv := *env
	renv.Env = &dry

	var dial fleet.DialSource = env.Control
	if o.CapDial != nil {
		dial = cappedDial{src: env.Control, max: *o.CapDial}
	}
	now, _ := dial.Dial()
	r := newReplayer(ReplayCalls(orig))
	// A tool whose argument schema changed since the recording may answer
	// differently for that reason alone: its rows say so.
	today := map[string]string{}
	for _, ti := range fleet.ToolManifest(known.List()) {
		today[ti.Name] = ti.SchemaSHA256
	}
	for _, ti := range h.Tools {
		if sum, ok := today[ti.Name]; ok && ti.SchemaSHA256 != "" && sum != ti.SchemaSHA256 {
			r.schemaChanged[ti.Name] = true
		}
	}
	res, err := Run(ctx, c, &renv, p, Options{
		Model: r, ModelName: "replay/" + h.RunID, Dial: dial, Logger: o.Logger,
		Config:  map[string]any{"replay_of": h.RunID},
		Narrate: r.observe,
	})
	if res.RunID == "" {
		return nil, err // the run did not start
	}
	rep := &ReplayComparison{RunID: res.RunID, ReplayOf: h.RunID, Specialist: h.Specialist, Dial: now.String(), RecordedAt: h.Dial,
		Outcome: string(res.Outcome), Summary: res.Summary, Turns: r.finish(), Counts: map[string]int{}, Names: r.names}
	for _, row := range rep.Turns {
		rep.Counts[row.Comparison]++
	}
	if err == nil && res.Err != nil {
		err = fmt.Errorf("replay %s ended %s: %w", res.RunID, res.Outcome, res.Err)
	}
	return rep, err
}

// replayer is the model of a replay: it proposes the recorded calls in
// order, their arguments rewritten from the recorded run's throwaway names
// to the replay's, and compares each outcome with the recorded one as the
// loop reports it (observe, the run's narration).
type replayer struct {
	calls []trajectory.Turn
	next  int
	rows  []ReplayRow
	// names maps a recorded name or owner to the replay's; olds are its
	// keys, longest first.
	names map[string]string
	olds  []string
	// schemaChanged holds the tools whose argument schema differs from
	// the recorded manifest's.
	schemaChanged map[string]bool
}

func newReplayer(calls []trajectory.Turn) *replayer {
	return &replayer{calls: calls, names: map[string]string{}, schemaChanged: map[string]bool{}}
}

// Next implements fleet.Model.
func (r *replayer) Next(_ context.Context, _ *fleet.State) (fleet.Step, error) {
	if r.next >= len(r.calls) {
		return fleet.Step{Done: true, Summary: fmt.Sprintf("replayed %d tool calls", len(r.calls))}, nil
	}
	act := replayAction(r.calls[r.next])
	r.next++
	args := act.Args
	if len(args) > 0 {
		args = json.RawMessage(r.rewrite(string(args)))
	}
	return fleet.Step{Call: &fleet.Call{Tool: act.Tool, Args: args}}, nil
}

// observe compares one replayed turn with the recorded one and learns the
// names a qa_create minted and the addresses a qa_login signed in, in
// place of the recorded ones.
func (r *replayer) observe(e fleet.TurnEvent) {
	if e.Done || e.Index >= len(r.calls) || e.Index != len(r.rows) {
		return
	}
	rec := r.calls[e.Index]
	then := recordedResult(rec)
	now := map[string]any(e.Result)
	if now == nil {
		now = map[string]any{}
	}
	row := ReplayRow{Turn: e.Index, RecordedTurn: rec.Index, Tool: replayAction(rec).Tool, Then: recordedVerdict(rec, then), Now: nowVerdict(e.Verdict)}
	row.Comparison, row.Detail = r.compare(row.Tool, row.Then, row.Now, then, now)
	if row.Tool == "qa_create" {
		for _, k := range []string{"name", "owner"} {
			old, _ := then[k].(string)
			fresh, _ := now[k].(string)
			r.learn(old, fresh)
		}
		if old, _ := then["name"].(string); old != "" && r.names[old] != "" && row.Detail == "" {
			row.Detail = fmt.Sprintf("name %s -> %s", old, r.names[old])
		}
	}
	if row.Tool == "qa_login" {
		// A replayed sign-in is a fresh identity with another address: the
		// later calls that name the recorded one (a URL with a's address)
		// name the replay's.
		old, _ := then["address"].(string)
		fresh, _ := now["address"].(string)
		r.learn(old, fresh)
	}
	if r.schemaChanged[row.Tool] {
		row.Detail = strings.TrimSpace(row.Detail + " (the tool's argument schema changed since the recording)")
	}
	r.rows = append(r.rows, row)
}

// learn adds old -> fresh to the name map. Only names and addresses are
// mapped: tokens of letters, digits, dashes, dots and underscores, which
// need no escaping inside JSON, so rewriting the raw arguments keeps them
// valid. An address is mapped in its lowercase form too.
func (r *replayer) learn(old, fresh string) {
	if old == "" || fresh == "" || old == fresh || !nameToken(old) || !nameToken(fresh) {
		return
	}
	r.names[old] = fresh
	if strings.HasPrefix(old, "0x") && strings.ToLower(old) != old {
		r.names[strings.ToLower(old)] = strings.ToLower(fresh)
	}
	r.olds = r.olds[:0]
	for k := range r.names {
		r.olds = append(r.olds, k)
	}
	slices.SortFunc(r.olds, func(x, y string) int { return len(y) - len(x) })
}

// rewrite replaces every recorded name in s by the replay's. A name matches
// only as a whole token (no letter or digit on either side), longest first,
// so qa-x-1 never rewrites part of qa-x-10.
func (r *replayer) rewrite(s string) string {
	if len(r.olds) == 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		hit := ""
		if i == 0 || !alnum(s[i-1]) {
			for _, old := range r.olds {
				if strings.HasPrefix(s[i:], old) && (i+len(old) == len(s) || !alnum(s[i+len(old)])) {
					hit = old
					break
				}
			}
		}
		if hit == "" {
			b.WriteByte(s[i])
			i++
			continue
		}
		b.WriteString(r.names[hit])
		i += len(hit)
	}
	return b.String()
}

func alnum(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' }

func nameToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return len(s) >= 3
}

// finish returns the rows, with the calls the replay never reached.
func (r *replayer) finish() []ReplayRow {
	out := slices.Clone(r.rows)
	for _, rec := range r.calls[len(r.rows):] {
		then := recordedResult(rec)
		out = append(out, ReplayRow{Turn: -1, RecordedTurn: rec.Index, Tool: replayAction(rec).Tool, Then: recordedVerdict(rec, then), Comparison: ReplayNotReplayed})
	}
	return out
}

// recordedResult is a recorded turn's result as a JSON object (empty when
// it had none or it was not an object).
func recordedResult(t trajectory.Turn) map[string]any {
	m := map[string]any{}
	switch v := t.Result.(type) {
	case json.RawMessage:
		json.Unmarshal(v, &m)
	case map[string]any:
		m = v
	}
	if m == nil {
		m = map[string]any{}
	}
	return m
}

// recordedVerdict is what happened to a recorded call, in the loop's
// verdict words: refused, invalid, ok or error.
func recordedVerdict(t trajectory.Turn, res map[string]any) string {
	switch t.Validation.Result {
	case trajectory.ValidationRefused:
		return string(fleet.VerdictRefused)
	case trajectory.ValidationInvalid:
		return string(fleet.VerdictInvalid)
	}
	if ok, _ := res["ok"].(bool); ok {
		return string(fleet.VerdictOK)
	}
	return string(fleet.VerdictError)
}

// nowVerdict folds unknown into invalid, as a run record does.
func nowVerdict(v fleet.Verdict) string {
	if v == fleet.VerdictUnknown {
		return string(fleet.VerdictInvalid)
	}
	return string(v)
}

// replayKeys are the result fields that say what a call did, as opposed
// to when, how fast or under which fresh name: a replay that matches on
// all of them (and on the verdict) is the same.
var replayKeys = []string{"outcome", "status", "hint", "exit_code", "signal", "reverted", "revert_reason", "crash_state", "owner_verified", "content_type", "error"}

// compare classifies a replayed call against the recorded one.
func (r *replayer) compare(tool, thenV, nowV string, then, now map[string]any) (string, string) {
	if nowV == string(fleet.VerdictRefused) && thenV != string(fleet.VerdictRefused) {
		return ReplayRefusedNow, fleet.PlainText(fmt.Sprint(now["error"]), 159)
	}
	if thenV != nowV {
		d := fmt.Sprintf("verdict %s -> %s", thenV, nowV)
		if e, ok := now["error"].(string); ok && e != "" {
			d += ": " + e
		}
		return ReplayChanged, fleet.PlainText(d, 199)
	}
	if tool == "qa_report" {
		// The finding is checked, not posted: its status says so.
		return ReplaySame, "not posted (a replay never posts)"
	}
	var diffs []string
	for _, k := range replayKeys {
		tv, nv := r.mapValue(then[k]), now[k]
		if fmt.Sprint(tv) != fmt.Sprint(nv) {
			ts, ns := shownPair(tv, nv)
			diffs = append(diffs, fmt.Sprintf("%s %s -> %s", k, ts, ns))
		}
	}
	if len(diffs) > 0 {
		return ReplayChanged, fleet.PlainText(strings.Join(diffs, "; "), 199)
	}
	return ReplaySame, ""
}

// mapValue rewrites a recorded string value to the replay's names.
func (r *replayer) mapValue(v any) any {
	if s, ok := v.(string); ok {
		return r.rewrite(s)
	}
	return v
}

// shownPair renders two differing values; two long strings are shown from
// a little before where they first differ, so the detail shows the change.
func shownPair(a, b any) (string, string) {
	as, aok := a.(string)
	bs, bok := b.(string)
	if !aok || !bok {
		return shown(a), shown(b)
	}
	i := 0
	for i < len(as) && i < len(bs) && as[i] == bs[i] {
		i++
	}
	if i <= 40 {
		return shown(a), shown(b)
	}
	from := i - 20
	for from > 0 && !utf8.RuneStart(as[from]) {
		from--
	}
	return "…" + shown(as[from:]), "…" + shown(bs[from:])
}

func shown(v any) string {
	if v == nil {
		return "-"
	}
	if s, ok := v.(string); ok {
		return fmt.Sprintf("%q", fleet.PlainText(s, 59))
	}
	return fmt.Sprint(v)
}
