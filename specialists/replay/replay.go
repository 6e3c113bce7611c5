package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/qafleet/fleetd/fleet"
)

// Config is what one replay needs from its playbook.
type Config struct {
	Name        string // the playbook, for the summary and errors
	Cap         int    // calls per run, findings included
	Seed        uint64 // the seed of fuzz mutations and canaries; 0: derived from the run id
	CrawlBudget int    // pages the crawl fetches, seeds included; 0: crawlDefaultBudget
	// Renders is the run's rendering crawl (NewRenders); nil: the crawl
	// reads responses as text only.
	Renders *Renders
	// RenderBudget is how many pages the browser opens per run (the
	// crawl's and every rule's renders together); 0: renderDefaultBudget.
	RenderBudget int
	// Context bounds what a replay does outside tool calls (a render); it
	// is the turn's context. nil: context.Background().
	Context context.Context
}

// Replay runs program over s.History (see the package doc): it returns the
// program's first call beyond the history, or Done with a summary when the
// program ends or reaches cfg.Cap. With s.Ending set (the loop's
// end-of-run calls, fleet.Ender) the program is cut off at s.EndedAt and
// only its UndoWrites runs from there, as at the cap. A history that the program would not
// have produced (another tool or other arguments at some index) yields an
// error wrapping fleet.ErrMalformed; a bug in the program (a panic) yields
// a plain error.
func Replay(s *fleet.State, cfg Config, program func(*Play)) (step fleet.Step, err error) {
	p := newProbe(cfg, s)
	defer func() {
		if r := recover(); r != nil {
			step, err = p.halted(r)
		}
	}()
	program(p)
	return fleet.Step{Done: true, Summary: p.summary()}, nil
}

// halt unwinds a replay: either the next call to make (after wait), the
// cap, or an error: a divergence from the recorded history or the
// program's own (Stop).
type halt struct {
	call   *fleet.Call
	wait   time.Duration
	capped bool
	ending bool // the run ended before the program did (fleet.State.Ending)
	err    error
}

// undoAtEnd is the rest of a replay whose program stopped short, at the
// call cap or because the run ended (the loop's end-of-run calls,
// fleet.Ender): UndoWrites deletes what the run's POSTs created, or
// lists it as left, however the program stopped, then Done with the
// summary.
func (p *Play) undoAtEnd() (step fleet.Step, err error) {
	p.undoing = true
	defer func() {
		if r := recover(); r != nil {
			step, err = p.halted(r)
		}
	}()
	p.UndoWrites()
	return fleet.Step{Done: true, Summary: p.endSummary()}, nil
}

// halted turns what stopped a replay (r, recovered from its panic) into
// its step: the next call (after Wait's delay), the program's error or a
// divergence, or, at the call cap or the run's end, the undo (undoAtEnd)
// and Done; a panic that is no halt is a bug in the program.
func (p *Play) halted(r any) (fleet.Step, error) {
	h, ok := r.(*halt)
	switch {
	case !ok:
		return fleet.Step{}, fmt.Errorf("playbook %s: panic at call %d: %v", p.cfg.Name, p.n, r)
	case h.err != nil:
		return fleet.Step{}, h.err
	case (h.capped || h.ending) && p.undoing: // the cap while undoing: UndoWrites listed the rest
		return fleet.Step{Done: true, Summary: p.endSummary()}, nil
	case h.capped:
		p.Notef("stopped at the call cap (%d)", p.cfg.Cap)
		return p.undoAtEnd()
	case h.ending:
		return p.undoAtEnd()
	case h.wait > 0:
		if werr := fleet.Sleep(p.cfg.Context, h.wait); werr != nil {
			return fleet.Step{}, fmt.Errorf("playbook %s: waiting %s before call %d: %w", p.cfg.Name, h.wait, p.n, werr)
		}
	}
	return fleet.Step{Call: h.call}, nil
}

