package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/fleet/gemini"
)

// harnessModel is qa_fuzz's harness writer (qatools.Env.HarnessModel):
// the model tools.harness_planner names, nil when it names none.
func (a *app) harnessModel(ctx context.Context, logger *slog.Logger) (fleet.Model, error) {
	switch a.cfg.Tools.HarnessPlanner {
	case fleet.PlannerGemini:
		gc := a.cfg.Models.Gemini
		m, err := gemini.New(ctx, gemini.Config{APIKey: gc.APIKey, Model: gc.Model, Logger: logger})
		if err != nil {
			return nil, fmt.Errorf("tools.harness_planner gemini: models.gemini: %w", err)
		}
		return m, nil
	case fleet.PlannerOpenAI:
		m, _, err := (specialistCommands{a}).openaiPlanner(logger)
		if err != nil {
			return nil, fmt.Errorf("tools.harness_planner: %w", err)
		}
		return m, nil
	}
	return nil, nil
}
