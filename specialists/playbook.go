package specialists

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/qafleet/fleetd/fleet"
)

// Options configures the playbooks. The zero value works: no corpus (every
// compile-based check is skipped and says so), the default caps, a seed from
// the run id and eight latency samples.
type Options struct {
	// Corpus holds known-good programs for the target's compiler, usually
	// the files of target.corpus (see LoadCorpus and OptionsFor). Playbooks
	// never read files themselves: the State is all they see.
	Corpus []string
	// Caps overrides the per-run call cap of playbooks by name; see
	// DefaultCap for the defaults. A cap counts every tool call the
	// playbook makes, findings included.
	Caps map[string]int
	// Seed, when non-zero, replaces the seed derived from the run id (fuzz
	// mutations, canary tokens).
	Seed uint64
	// Samples is how many times perf measures each endpoint (default 8).
	Samples int
	// Families are security's probe families for the agents behind the call
	// endpoint; nil means the embedded ones (DefaultFamilies). Load more
	// with LoadFamilies.
	Families []Family
}

// Corpus limits for LoadCorpus.
const (
	maxCorpusFiles = 32
	maxCorpusBytes = 64 << 10
)

// LoadCorpus reads the known-good programs in dir, for Options.Corpus: the
// regular, non-hidden files directly in dir, by name, at most 32 of them,
// skipping any larger than 64 KiB or empty. An empty dir string returns nil.
// The error names the directory or the file.
func LoadCorpus(dir string) ([]string, error) {
	if dir == "" {
		return nil, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("load corpus %s: %w", dir, err)
	}
	var out []string
	for _, e := range entries { // ReadDir sorts by name
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		info, err := e.Info()
		if err != nil {
			return nil, fmt.Errorf("load corpus %s: %w", dir, err)
		}
		if info.Size() == 0 || info.Size() > maxCorpusBytes {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("load corpus: %w", err)
		}
		out = append(out, string(b))
		if len(out) == maxCorpusFiles {
			break
		}
	}
	return out, nil
}

// OptionsFor returns Options filled from a target: its corpus loaded with
// LoadCorpus. The error is LoadCorpus's.
func OptionsFor(t fleet.Target) (Options, error) {
	corpus, err := LoadCorpus(t.Corpus)
	return Options{Corpus: corpus}, err
}

// play is a playbook's straight-line program over the probe API.
type play func(p *probe)

var plays = map[string]play{
	"smoke":    smoke,
	"security": security,
	"fuzz":     fuzz,
	"ux":       ux,
	"perf":     perf,
}

// defaultCaps bound each playbook's calls per run (findings included); each
// stays under the max_turns of the shipped persona, which also counts the
// final turn. security's is large because its active rules probe every
// metadata field (a canary and a payload per place it lands), every
// discovered URL parameter and every agent with each probe family; on a
// platform with few of those it stops far below the cap.
var defaultCaps = map[string]int{
	"smoke":    30,
	"security": 380, // crawl (40 pages), exposed paths, CORS probes, replays of high findings, then the injection and agent probes
	"fuzz":     250,
	"ux":       90, // crawl (40 pages), docs-contract checks, error probes, replies
	"perf":     80,
}

