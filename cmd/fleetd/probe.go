package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/fleet/gemini"
	"github.com/qafleet/fleetd/qatools"
	"github.com/qafleet/fleetd/sandbox"
	"github.com/qafleet/fleetd/specialists"
	"github.com/qafleet/fleetd/specialists/probe"
	"github.com/qafleet/fleetd/trajectory"
	"go.yaml.in/yaml/v3"
)

// ModelsConfig configures the LLM planners.
type ModelsConfig struct {
	Gemini GeminiConfig `yaml:"gemini"`
	OpenAI OpenAIConfig `yaml:"openai"`
}

// GeminiConfig configures the gemini planner.
type GeminiConfig struct {
	APIKey string `yaml:"api_key"`
	Model  string `yaml:"model"`
}

// OpenAIConfig configures the openai planner (any OpenAI-compatible server).
type OpenAIConfig struct {
	BaseURL string `yaml:"base_url"`
	APIKey  string `yaml:"api_key"`
	Model   string `yaml:"model"`
}

// ErrPaused is returned when the kill switch keeps a run from starting.
var ErrPaused = errors.New("paused: the kill switch is on (fleetd resume to turn it off)")

// planner builds the model that drives p: its configured planner, or override.
// render is the run's rendering crawl for the playbooks (nil: off).
func (a probeCommands) planner(ctx context.Context, p fleet.Persona, override string, target fleet.Target, render probe.Renderer, logger *slog.Logger) (fleet.Model, string, error) {
	kind := p.Planner
	if override != "" {
		kind = override
	}
	switch kind {
	case fleet.PlannerPlaybook:
		opts, err := specialists.OptionsFor(target) // target.corpus and the files of target.abis
		if err != nil {
			return nil, "", err
		}
		opts.Renderer = render
		m, err := specialists.New(p.PlaybookName(), opts)
		return m, "playbook/" + p.PlaybookName(), err
	case fleet.PlannerGemini:
		gc := a.cfg.Models.Gemini
		m, err := gemini.New(ctx, gemini.Config{APIKey: gc.APIKey, Model: gc.Model, Logger: logger})
		if err != nil {
			return nil, "", fmt.Errorf("models.gemini: %w", err)
		}
		return m, "gemini/" + orDefault(gc.Model, gemini.DefaultModel), nil
	case fleet.PlannerOpenAI:
		return a.openaiPlanner(logger)
	}
	return nil, "", fmt.Errorf("unknown planner %q (playbook, gemini, openai)", kind)
}

// runOptions are the knobs of one specialist run.
type runOptions struct {
	planner string
	narrate func(fleet.TurnEvent)
	logger  *slog.Logger
	budget  func(fleet.Budget) fleet.Budget // caps the run's budget (the daily budget); nil: none
	// model, when set, drives the run instead of the persona's planner (an
	// MCP session); modelName names it in the run record, and config adds
	// to the header's config.
	model     fleet.Model
	modelName string
	config    map[string]any
	// dial, when set, is the run's dial instead of the stored one (a
	// replay's --dial caps it); nil: env.control.
	dial fleet.DialSource
}