// endSummary is what a replay that stopped short says: at the call cap
// its whole summary; at the run's end (the loop adds it to the run's)
// only what the undo did and what is left, "" when it had nothing to do.
func (p *Play) endSummary() string {
	if p.st.Ending == "" {
		return p.summary()
	}
	var parts []string
	if n := p.n - p.st.EndedAt; n > 0 {
		parts = append(parts, fmt.Sprintf("%s playbook's undo: %d call(s) to delete what the run's POSTs created", p.cfg.Name, n))
	}
	if len(p.left) > 0 {
		parts = append(parts, "Left on the platform: "+strings.Join(p.left, "; "))
	}
	return strings.Join(parts, ". ")
}

// reportReserve is how many calls of the cap only findings may use, so a
// playbook that probes up to its cap can still report what it found.
func reportReserve(limit int) int { return min(8, max(1, limit/5)) }

// Play is one replay of a playbook: the API its program is written against.
type Play struct {
	cfg     Config
	st      *fleet.State
	t       fleet.Target
	n       int // calls made so far: the index of the next call in History
	limit   int
	seed    uint64
	rng     *rand.Rand
	tools   map[string]bool       // nil: every tool (a state built without a tool list)
	rungs   map[string]fleet.Dial // the rung each enabled tool needs
	refused map[string]bool       // tools the dial (or the loop) refused in this run
	ceiling *fleet.Dial           // the dial a refusal reported, if any

	skips []string
	notes []string

	created   []string          // what the run's qa_submit POSTs created (undo.go)
	createdAs map[string]string // of those, the ones a signed-in identity created: its name (the DELETE's as)
	undone    []string          // of those, what a DELETE removed
	unnamed   []string          // POST targets whose answers named nothing created
	left      []string          // what the run lists as left on the platform
	seen      map[string]bool   // findings already reported in this run

	writesLeft  int  // the last writes_left a qa_submit answer gave
	writesKnown bool // whether one did

	reports     map[string]int // qa_report statuses
	rateLimited bool

	web *webState // the crawl, the fresh name and fetches (surface.go)

	wait time.Duration // Wait's delay before the next call

	undoing bool // undoAtEnd is running UndoWrites: the run's end-of-run calls

	own   string         // a name this run minted for probing (injection), for the agent rules
	busy  map[string]int // 429 answers per host: the active rules stop at inj429
	busyN int            // history entries counted into busy
}

func newProbe(cfg Config, s *fleet.State) *Play {
	seed := cfg.Seed
	if seed == 0 {
		seed = Hash64(s.RunID)
	}
	p := &Play{
		cfg: cfg, st: s, t: s.Target, limit: cfg.Cap, seed: seed,
		rng:     rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		refused: map[string]bool{}, seen: map[string]bool{}, reports: map[string]int{}, busy: map[string]int{},
	}
	// The tools a run started with: the ones still enabled plus any the
	// history shows (the loop removes a tool it disabled from s.Tools, and
	// a replay must decide the same way it did before that happened).
	if s.Tools != nil {
		p.tools, p.rungs = map[string]bool{}, map[string]fleet.Dial{}
		for _, t := range s.Tools {
			p.tools[t.Name] = true
			p.rungs[t.Name] = t.Rung
		}
		for _, ex := range s.History {
			p.tools[ex.Call.Tool] = true
		}
	}
	return p
}

