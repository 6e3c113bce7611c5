package main

import (
	"fmt"
	"log/slog"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/fleet/openai"
)

// openaiPlanner builds the OpenAI-compatible planner from models.openai.
func (a specialistCommands) openaiPlanner(logger *slog.Logger) (fleet.Model, string, error) {
	oc := a.cfg.Models.OpenAI
	m, err := openai.New(openai.Config{BaseURL: oc.BaseURL, APIKey: oc.APIKey, Model: oc.Model, Logger: logger})
	if err != nil {
		return nil, "", fmt.Errorf("models.openai: %w", err)
	}
	return m, "openai/" + oc.Model, nil
}
