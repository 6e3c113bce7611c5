package runner

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/fleet/gemini"
	"github.com/qafleet/fleetd/fleet/openai"
)

// Models are the model APIs the config names (models:), as the adapters'
// configs; Model fills in the logger.
type Models struct {
	Gemini gemini.Config
	OpenAI openai.Config
}

// Model builds the model API kind names (fleet.PlannerGemini or
// fleet.PlannerOpenAI) and its name for the run record ("gemini/MODEL",
// "openai/MODEL"). Errors name the config section (models.gemini,
// models.openai); any other kind is an unknown planner.
func (m Models) Model(ctx context.Context, kind string, logger *slog.Logger) (fleet.Model, string, error) {
	switch kind {
	case fleet.PlannerGemini:
		gc := m.Gemini
		gc.Logger = logger
		model, err := gemini.New(ctx, gc)
		if err != nil {
			return nil, "", fmt.Errorf("models.gemini: %w", err)
		}
		name := gc.Model
		if name == "" {
			name = gemini.DefaultModel
		}
		return model, "gemini/" + name, nil
	case fleet.PlannerOpenAI:
		oc := m.OpenAI
		oc.Logger = logger
		model, err := openai.New(oc)
		if err != nil {
			return nil, "", fmt.Errorf("models.openai: %w", err)
		}
		return model, "openai/" + oc.Model, nil
	}
	return nil, "", fmt.Errorf("unknown planner %q (playbook, gemini, openai)", kind)
}
