package main

import (
	"context"
	"log/slog"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/fleet/gemini"
	"github.com/qafleet/fleetd/fleet/openai"
	"github.com/qafleet/fleetd/runner"
	"github.com/qafleet/fleetd/specialists"
	"github.com/qafleet/fleetd/specialists/replay"
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
var ErrPaused = runner.ErrPaused

// planner builds the model that drives p: its configured planner, or override.
// render is the run's rendering crawl for the playbooks (nil: off).
func (a specialistCommands) planner(ctx context.Context, p fleet.Persona, override string, target fleet.Target, render replay.Renderer, logger *slog.Logger) (fleet.Model, string, error) {
	kind := p.Planner
	if override != "" {
		kind = override
	}
	if kind != fleet.PlannerPlaybook {
		return a.models().Model(ctx, kind, logger)
	}
	opts, err := specialists.OptionsFor(target) // target.corpus and the files of target.abis
	if err != nil {
		return nil, "", err
	}
	opts.Renderer = render
	m, err := specialists.New(p.PlaybookName(), opts)
	return m, "playbook/" + p.PlaybookName(), err
}

// models are the model APIs of models: (runner.Models).
func (a *app) models() runner.Models {
	gc, oc := a.cfg.Models.Gemini, a.cfg.Models.OpenAI
	return runner.Models{Gemini: gemini.Config{APIKey: gc.APIKey, Model: gc.Model}, OpenAI: openai.Config{BaseURL: oc.BaseURL, APIKey: oc.APIKey, Model: oc.Model}}
}

// runOptions are the knobs of one specialist run.
type runOptions = runner.Options

// runSpecialist runs p once through the run core (runner.Run) on a's
// config: its data dir, budget, planners and rendering crawl.
func (a specialistCommands) runSpecialist(ctx context.Context, env *fleetEnv, p fleet.Persona, o runOptions) (fleet.RunResult, error) {
	return runner.Run(ctx, a.runConfig(), env, p, o)
}

// runConfig is what a run needs of a's config.
func (a specialistCommands) runConfig() runner.Config {
	return runner.Config{
		DataDir: a.dataDir(), Budget: a.cfg.budget(), Build: versionString(),
		Planner: a.planner, Renderer: a.crawl().Renderer, RunEnded: testHookRunEnded,
	}
}

// testHookRunEnded, when set (only by tests, before Main runs), is called
// as each specialist run returns: TestSoakCatchesALeak leaks a goroutine
// there to show the soak's growth rule catches one per run.
var testHookRunEnded func()

// harnessVersion is the run record format and loop contract version.
const harnessVersion = runner.HarnessVersion