// Names returns the playbook names, sorted.
func Names() []string {
	names := make([]string, 0, len(plays))
	for n := range plays {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// DefaultCap returns the default call cap of the named playbook, 0 for an
// unknown name.
func DefaultCap(name string) int { return defaultCaps[name] }

// Playbook is a deterministic planner: a fleet.Model that replays its
// program over the run's history on every Next (see the package doc).
type Playbook struct {
	name string
	play play
	opts Options
	cap  int
}

var _ fleet.Model = (*Playbook)(nil)

// New returns the named playbook (one of Names) as a fleet.Model. It fails
// for an unknown name or a negative cap.
func New(name string, opts Options) (fleet.Model, error) {
	pl, ok := plays[name]
	if !ok {
		return nil, fmt.Errorf("playbook %q: unknown (have %s)", name, strings.Join(Names(), ", "))
	}
	limit := defaultCaps[name]
	if limit == 0 {
		limit = 50
	}
	if c, ok := opts.Caps[name]; ok {
		if c < 0 {
			return nil, fmt.Errorf("playbook %q: negative cap %d", name, c)
		}
		if c > 0 {
			limit = c
		}
	}
	if opts.Samples <= 0 {
		opts.Samples = 8
	}
	opts.Corpus = slices.Clone(opts.Corpus)
	opts.Families = slices.Clone(opts.Families)
	return &Playbook{name: name, play: pl, opts: opts, cap: limit}, nil
}

// Name returns the playbook's name.
func (pb *Playbook) Name() string { return pb.name }

// halt unwinds a replay: either the next call to make, the cap, or a
// divergence from the recorded history.
type halt struct {
	call   *fleet.Call
	capped bool
	err    error
}

// Next implements fleet.Model. It replays the playbook over s.History and
// returns its first call beyond it, or Done with a summary when the program
// ends. A history that the program would not have produced (another tool or
// other arguments at some index) yields an error wrapping fleet.ErrMalformed;
// a bug in the playbook (a panic) yields a plain error.
func (pb *Playbook) Next(ctx context.Context, s *fleet.State) (step fleet.Step, err error) {
	if err := ctx.Err(); err != nil {
		return fleet.Step{}, err
	}
	p := newProbe(pb, s)
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		h, ok := r.(*halt)
		switch {
		case !ok:
			step, err = fleet.Step{}, fmt.Errorf("playbook %s: panic at call %d: %v", pb.name, p.n, r)
		case h.err != nil:
			step, err = fleet.Step{}, h.err
		case h.capped:
			p.notef("stopped at the call cap (%d)", pb.cap)
			step, err = fleet.Step{Done: true, Summary: p.summary()}, nil
		default:
			step, err = fleet.Step{Call: h.call}, nil
		}
	}()
	pb.play(p)
	return fleet.Step{Done: true, Summary: p.summary()}, nil
}

// reportReserve is how many calls of the cap only findings may use, so a
// playbook that probes up to its cap can still report what it found.
func reportReserve(limit int) int { return min(8, max(1, limit/5)) }

// probe is one replay of a playbook: the API its program is written against.
type probe struct {
	pb      *Playbook
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
	seen  map[string]bool // findings already reported in this run

	reports     map[string]int // qa_report statuses
	rateLimited bool

	web *webState // the crawl, the fresh name and fetches (surface.go)

	own   string         // a name this run minted for probing (injection), for the agent rules
	busy  map[string]int // 429 answers per host: the active rules stop at inj429
	busyN int            // history entries counted into busy
}

func newProbe(pb *Playbook, s *fleet.State) *probe {
	seed := pb.opts.Seed
	if seed == 0 {
		seed = hash64(s.RunID)
	}
	p := &probe{
		pb: pb, st: s, t: s.Target, limit: pb.cap, seed: seed,
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

func hash64(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

// has reports whether the run was given tool at all.
func (p *probe) has(tool string) bool { return p.tools == nil || p.tools[tool] }

// can reports whether calling tool may still work: the run has it, neither
// the dial nor the loop has refused it so far, and no refusal has shown a
// dial below the rung it needs. (A tool whose rung is unknown, because the
// loop disabled it after it was called, counts as allowed: that is what the
// replay decided when it was called.)
func (p *probe) can(tool string) bool {
	if !p.has(tool) || p.refused[tool] {
		return false
	}
	rung, known := p.rungs[tool]
	return !known || p.ceiling == nil || p.ceiling.Allows(rung)
}

// room reports whether n more probing calls fit under the cap, keeping the
// reserve for findings.
func (p *probe) room(n int) bool { return p.n+n <= p.limit-reportReserve(p.limit) }

// call is the one way a playbook acts. While the history has a recorded
// call at this index it checks the recorded call is this one and returns
// its result; past the history it halts the replay with this call as the
// next step.
func (p *probe) call(tool string, args any) fleet.Exchange {
	raw := marshal(args)
	if p.n >= p.limit || tool != "qa_report" && p.n >= p.limit-reportReserve(p.limit) {
		panic(&halt{capped: true})
	}
	if p.n >= len(p.st.History) {
		panic(&halt{call: &fleet.Call{Tool: tool, Args: raw}})
	}
	ex := p.st.History[p.n]
	if ex.Call.Tool != tool || !sameJSON(ex.Call.Args, raw) {
		panic(&halt{err: fmt.Errorf("%w: playbook %s diverged from the run's history at call %d: recorded %s %s, the playbook now asks %s %s",
			fleet.ErrMalformed, p.pb.name, p.n, ex.Call.Tool, clip(string(ex.Call.Args), 200), tool, clip(string(raw), 200))})
	}
	p.n++
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

// Call makes one tool call and returns its result (see call).
func (p *probe) Call(tool string, args any) fleet.Result { return p.call(tool, args).Result }

// Fetch is qa_fetch {url}.
func (p *probe) Fetch(url string) fleet.Result {
	return p.Call("qa_fetch", map[string]any{"url": url})
}

// Compile is qa_compile {source}.
func (p *probe) Compile(src string) fleet.Result {
	return p.Call("qa_compile", map[string]any{"source": src})
}

// Chain is qa_chain {method, params}.
func (p *probe) Chain(method string, params ...any) fleet.Result {
	if params == nil {
		params = []any{}
	}
	return p.Call("qa_chain", map[string]any{"method": method, "params": params})
}

// Create is qa_create {}.
func (p *probe) Create() fleet.Result { return p.Call("qa_create", map[string]any{}) }

// Publish is qa_publish {name, source}.
func (p *probe) Publish(name, src string) fleet.Result {
	return p.Call("qa_publish", map[string]any{"name": name, "source": src})
}

// callArgs are qa_call's arguments.
type callArgs struct {
	Target      string            `json:"target"`
	Message     string            `json:"message"`
	From        string            `json:"from,omitempty"`
	RawBody     *string           `json:"raw_body,omitempty"` // "" sends an empty body
	ContentType string            `json:"content_type,omitempty"`
	Headers     map[string]string `json:"headers,omitempty"`
}

// Agent is qa_call with the given arguments.
func (p *probe) Agent(a callArgs) fleet.Result { return p.Call("qa_call", a) }

// Skip records a check that did not run and why, for the summary.
func (p *probe) Skip(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	if !slices.Contains(p.skips, s) {
		p.skips = append(p.skips, s)
	}
}

// notef records an observation for the summary.
func (p *probe) notef(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	if !slices.Contains(p.notes, s) {
		p.notes = append(p.notes, s)
	}
}

// Dial returns the dial at the start of this turn. Playbooks must not
// branch on it (the dial can change during a run, and a replay must take
// the same path it took before); they branch on refusals instead.
func (p *probe) Dial() fleet.Dial { return p.st.Dial }

// dialIs reads the dial out of the loop's refusal, "refused: needs dial
// exercise, dial is observe".
var dialIs = regexp.MustCompile(`\bdial is ([a-z]+)`)

// refusedByDial reports whether ex is a refusal (by the dial, or a tool the
// loop disabled) rather than a result of the tool.
func refusedByDial(ex fleet.Exchange) bool {
	return ex.Verdict == fleet.VerdictRefused || ex.Verdict == fleet.VerdictUnknown
}

// Envelope sizing: the qa/v1 header written by the reporter is at most this
// long plus the run id and surface, and a summary needs some room.
const (
	headerAllowance = 130
	minSummaryRoom  = 240
	maxSummary      = 1800 // qa_report's summary limit
)

// Report files a finding through qa_report unless an identical one (same
// surface and repro, or same summary without a repro) was already filed in
// this run. reproTool "" means no repro. A repro too large for a feedback
// entry is left out and the summary says so. It returns whether the finding
// was accepted (posted, queued or deduped by the reporter).
//
// extra, at most one, adds qa_report's crash-state arguments (state, flaky;
// see fuzz_report.go): a finding with a state is one per state and run,
// whatever its repro; a flaky one (its repro did not reproduce when
// replayed, see reportChecked) is posted at most low.
func (p *probe) Report(sev fleet.Severity, surface fleet.Surface, summary, reproTool string, reproArgs any, extra ...stateArgs) bool {
	return p.report(sev, surface, summary, reproTool, reproArgs, extra...)
}

func (p *probe) report(sev fleet.Severity, surface fleet.Surface, summary, reproTool string, reproArgs any, extra ...stateArgs) bool {
	summary = oneLine(redactSecrets(summary))
	var repro map[string]any
	key := reportKey(p.st.RunID, surface, summary, reproTool, reproArgs)
	if reproTool != "" {
		args := marshal(reproArgs)
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
	if p.rateLimited || !p.can("qa_report") {
		p.Skip("a %s finding was not reported: qa_report unavailable", sev)
		return false
	}
	args := map[string]any{"severity": string(sev), "surface": string(surface), "summary": clip(summary, maxSummary)}
	if repro != nil {
		args["repro"] = repro
	}
	if len(extra) > 0 {
		extra[0].addTo(args)
	}
	ex := p.call("qa_report", args)
	status := str(ex.Result, "status")
	switch {
	case status == "rate_limited":
		p.rateLimited = true
	case refusedByDial(ex):
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
		raw := marshal(args)
		if reproFits(runID, surface, tool, raw) {
			return string(surface) + "\x00" + tool + "\x00" + string(canonical(raw))
		}
	}
	return string(surface) + "\x00" + summary
}

// summary is the run's closing summary: calls, findings, skips and notes.
func (p *probe) summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s playbook: %d calls (cap %d)", p.pb.name, p.n, p.limit)
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
	if len(p.notes) > 0 {
		b.WriteString(". Observed: " + strings.Join(p.notes, "; "))
	}
	if len(p.skips) > 0 {
		b.WriteString(". Skipped: " + strings.Join(p.skips, "; "))
	}
	b.WriteString(".")
	return clip(b.String(), 4000)
}

// marshal encodes v as compact JSON without HTML escaping (sources and
// canaries stay readable, and repros stay small). Map keys come out sorted,
// so the same arguments always give the same bytes.
func marshal(v any) json.RawMessage {
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

// canonical re-encodes JSON with sorted keys, for dedupe keys.
func canonical(raw json.RawMessage) json.RawMessage {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return raw
	}
	return marshal(v)
}