// Hash64 is the FNV-1a hash of s: seeds from a run id or a target.
func Hash64(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

// TargetSeed seeds the injection and agent canaries: stable per target (not
// per run), so the same flaw gives the same payload, summary and repro
// every run and the log's dedupe and triage see one problem. Config.Seed
// overrides it.
func (p *Play) TargetSeed() uint64 {
	if p.cfg.Seed != 0 {
		return p.cfg.Seed
	}
	return Hash64(p.t.Registry + "|" + p.t.Faces + "|" + p.t.Call)
}

// Seed is the run's seed: Config.Seed, else derived from the run id.
func (p *Play) Seed() uint64 { return p.seed }

// Target is the run's target.
func (p *Play) Target() fleet.Target { return p.t }

// Cap is the playbook's call cap for this run (Config.Cap).
func (p *Play) Cap() int { return p.limit }

// Rand is the run's PRNG, seeded by Seed: the only randomness a program
// may use, so a replay makes the same choices.
func (p *Play) Rand() *rand.Rand { return p.rng }

// ReproFits reports whether a repro of tool with args fits a feedback
// entry with its header and a summary (File leaves out one that does not).
func (p *Play) ReproFits(surface fleet.Surface, tool string, args any) bool {
	return reproFits(p.st.RunID, surface, tool, Marshal(args))
}

// Has reports whether the run was given tool at all.
func (p *Play) Has(tool string) bool { return p.tools == nil || p.tools[tool] }

// Can reports whether calling tool may still work: the run has it, neither
// the dial nor the loop has refused it so far, and no refusal has shown a
// dial below the rung it needs. (A tool whose rung is unknown, because the
// loop disabled it after it was called, counts as allowed: that is what the
// replay decided when it was called.)
func (p *Play) Can(tool string) bool {
	if !p.Has(tool) || p.refused[tool] {
		return false
	}
	rung, known := p.rungs[tool]
	return !known || p.ceiling == nil || p.ceiling.Allows(rung)
}

// Room reports whether n more probing calls fit under the cap, keeping the
// reserve for findings.
func (p *Play) Room(n int) bool {
	return p.n+n+p.WritesReserved() <= p.limit-reportReserve(p.limit) // a call kept for each DELETE to send
}

// Exchange is the one way a playbook acts: it makes one tool call and
// returns the recorded exchange (the verdict tells a refusal from a
// result). While the history has a recorded call at this index it checks
// the recorded call is this one and returns it; past the history it halts
// the replay with this call as the next step.
func (p *Play) Exchange(tool string, args any) fleet.Exchange {
	raw := Marshal(args)
	if p.n >= p.limit || tool != "qa_report" && p.n >= p.limit-reportReserve(p.limit) {
		panic(&halt{capped: true})
	}
	wait := p.wait
	p.wait = 0
	if p.st.Ending != "" && !p.undoing && p.n >= p.st.EndedAt {
		panic(&halt{ending: true}) // the rest of the program was cut off: only its undo runs
	}
	if p.n >= len(p.st.History) {
		panic(&halt{call: &fleet.Call{Tool: tool, Args: raw}, wait: wait})
	}
	ex := p.st.History[p.n]
	if ex.Call.Tool != tool || !sameJSON(ex.Call.Args, raw) {
		panic(&halt{err: fmt.Errorf("%w: playbook %s diverged from the run's history at call %d: recorded %s %s, the playbook now asks %s %s",
			fleet.ErrMalformed, p.cfg.Name, p.n, ex.Call.Tool, Clip(string(ex.Call.Args), 200), tool, Clip(string(raw), 200))})
	}
	p.n++
	p.trackWrite(tool, ex.Call.Args, ex.Result)
	if ex.Verdict == fleet.VerdictRefused || ex.Verdict == fleet.VerdictUnknown {
		p.refused[tool] = true
		if m := dialIs.FindStringSubmatch(ex.Result.Err()); m != nil {
			if d, err := fleet.ParseDial(m[1]); err == nil && (p.ceiling == nil || d < *p.ceiling) {
				p.ceiling = &d
			}
		}
	}
	if ex.Result == nil {
		ex.Result = fleet.Result{}
	}
	return ex
}

// Wait makes the next call (Exchange) wait d before it is made: the replay
// that first asks for it sleeps d (bounded by Config.Context) before
// returning it, and replays that find it in the history do not wait
// again. Re-trying a target after a short pause is its use.
func (p *Play) Wait(d time.Duration) { p.wait = d }

// Stop ends the run with err, which names what the program saw: Replay
// returns it as the step's error, so the loop ends the run harness_error
// with err in the run record's footer. It is for conditions outside the
// platform that make the playbook's findings untrustworthy (fleetd's own
// network down), never for a finding. err must not wrap fleet.ErrMalformed.
func (p *Play) Stop(err error) {
	panic(&halt{err: err})
}

// Call makes one tool call and returns its result (see Exchange).
func (p *Play) Call(tool string, args any) fleet.Result { return p.Exchange(tool, args).Result }

// Fetch is qa_fetch {url}.
func (p *Play) Fetch(url string) fleet.Result {
	return p.Call("qa_fetch", map[string]any{"url": url})
}

// Compile is qa_compile {source}.
func (p *Play) Compile(src string) fleet.Result {
	return p.Call("qa_compile", map[string]any{"source": src})
}

// Chain is qa_chain {method, params}.
func (p *Play) Chain(method string, params ...any) fleet.Result {
	if params == nil {
		params = []any{}
	}
	return p.Call("qa_chain", map[string]any{"method": method, "params": params})
}

// Create is qa_create {}.
func (p *Play) Create() fleet.Result { return p.Call("qa_create", map[string]any{}) }

// Publish is qa_publish {name, source}.
func (p *Play) Publish(name, src string) fleet.Result {
	return p.Call("qa_publish", map[string]any{"name": name, "source": src})
}

// CallArgs are qa_call's arguments.
type CallArgs struct {
	Target      string            `json:"target"`
	Message     string            `json:"message"`
	From        string            `json:"from,omitempty"`
	RawBody     *string           `json:"raw_body,omitempty"` // "" sends an empty body
	ContentType string            `json:"content_type,omitempty"`
	Headers     map[string]string `json:"headers,omitempty"`
}

// Agent is qa_call with the given arguments.
func (p *Play) Agent(a CallArgs) fleet.Result { return p.Call("qa_call", a) }

// Skip records a check that did not run and why, for the summary.
func (p *Play) Skip(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	if !slices.Contains(p.skips, s) {
		p.skips = append(p.skips, s)
	}
}

// Notef records an observation for the summary.
func (p *Play) Notef(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	if !slices.Contains(p.notes, s) {
		p.notes = append(p.notes, s)
	}
}

// Dial returns the dial at the start of this turn. Playbooks must not
// branch on it (the dial can change during a run, and a replay must take
// the same path it took before); they branch on refusals instead.
func (p *Play) Dial() fleet.Dial { return p.st.Dial }

// dialIs reads the dial out of the loop's refusal, "refused: needs dial
// exercise, dial is observe".
var dialIs = regexp.MustCompile(`\bdial is ([a-z]+)`)

// RefusedByDial reports whether ex is a refusal (by the dial, or a tool the
// loop disabled) rather than a result of the tool.
func RefusedByDial(ex fleet.Exchange) bool {
	return ex.Verdict == fleet.VerdictRefused || ex.Verdict == fleet.VerdictUnknown
}

// Envelope sizing: the qa/v1 header written by the reporter is at most this
// long plus the run id and surface, and a summary needs some room.
const (
	headerAllowance = 130
	minSummaryRoom  = 240
	MaxSummary      = 1800 // qa_report's summary limit
)

// File files a finding through qa_report unless an identical one (same
// surface and repro, or same summary without a repro) was already filed in
// this run. reproTool "" means no repro. A repro too large for a feedback
// entry is left out and the summary says so. It returns whether the finding
// was accepted (posted, queued or deduped by the reporter).
//
// extra, at most one, adds qa_report's crash-state arguments (state, flaky;
// see StateArgs): a finding with a state is one per state and run,
// whatever its repro; a flaky one (its repro did not reproduce when
// replayed, see FileChecked) is posted at most low.
func (p *Play) File(sev fleet.Severity, surface fleet.Surface, summary, reproTool string, reproArgs any, extra ...StateArgs) bool {
	return p.report(sev, surface, summary, reproTool, reproArgs, extra...)
}

func (p *Play) report(sev fleet.Severity, surface fleet.Surface, summary, reproTool string, reproArgs any, extra ...StateArgs) bool {
	summary = OneLine(redactSecrets(summary))
	var repro map[string]any
	key := reportKey(p.st.RunID, surface, summary, reproTool, reproArgs)
	if reproTool != "" {
		args := Marshal(reproArgs)
		if !reproFits(p.st.RunID, surface, reproTool, args) {
			summary += fmt.Sprintf(" (repro left out: a %s call of %d bytes does not fit a feedback entry)", reproTool, len(args))
		} else {
			repro = map[string]any{"tool": reproTool, "args": json.RawMessage(args)}
		}
	}
	if len(extra) > 0 && extra[0].State != "" {
		key = string(surface) + "\x00state\x00" + extra[0].State
	}
	if p.seen[key] {
		return true
	}
	p.seen[key] = true
	if p.rateLimited || !p.Can("qa_report") {
		p.Skip("a %s finding was not reported: qa_report unavailable", sev)
		return false
	}
	args := map[string]any{"severity": string(sev), "surface": string(surface), "summary": Clip(summary, MaxSummary)}
	if repro != nil {
		args["repro"] = repro
	}
	if len(extra) > 0 {
		extra[0].addTo(args)
	}
	ex := p.Exchange("qa_report", args)
	status := Str(ex.Result, "status")
	switch {
	case status == "rate_limited":
		p.rateLimited = true
	case RefusedByDial(ex):
		status = "refused"
	case status == "" && !ex.Result.IsOK():
		status = "failed"
	}
	p.reports[status]++
	return ex.Result.IsOK()
}

// reproFits reports whether a repro line leaves a feedback entry room for
// its header and a summary.
func reproFits(runID string, surface fleet.Surface, tool string, args json.RawMessage) bool {
	line := len("repro: ") + len(tool) + 1 + len(args)
	return headerAllowance+len(runID)+len(surface)+line+minSummaryRoom <= fleet.MaxEnvelopeBytes
}

// reportKey is what makes two findings of a run the same: surface and
// repro, or surface and (one-line) summary when there is no repro that fits.
func reportKey(runID string, surface fleet.Surface, summary, tool string, args any) string {
	if tool != "" {
		raw := Marshal(args)
		if reproFits(runID, surface, tool, raw) {
			return string(surface) + "\x00" + tool + "\x00" + string(Canonical(raw))
		}
	}
	return string(surface) + "\x00" + summary
}

// summary is the run's closing summary: calls, findings, skips and notes.
func (p *Play) summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s playbook: %d calls (cap %d)", p.cfg.Name, p.n, p.limit)
	total := 0
	var parts []string
	for _, st := range []string{"posted", "queued", "deduped", "rate_limited", "refused", "failed"} {
		if c := p.reports[st]; c > 0 {
			total += c
			parts = append(parts, fmt.Sprintf("%d %s", c, st))
		}
	}
	if total == 0 {
		b.WriteString("; no findings")
	} else {
		fmt.Fprintf(&b, "; %d findings (%s)", total, strings.Join(parts, ", "))
	}
	if len(p.left) > 0 {
		b.WriteString(". Left on the platform: " + strings.Join(p.left, "; "))
	}
	if len(p.notes) > 0 {
		b.WriteString(". Observed: " + strings.Join(p.notes, "; "))
	}
	if len(p.skips) > 0 {
		b.WriteString(". Skipped: " + strings.Join(p.skips, "; "))
	}
	b.WriteString(".")
	return Clip(b.String(), 4000)
}

// Marshal encodes v as compact JSON without HTML escaping (sources and
// canaries stay readable, and repros stay small). Map keys come out sorted,
// so the same arguments always give the same bytes.
func Marshal(v any) json.RawMessage {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("playbook: encode arguments: %v", err)) // a bug: arguments are plain values
	}
	return bytes.TrimRight(buf.Bytes(), "\n")
}

// sameJSON reports whether two argument blobs are the same call: the same
// bytes, or the same JSON value (a history read back from a run record may
// be spaced or escaped differently).
func sameJSON(a, b json.RawMessage) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// Canonical re-encodes JSON with sorted keys, for dedupe keys.
func Canonical(raw json.RawMessage) json.RawMessage {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return raw
	}
	return Marshal(v)
}
