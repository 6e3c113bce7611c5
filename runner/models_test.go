package runner

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/fleet/gemini"
	"github.com/qafleet/fleetd/fleet/openai"
)

// TestModels builds each model API the config may name, with the name a
// run record gives it; a model API that cannot be built names its config
// section, and a kind that is no model API is an unknown planner.
func TestModels(t *testing.T) {
	ctx := context.Background()
	log := slog.New(slog.DiscardHandler)
	for _, tc := range []struct {
		name   string
		m      Models
		kind   string
		want   string // the model's name, or the error's text
		failed bool
	}{
		{"gemini default model", Models{Gemini: gemini.Config{APIKey: "k"}}, fleet.PlannerGemini, "gemini/" + gemini.DefaultModel, false},
		{"gemini named model", Models{Gemini: gemini.Config{APIKey: "k", Model: "gemini-x"}}, fleet.PlannerGemini, "gemini/gemini-x", false},
		{"gemini without a key", Models{}, fleet.PlannerGemini, "models.gemini: new gemini model: no API key", true},
		{"openai", Models{OpenAI: openai.Config{BaseURL: "http://127.0.0.1:1/v1", Model: "qwen"}}, fleet.PlannerOpenAI, "openai/qwen", false},
		{"openai without a model", Models{OpenAI: openai.Config{BaseURL: "http://127.0.0.1:1/v1"}}, fleet.PlannerOpenAI, "models.openai: openai: model: required", true},
		{"openai with a bad URL", Models{OpenAI: openai.Config{BaseURL: "ftp://x", Model: "m"}}, fleet.PlannerOpenAI, "models.openai: openai: base url", true},
		{"a playbook", Models{}, fleet.PlannerPlaybook, `unknown planner "playbook"`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, name, err := tc.m.Model(ctx, tc.kind, log)
			switch {
			case tc.failed && (err == nil || !strings.Contains(err.Error(), tc.want) || m != nil):
				t.Errorf("model %v, err %v; want an error naming %q", m, err, tc.want)
			case !tc.failed && (err != nil || m == nil || name != tc.want):
				t.Errorf("model %v named %q, err %v; want one named %q", m, name, err, tc.want)
			}
		})
	}
}
