package specialists

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/specialists/fuzzstage"
	"github.com/qafleet/fleetd/specialists/probe"
	"github.com/qafleet/fleetd/specialists/redteam"
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
	// ux render the HTML pages they crawl with it (renderBudget pages a
	// run) and run the browser checks (browser.go) on what it saw.
	Renderer probe.Renderer
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

// play is a playbook's straight-line program over the probe API; o are
// the playbook's options.
type play func(p *probe.Probe, o Options)

var plays = map[string]play{
	"smoke":    smoke,
	"security": security,
	"fuzz":     func(p *probe.Probe, o Options) { fuzzstage.Run(p, o.Corpus) },
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

// crawlBudget is how many pages each playbook's crawl fetches, seeds
// included. It is part of the playbook's call cap (see defaultCaps).
var crawlBudget = map[string]int{"security": 40, "ux": 40}

// renderBudget is how many pages each playbook's browser opens per run:
// the crawl's HTML pages and, for security, the DOM-XSS canary renders and
// the form submissions.
// Renders are not tool calls; each costs about a second (BENCHMARKS.md).
var renderBudget = map[string]int{"security": 32, "ux": 12}

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

var _ fleet.Model = (*Playbook)(nil)

// Playbook is a deterministic planner: a fleet.Model that replays its
// program over the run's history on every Next (see the package doc).
type Playbook struct {
	name    string
	play    play
	opts    Options
	cap     int
	renders *probe.Renders // this run's rendering crawl; nil: off
}

// New returns the named playbook (one of Names) as a fleet.Model. It fails
// for an unknown name or a negative cap. A Playbook is one run's planner:
// it keeps the pages its rendering crawl rendered (Options.Renderer), so
// make a new one per run.
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
	opts.Properties = slices.Clone(opts.Properties)
	pb := &Playbook{name: name, play: pl, opts: opts, cap: limit}
	if renderBudget[name] > 0 {
		pb.renders = probe.NewRenders(opts.Renderer)
	}
	return pb, nil
}

// Name returns the playbook's name.
func (pb *Playbook) Name() string { return pb.name }

// Next implements fleet.Model. It replays the playbook over s.History and
// returns its first call beyond it, or Done with a summary when the program
// ends. A history that the program would not have produced (another tool or
// other arguments at some index) yields an error wrapping fleet.ErrMalformed;
// a bug in the playbook (a panic) yields a plain error.
func (pb *Playbook) Next(ctx context.Context, s *fleet.State) (fleet.Step, error) {
	if err := ctx.Err(); err != nil {
		return fleet.Step{}, err
	}
	cfg := probe.Config{Name: pb.name, Cap: pb.cap, Seed: pb.opts.Seed, CrawlBudget: crawlBudget[pb.name],
		Renders: pb.renders, RenderBudget: renderBudget[pb.name], Context: ctx}
	return probe.Replay(s, cfg, func(p *probe.Probe) { pb.play(p, pb.opts) })
}
