package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/poster"
	"github.com/qafleet/fleetd/sandbox"
	"github.com/qafleet/fleetd/trajectory"
	"github.com/spf13/cobra"
)

// The comparisons of one replayed turn with the turn it replays.
const (
	replaySame        = "same"         // same verdict and the same salient result fields
	replayChanged     = "changed"      // it ran (or did not) differently
	replayRefusedNow  = "refused_now"  // it ran then; today's dial refuses it
	replayNotReplayed = "not_replayed" // the replay ended first (today's budget, a signal)
)

// replayNotPosted is the status qa_report answers in a replay: a replay
// never posts a finding (its findings are on the log from the original run,
// or were refused then), so replaying a run leaves the log alone.
const replayNotPosted = "not_posted"

// replayRow is one recorded tool call and what it did when replayed.
type replayRow struct {
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

// replayReport is what `fleetd runs replay` prints.
type replayReport struct {
	RunID      string         `json:"run_id"`
	ReplayOf   string         `json:"replay_of"`
	Specialist string         `json:"specialist"`
	Dial       string         `json:"dial"`
	RecordedAt string         `json:"recorded_dial"`
	Outcome    string         `json:"outcome"`
	Summary    string         `json:"summary"`
	Turns      []replayRow    `json:"turns"`
	Counts     map[string]int `json:"counts"`
	// Names maps the recorded run's throwaway names (and their owners) to
	// the ones the replay minted in their place.
	Names map[string]string `json:"names,omitempty"`
}

func (a probeCommands) runsReplayCmd() *cobra.Command {
	var asJSON bool
	var dialFlag string
	cmd := &cobra.Command{
		Use:   "replay ID [--dial RUNG] [--json]",
		Short: "Re-execute a recorded run's tool calls in a fresh sandbox and compare each turn",
		Long: `Replays run ID: its tool calls, in order, in a fresh sandbox under today's
dial (or --dial, which may only lower it) and today's budgets, through the
same dispatch path the agent loop uses. Throwaway names are minted fresh and
the recorded run's names are replaced by the new ones in later calls'
arguments. Each call is compared with the recorded one:
  same          the same verdict and the same salient result fields
                (outcome, status, hint, exit code, signal, revert, crash state)
  changed       it ran differently (the detail says how)
  refused now   it ran then and today's dial refuses it
  not replayed  the replay ended first (today's budget, a signal)
A replay never posts a finding: qa_report checks and fingerprints it and
answers status not_posted. The replay is itself a recorded run (fleetd runs
show) whose header config names the run it replays (replay_of).
Exit status: 0 the replay ran; 1 infrastructure (the node, the record could
not be written); 2 usage (no such run, a record from another version, one
cut short by a crash, a bad --dial); 3 paused.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			// Everything about the input is checked before anything else
			// happens: a bad record leaves the data dir and the log as they were.
			orig, err := loadReplayable(a.dataDir(), args[0])
			if err != nil {
				return err
			}
			var capDial *fleet.Dial
			if dialFlag != "" {
				d, err := fleet.ParseDial(dialFlag)
				if err != nil {
					return &exitError{code: exitConfig, err: fmt.Errorf("--dial: %w", err)}
				}
				capDial = &d
			}
			stored, _ := a.control().Dial()
			if capDial != nil && *capDial > stored {
				return &exitError{code: exitConfig, err: fmt.Errorf("--dial %s is above the stored dial %s: a replay never raises the dial (fleetd dial set)", *capDial, stored)}
			}
			logger := a.warnLogger()
			env, err := a.buildEnv(ctx, logger)
			if err != nil {
				if errors.Is(err, chain.ErrUnreachable) {
					return &exitError{code: exitInfra, err: err}
				}
				return &exitError{code: exitConfig, err: err}
			}
			defer env.Close()
			if paused, _ := env.control.Paused(); paused {
				return &exitError{code: exitPaused, err: ErrPaused}
			}
			if r := a.recoverCrashed(ctx, env, "fleetd runs replay"); r.err != nil {
				logger.Warn("recover crashed runs", "err", r.err)
			}
			rep, err := a.replay(ctx, env, orig, capDial)
			if rep != nil {
				var perr error
				if asJSON {
					perr = a.printJSON(rep)
				} else {
					perr = renderReplay(a.stdout, rep)
				}
				if err == nil {
					err = perr
				}
			}
			switch {
			case errors.Is(err, ErrPaused):
				return &exitError{code: exitPaused, err: err}
			case err != nil:
				return &exitError{code: exitInfra, err: err}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the comparison as one JSON object")
	cmd.Flags().StringVar(&dialFlag, "dial", "", "replay at this rung (observe, exercise, propose); at most the stored dial")
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &exitError{code: exitConfig, err: err} })
	return cmd
}

// loadReplayable reads run id's record and checks that it can be replayed:
// a run id, a record that exists, whole (not torn, with a footer that is
// not recovery's), written by this harness version, with tool calls in it.
// Each refusal is an exitError with exitConfig (the input is wrong; trying
// again will not help), except a file that cannot be read (exitInfra).
func loadReplayable(dataDir, id string) (*trajectory.Run, error) {
	usage := func(format string, args ...any) error {
		return &exitError{code: exitConfig, err: fmt.Errorf(format, args...)}
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
		return nil, &exitError{code: exitInfra, err: err}
	}
	h := run.Header
	switch {
	case h.RunID != id:
		return nil, usage("run record %s holds run %q", path, h.RunID)
	case h.HarnessVersion != harnessVersion:
		return nil, usage("run %s was recorded by harness %q; this fleetd replays %q records", id, h.HarnessVersion, harnessVersion)
	case run.Torn || run.Footer == nil:
		return nil, usage("run %s is truncated (a crash cut it short or it is still running): its turns are incomplete", id)
	case run.Footer.Outcome == trajectory.OutcomeHarnessError && run.Footer.FinalSummary == trajectory.RecoveredSummary:
		return nil, usage("run %s was cut short by a crash (its footer was written by recovery: %s): its turns are incomplete", id, run.Footer.HarnessError)
	}
	if len(replayCalls(run)) == 0 {
		return nil, usage("run %s has no tool calls to replay", id)
	}
	return run, nil
}

// replayCalls are the recorded turns that carry a tool call, in order.
func replayCalls(run *trajectory.Run) []trajectory.Turn {
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
	return poster.Result{Status: replayNotPosted, FP: f.Fingerprint, Text: text}, nil
}

// replay runs orig's tool calls again as a run of its own and compares them.
// The report is returned whenever the replay ran, with the error of a run
// that ended in a harness error.
func (a probeCommands) replay(ctx context.Context, env *fleetEnv, orig *trajectory.Run, capDial *fleet.Dial) (*replayReport, error) {
	h := orig.Header
	p, err := a.persona(h.Specialist)
	if err != nil {
		// A specialist no longer configured (or an MCP session's run): its
		// recorded goal, the default budget.
		p = fleet.Persona{Name: h.Specialist, Goal: h.Goal}
	}
	p.Planner = ""
	p.Goal = fmt.Sprintf("replay of run %s: %s", h.RunID, h.Goal)
	known, err := toolsRegistry()
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

	var dial fleet.DialSource = env.control
	if capDial != nil {
		dial = cappedDial{src: env.control, max: *capDial}
	}
	now, _ := dial.Dial()
	r := newReplayer(replayCalls(orig))
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
	res, err := a.runSpecialist(ctx, &renv, p, runOptions{
		model: r, modelName: "replay/" + h.RunID, dial: dial, logger: a.warnLogger(),
		config:  map[string]any{"replay_of": h.RunID},
		narrate: r.observe,
	})
	if res.RunID == "" {
		return nil, err // the run did not start
	}
	rep := &replayReport{RunID: res.RunID, ReplayOf: h.RunID, Specialist: h.Specialist, Dial: now.String(), RecordedAt: h.Dial,
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
	rows  []replayRow
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
	row := replayRow{Turn: e.Index, RecordedTurn: rec.Index, Tool: replayAction(rec).Tool, Then: recordedVerdict(rec, then), Now: nowVerdict(e.Verdict)}
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
func (r *replayer) finish() []replayRow {
	out := slices.Clone(r.rows)
	for _, rec := range r.calls[len(r.rows):] {
		then := recordedResult(rec)
		out = append(out, replayRow{Turn: -1, RecordedTurn: rec.Index, Tool: replayAction(rec).Tool, Then: recordedVerdict(rec, then), Comparison: replayNotReplayed})
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
		return replayRefusedNow, clip(oneLineText(fmt.Sprint(now["error"])), 160)
	}
	if thenV != nowV {
		d := fmt.Sprintf("verdict %s -> %s", thenV, nowV)
		if e, ok := now["error"].(string); ok && e != "" {
			d += ": " + e
		}
		return replayChanged, clip(oneLineText(d), 200)
	}
	if tool == "qa_report" {
		// The finding is checked, not posted: its status says so.
		return replaySame, "not posted (a replay never posts)"
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
		return replayChanged, clip(oneLineText(strings.Join(diffs, "; ")), 200)
	}
	return replaySame, ""
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
		return fmt.Sprintf("%q", clip(s, 60))
	}
	return fmt.Sprint(v)
}

func oneLineText(s string) string { return strings.Join(strings.Fields(s), " ") }

// renderReplay writes the comparison for a person.
func renderReplay(w io.Writer, rep *replayReport) error {
	fmt.Fprintf(w, "replay %s of run %s  specialist %s  dial %s (recorded at %s)\n\n", rep.RunID, rep.ReplayOf, rep.Specialist, rep.Dial, dash(rep.RecordedAt))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TURN\tWAS\tTOOL\tTHEN\tNOW\tCOMPARISON\tDETAIL")
	for _, row := range rep.Turns {
		turn := "-"
		if row.Turn >= 0 {
			turn = fmt.Sprintf("#%d", row.Turn)
		}
		fmt.Fprintf(tw, "%s\t#%d\t%s\t%s\t%s\t%s\t%s\n", turn, row.RecordedTurn, row.Tool, row.Then, dash(row.Now),
			strings.ReplaceAll(row.Comparison, "_", " "), sanitize(row.Detail))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	c := rep.Counts
	_, err := fmt.Fprintf(w, "\n%d same, %d changed, %d refused now, %d not replayed; replay %s: %s\n",
		c[replaySame], c[replayChanged], c[replayRefusedNow], c[replayNotReplayed], rep.Outcome, sanitize(rep.Summary))
	return err
}

// replayOf is the run a replay's header names (its config's replay_of), ""
// for a run that is not a replay.
func replayOf(h trajectory.Header) string {
	raw, ok := h.Config.(json.RawMessage)
	if !ok {
		return ""
	}
	var c struct {
		ReplayOf string `json:"replay_of"`
	}
	if json.Unmarshal(raw, &c) != nil || !sandbox.ValidRunID(c.ReplayOf) {
		return ""
	}
	return c.ReplayOf
}
