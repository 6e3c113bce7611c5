package specialists

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/specialists/fuzzstage"
	"github.com/qafleet/fleetd/specialists/redteam"
	"github.com/qafleet/fleetd/specialists/replay"
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
	// endpoint; nil means the embedded ones (redteam.DefaultFamilies). Load
	// more with redteam.LoadFamilies.
	Families []redteam.Family
	// Properties are security's invariants of the registry, checked by
	// simulated call sequences; nil means the embedded ones
	// (DefaultProperties). Load more with LoadProperties.
	Properties []Property
	// ABIs are the functions of target.abis files (LoadABIs, OptionsFor);
	// security names the registry's selectors with them. The URLs of
	// target.abis are fetched by the run itself.
	ABIs []ABI
	// RetryDelay is how long smoke waits before re-trying a target request
	// that got no answer, before it checks the control (smoke_reach.go);
	// 0: DefaultRetryDelay.
	RetryDelay time.Duration
	// Renderer is the rendering crawl's browser (package browser, wired
	// by cmd); nil: the crawl reads responses as text only. security and
	// ux render the HTML pages they crawl with it (Spec.Render pages a
	// run) and run the browser checks (dom_xss.go, page_errors.go, ...) on what it saw.
	Renderer replay.Renderer
}

// properties are o.Properties, or the embedded ones.
func (o Options) properties() []Property {
	if o.Properties != nil {
		return o.Properties
	}
	props, _ := DefaultProperties() // validated by TestPropertiesParse
	return props
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
// LoadCorpus and its ABI files with LoadABIs. The error is theirs.
func OptionsFor(t fleet.Target) (Options, error) {
	corpus, err := LoadCorpus(t.Corpus)
	if err != nil {
		return Options{}, err
	}
	abis, err := LoadABIs(t)
	return Options{Corpus: corpus, ABIs: abis}, err
}

// Spec is one specialist's playbook: its name, its program and its
// budgets, the one place each is declared. A specialist is its program (a
// file of this package, or a check package's Run), one Spec in shipped,
// and its persona YAML (configs/personas) naming the playbook.
type Spec struct {
	// Name is the playbook's name, which a persona's playbook (or name)
	// selects.
	Name string
	// Play is the playbook's straight-line program over the probe API,
	// given the run's Options.
	Play func(p *replay.Play, o Options)
	// Cap is the default call cap per run (findings included; see
	// Options.Caps), under the max_turns of the shipped persona, which
	// also counts the final turn.
	Cap int
	// Crawl is how many pages the playbook's crawl fetches, seeds
	// included, as part of its call cap; 0: it does not crawl.
	Crawl int
	// Render is how many pages its browser opens per run (the crawl's
	// HTML pages and, for security, the DOM-XSS canary renders and the
	// form submissions); 0: no rendering crawl. Renders are not tool
	// calls; each costs about a second (BENCHMARKS.md).
	Render int
}

// shipped is the table of the playbooks fleetd ships, one row per
// specialist. security's cap is large because its active rules probe
// every metadata field (a canary and a payload per place it lands), every
// discovered URL parameter and every agent with each probe family; on a
// platform with few of those it stops far below the cap.
var shipped = []Spec{
	{Name: "smoke", Play: smoke, Cap: 30},
	// crawl (40 pages), exposed paths, CORS probes, replays of high
	// findings, then the injection and agent probes
	{Name: "security", Play: security, Cap: 380, Crawl: 40, Render: 32},
	{Name: "fuzz", Play: func(p *replay.Play, o Options) { fuzzstage.Run(p, o.Corpus) }, Cap: 250},
	// crawl (40 pages), docs-contract checks, error probes, replies
	{Name: "ux", Play: ux, Cap: 90, Crawl: 40, Render: 12},
	{Name: "perf", Play: perf, Cap: 80},
}

// Playbooks is a table of playbook specs by name. Default holds the
// shipped ones; Add registers another.
type Playbooks struct {
	specs map[string]Spec
}

// Default returns a new table of the shipped playbooks. Adding to it
// changes no other table.
func Default() *Playbooks {
	t := &Playbooks{specs: map[string]Spec{}}
	for _, s := range shipped {
		if err := t.Add(s); err != nil {
			panic(err) // the shipped table is valid: TestNamesAndNew
		}
	}
	return t
}

// Add registers a playbook. It rejects a spec without a name or a program,
// a name that is not lowercase letters, digits and dashes, a cap that is
// not positive, a negative budget, and a name already in the table; the
// error names the spec and what was wrong.
func (t *Playbooks) Add(s Spec) error {
	switch {
	case s.Name == "":
		return errors.New("playbook spec: empty name")
	case !specName.MatchString(s.Name):
		return fmt.Errorf("playbook %q: name must be lowercase letters, digits and dashes", s.Name)
	case s.Play == nil:
		return fmt.Errorf("playbook %q: no program (Play)", s.Name)
	case s.Cap <= 0:
		return fmt.Errorf("playbook %q: cap %d, want a positive call cap", s.Name, s.Cap)
	case s.Crawl < 0 || s.Render < 0:
		return fmt.Errorf("playbook %q: negative budget (crawl %d, render %d)", s.Name, s.Crawl, s.Render)
	}
	if _, dup := t.specs[s.Name]; dup {
		return fmt.Errorf("playbook %q: already registered", s.Name)
	}
	t.specs[s.Name] = s
	return nil
}

var specName = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

// Names returns the table's playbook names, sorted.
func (t *Playbooks) Names() []string { return slices.Sorted(maps.Keys(t.specs)) }

// Cap returns the default call cap of the named playbook, 0 for an unknown
// name.
func (t *Playbooks) Cap(name string) int { return t.specs[name].Cap }

// New returns the named playbook as a fleet.Model. It fails for an unknown
// name or a negative cap in opts.Caps. A Playbook is one run's planner: it
// keeps the pages its rendering crawl rendered (Options.Renderer), so make
// a new one per run.
func (t *Playbooks) New(name string, opts Options) (fleet.Model, error) {
	spec, ok := t.specs[name]
	if !ok {
		return nil, fmt.Errorf("playbook %q: unknown (have %s)", name, strings.Join(t.Names(), ", "))
	}
	limit := spec.Cap
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
	opts.Properties = slices.Clone(opts.Properties)
	pb := &Playbook{spec: spec, opts: opts, cap: limit}
	if spec.Render > 0 {
		pb.renders = replay.NewRenders(opts.Renderer)
	}
	return pb, nil
}

// shippedTable is Default's table, behind the package-level Names, New
// and DefaultCap.
var shippedTable = Default()

// Names returns the shipped playbooks' names, sorted.
func Names() []string { return shippedTable.Names() }

// DefaultCap returns the default call cap of the named shipped playbook, 0
// for an unknown name.
func DefaultCap(name string) int { return shippedTable.Cap(name) }

// New returns the named shipped playbook (one of Names) as a fleet.Model;
// see Playbooks.New.
func New(name string, opts Options) (fleet.Model, error) { return shippedTable.New(name, opts) }

var (
	_ fleet.Model = (*Playbook)(nil)
	_ fleet.Ender = (*Playbook)(nil)
)

// Playbook is a deterministic planner: a fleet.Model that replays its
// program over the run's history on every Next (see the package doc).
type Playbook struct {
	spec    Spec
	opts    Options
	cap     int
	renders *replay.Renders // this run's rendering crawl; nil: off
}

// Name returns the playbook's name.
func (pb *Playbook) Name() string { return pb.spec.Name }

// Next implements fleet.Model. It replays the playbook over s.History and
// returns its first call beyond it, or Done with a summary when the program
// ends. A history that the program would not have produced (another tool or
// other arguments at some index) yields an error wrapping fleet.ErrMalformed;
// a bug in the playbook (a panic) yields a plain error.
func (pb *Playbook) Next(ctx context.Context, s *fleet.State) (fleet.Step, error) {
	if err := ctx.Err(); err != nil {
		return fleet.Step{}, err
	}
	cfg := replay.Config{Name: pb.spec.Name, Cap: pb.cap, Seed: pb.opts.Seed, CrawlBudget: pb.spec.Crawl,
		Renders: pb.renders, RenderBudget: pb.spec.Render, Context: ctx}
	return replay.Replay(s, cfg, func(p *replay.Play) { pb.spec.Play(p, pb.opts) })
}

// End implements fleet.Ender: when the run ends before the program does
// (the budget or the deadline spent, a tool's error, a cancellation),
// the program is replayed up to where it was cut off (s.EndedAt) and
// only its undo runs from there: what the run's POSTs created is deleted
// (replay.Play.UndoWrites), or listed as left on the platform when it
// cannot be (no call or write left, the kill switch, a refusal).
func (pb *Playbook) End(ctx context.Context, s *fleet.State) (fleet.Step, error) {
	return pb.Next(ctx, s)
}
