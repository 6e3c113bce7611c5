package main

import (
	"context"
	"strings"
	"testing"
)

// TestHarnessPlannerConfig: tools.harness_planner names a configured
// model or nothing; anything else is a config error naming the key.
func TestHarnessPlannerConfig(t *testing.T) {
	if _, err := LoadConfig(writeConfig(t, "tools:\n  harness_planner: playbook\n")); err == nil || !strings.Contains(err.Error(), "tools.harness_planner") {
		t.Errorf("a bad harness planner: %v", err)
	}
	cfg, err := LoadConfig(writeConfig(t, "tools:\n  harness_planner: openai\nmodels:\n  openai:\n    base_url: http://127.0.0.1:1/v1\n    model: m\n"))
	if err != nil {
		t.Fatal(err)
	}
	if m, err := (&app{cfg: cfg}).harnessModel(context.Background(), nil); err != nil || m == nil {
		t.Errorf("openai: %v %v", m, err)
	}
	cfg.Tools.HarnessPlanner = ""
	if m, err := (&app{cfg: cfg}).harnessModel(context.Background(), nil); err != nil || m != nil {
		t.Errorf("none: %v %v", m, err)
	}
}
