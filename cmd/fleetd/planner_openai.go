package main

import (
	"errors"
	"log/slog"

	"github.com/qafleet/fleetd/fleet"
)

func (a *app) openaiPlanner(logger *slog.Logger) (fleet.Model, string, error) {
	return nil, "", errors.New("openai planner: not wired yet")
}