// runSpecialist runs p once: a fresh sandbox, a run record, the loop, and
// cleanup (names released, funds swept) however it ends.
func (a probeCommands) runSpecialist(ctx context.Context, env *fleetEnv, p fleet.Persona, o runOptions) (fleet.RunResult, error) {
	if paused, err := env.control.Paused(); paused {
		return fleet.RunResult{}, errors.Join(ErrPaused, err)
	}
	var dialSrc fleet.DialSource = env.control
	if o.dial != nil {
		dialSrc = o.dial
	}
	dial, _ := dialSrc.Dial()
	budget := a.cfg.budget().Merge(p.Budget)
	if o.budget != nil {
		budget = o.budget(budget)
	}
	runID := sandbox.NewRunID(time.Now())
	sb, err := sandbox.Open(filepath.Join(a.dataDir(), "qa-sandbox"), runID)
	if err != nil {
		return fleet.RunResult{}, err
	}
	model, modelName := o.model, o.modelName
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
		render, stop, how, err := a.rendererAs(env, pageWrites, sb.JailDir(), sessions)
		if err != nil {
			dropSandbox(sb)
			return fleet.RunResult{}, err
		}
		defer stop()
		o.config = maps.Clone(o.config)
		if o.config == nil {
			o.config = map[string]any{}
		}
		o.config["renderer"] = how
		if model, modelName, err = a.planner(ctx, p, o.planner, env.Target, render, o.logger); err != nil {
			dropSandbox(sb)
			return fleet.RunResult{}, err
		}
	}
	run := &qatools.Run{ID: runID, Source: p.ReportingSource(), Sandbox: sb, Meter: meter, PageWrites: pageWrites, Sessions: sessions}
	tools, err := qatools.NewRegistry(env.Env, run, p.Tools...)
	if err != nil {
		sb.Abandon()
		return fleet.RunResult{}, err
	}
	personaYAML, _ := yaml.Marshal(p)
	sum := sha256.Sum256(personaYAML)
	w, err := trajectory.Create(a.dataDir(), runID, trajectory.Header{
		RunID: runID, Specialist: p.Name, Goal: p.Goal, PersonaSHA256: hex.EncodeToString(sum[:]),
		Build: versionString(), Model: modelName, HarnessVersion: harnessVersion, Dial: dial.String(),
		Budget: fleet.TrajectoryBudget(budget), Tools: fleet.ToolManifest(tools.List()),
		Config: runConfig(env.Target, modelName, o.config),
	})
	if err != nil {
		sb.Abandon()
		return fleet.RunResult{}, err
	}
	for _, k := range env.secretKeys() {
		w.AddSecret(k)
	}
	cfg := fleet.LoopConfig{
		RunID: runID, Specialist: p.Name, Goal: p.Goal, Persona: p.Prompt, Target: env.Target,
		Model: model, Tools: tools, Dial: dialSrc, Paused: env.control.Paused, Meter: meter, Record: w,
		Cleanup: func(ctx context.Context) error { return qatools.CleanupRun(ctx, env.Env, run) },
		Narrate: o.narrate, PageWrites: pageWrites.Drain,
	}
	if env.Reporter != nil {
		cfg.Report = func(ctx context.Context, f fleet.Finding) error {
			_, err := env.Reporter.Report(ctx, f)
			return err
		}
	}
	res, err := fleet.Run(ctx, cfg)
	if testHookRunEnded != nil {
		testHookRunEnded()
	}
	return res, err
}

// dropSandbox removes the sandbox of a run that never started: nothing was
// minted or funded, and no record names it.
func dropSandbox(sb *sandbox.Sandbox) {
	sb.Close()
	os.RemoveAll(sb.Dir())
}

// testHookRunEnded, when set (only by tests, before Main runs), is called
// as each specialist run returns: TestSoakCatchesALeak leaks a goroutine
// there to show the soak's growth rule catches one per run.
var testHookRunEnded func()

// findingLine renders qa_report arguments for narration: severity, surface
// and the first line of the summary.
func findingLine(args []byte) string {
	var a struct{ Severity, Surface, Summary string }
	if json.Unmarshal(args, &a) != nil {
		return "(unreadable report arguments)"
	}
	summary := a.Summary
	if i := strings.IndexByte(summary, '\n'); i >= 0 {
		summary = summary[:i]
	}
	return fmt.Sprintf("%s %s: %s", a.Severity, a.Surface, clip(summary, 140))
}

// harnessVersion is the run record format and loop contract version.
const harnessVersion = "fleetd-loop/1"

// secretKeys returns the hex private keys the run records must never hold.
func (e *fleetEnv) secretKeys() []string {
	var out []string
	keys := []*chainKey{e.FleetKey, e.Sponsor}
	for _, role := range slices.Sorted(maps.Keys(e.Accounts)) {
		keys = append(keys, e.Accounts[role]) // operators' test accounts (target.auth.accounts)
	}
	for _, k := range keys {
		if k != nil {
			out = append(out, hex.EncodeToString(k.PrivateKey().D.FillBytes(make([]byte, 32))))
		}
	}
	return out
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
