package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/qafleet/fleetd/fleet"
)

// harnessModel is qa_fuzz's harness writer (qatools.Env.HarnessModel):
// the model tools.harness_planner names, nil when it names none.
func (a *app) harnessModel(ctx context.Context, logger *slog.Logger) (fleet.Model, error) {
	if a.cfg.Tools.HarnessPlanner == "" {
		return nil, nil
	}
	m, _, err := a.models().Model(ctx, a.cfg.Tools.HarnessPlanner, logger)
	if err != nil {
		return nil, fmt.Errorf("tools.harness_planner: %w", err)
	}
	return m, nil
}
