package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"maps"
	"time"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/qatools"
	"github.com/qafleet/fleetd/sandbox"
	"github.com/qafleet/fleetd/specialists/replay"
	"github.com/qafleet/fleetd/trajectory"
	"go.yaml.in/yaml/v3"
)

// ErrPaused is returned when the kill switch keeps a run from starting.
var ErrPaused = errors.New("paused: the kill switch is on (fleetd resume to turn it off)")

// HarnessVersion is the run record format and loop contract version.
const HarnessVersion = "fleetd-loop/1"

// Config is what a run needs of the configuration it started on.
type Config struct {
	DataDir string       // runs' records under it, sandboxes in <DataDir>/qa-sandbox
	Budget  fleet.Budget // the config's budget; the persona's is merged over it
	Build   string       // the build, for the record's header
	// Planner builds the model that drives p: its configured planner, or
	// override (Options.Planner). render is the run's rendering crawl for
	// the playbooks. It returns the model and its name for the record.
	Planner func(ctx context.Context, p fleet.Persona, override string, target fleet.Target, render replay.Renderer, logger *slog.Logger) (fleet.Model, string, error)
	// Renderer starts the run's rendering crawl, jailed in jailDir, its page
	// writes asked of writes: the renderer (nil: off), its stop, and how it
	// is confined (the record's config "renderer"); sessions are the
	// identities qa_login signs in, which it may render as at exercise.
	Renderer func(env *Env, writes *qatools.PageWrites, jailDir string, sessions *qatools.Sessions) (replay.Renderer, func(), string, error)
	// RunEnded, when set (tests), is called as each run returns.
	RunEnded func()
}

// Options are the knobs of one specialist run.
type Options struct {
	Planner string // overrides the persona's planner
	Narrate func(fleet.TurnEvent)
	Logger  *slog.Logger
	Budget  func(fleet.Budget) fleet.Budget // caps the run's budget (the daily budget); nil: none
	// Model, when set, drives the run instead of the persona's planner (an
	// MCP session); ModelName names it in the run record, and Config adds
	// to the header's config.
	Model     fleet.Model
	ModelName string
	Config    map[string]any
	// Dial, when set, is the run's dial instead of the stored one (a
	// replay's --dial caps it); nil: env.Control.
	Dial fleet.DialSource
}

// Run runs p once: a fresh sandbox, a run record, the loop, and cleanup
// (names released, funds swept) however it ends. It returns ErrPaused
// (joined with the kill switch's read error, if any) without a sandbox when
// the kill switch is on.
func Run(ctx context.Context, c Config, env *Env, p fleet.Persona, o Options) (fleet.RunResult, error) {
	if paused, err := env.Control.Paused(); paused {
		return fleet.RunResult{}, errors.Join(ErrPaused, err)
	}
	var dialSrc fleet.DialSource = env.Control
	if o.Dial != nil {
		dialSrc = o.Dial
	}
	dial, _ := dialSrc.Dial()
	budget := c.Budget.Merge(p.Budget)
	if o.Budget != nil {
		budget = o.Budget(budget)
	}
	runID := sandbox.NewRunID(time.Now())
	sb, err := sandbox.Open(SandboxDir(c.DataDir), runID)
	if err != nil {
		return fleet.RunResult{}, err
	}
	model, modelName := o.Model, o.ModelName
	meter := sandbox.NewMeter(budget)
	// The pages the rendering crawl opens write only as the dial says,
	// from the run's own write budget.
	pageWrites := qatools.NewPageWrites(dialSrc, meter)
	// The identities qa_login signs in, which the rendering crawl may
	// render as while the dial allows exercise.
	sessions := qatools.NewSessions(dialSrc)
	if model == nil {
		// The rendering crawl's browser lives as long as this run, jailed
		// in the run's jail dir: it starts on the first page a playbook
		// renders and stops here. The run record says how it is confined.
		render, stop, how, err := c.Renderer(env, pageWrites, sb.JailDir(), sessions)
		if err != nil {
			sb.Discard()
			return fleet.RunResult{}, err
		}
		defer stop()
		o.Config = maps.Clone(o.Config)
		if o.Config == nil {
			o.Config = map[string]any{}
		}
		o.Config["renderer"] = how
		if model, modelName, err = c.Planner(ctx, p, o.Planner, env.Target, render, o.Logger); err != nil {
			sb.Discard()
			return fleet.RunResult{}, err
		}
	}
	run := &qatools.Run{ID: runID, Source: p.ReportingSource(), Sandbox: sb, Meter: meter, PageWrites: pageWrites, Sessions: sessions}
	tools, err := qatools.NewRegistry(env.Env, run, p.Tools...)
	if err != nil {
		sb.Discard()
		return fleet.RunResult{}, err
	}
	personaYAML, _ := yaml.Marshal(p)
	sum := sha256.Sum256(personaYAML)
	w, err := trajectory.Create(c.DataDir, runID, trajectory.Header{
		RunID: runID, Specialist: p.Name, Goal: p.Goal, PersonaSHA256: hex.EncodeToString(sum[:]),
		Build: c.Build, Model: modelName, HarnessVersion: HarnessVersion, Dial: dial.String(),
		Budget: fleet.TrajectoryBudget(budget), Tools: fleet.ToolManifest(tools.List()),
		Config: runConfig(env.Target, modelName, o.Config),
	})
	if err != nil {
		sb.Discard() // trajectory.Create leaves no partial record
		return fleet.RunResult{}, err
	}
	for _, k := range env.SecretKeys() {
		w.AddSecret(k)
	}
	cfg := fleet.LoopConfig{
		RunID: runID, Specialist: p.Name, Goal: p.Goal, Persona: p.Prompt, Target: env.Target,
		Model: model, Tools: tools, Dial: dialSrc, Paused: env.Control.Paused, Meter: meter, Record: w,
		Cleanup: func(ctx context.Context) error { return qatools.CleanupRun(ctx, env.Env, run) },
		Narrate: o.Narrate, PageWrites: pageWrites.Drain,
	}
	if env.Reporter != nil {
		cfg.Report = func(ctx context.Context, f fleet.Finding) error {
			_, err := env.Reporter.Report(ctx, f)
			return err
		}
	}
	res, err := fleet.Run(ctx, cfg)
	if c.RunEnded != nil {
		c.RunEnded()
	}
	return res, err
}

// runConfig is a run record header's config: the target and the planner,
// plus what the caller adds (an MCP session's client).
func runConfig(target fleet.Target, planner string, extra map[string]any) map[string]any {
	c := map[string]any{"target": target, "planner": planner}
	for k, v := range extra {
		c[k] = v
	}
	return c
}
