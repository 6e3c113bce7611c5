package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/qafleet/fleetd/configs"
)

func TestBuiltinPersonas(t *testing.T) {
	ps, err := loadPersonasFS(configs.Personas, "personas", "")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range ps {
		names = append(names, p.Name)
	}
	if strings.Join(names, ",") != "fuzz,perf,security,smoke,ux" {
		t.Errorf("built-in specialists %v", names)
	}
}

// TestSixthSpecialistIsAFile adds a specialist by writing one file.
func TestSixthSpecialistIsAFile(t *testing.T) {
	dir := t.TempDir()
	entries, _ := configs.Personas.ReadDir("personas")
	for _, e := range entries {
		b, _ := configs.Personas.ReadFile("personas/" + e.Name())
		os.WriteFile(filepath.Join(dir, e.Name()), b, 0o600)
	}
	os.WriteFile(filepath.Join(dir, "docs-watch.yaml"), []byte(`name: docs-watch
goal: Keep an eye on the public docs.
prompt: You watch the docs.
tools: [qa_fetch, qa_report]
planner: gemini
trigger:
  every: 15m
`), 0o600)
	cfg := writeConfig(t, "personas_dir: "+dir+"\n")
	out, stderr, code := run(t, "", "specialists", "--config", cfg)
	if code != 0 {
		t.Fatalf("specialists: %s", stderr)
	}
	if !strings.Contains(out, "docs-watch") || strings.Count(out, "\n") != 7 {
		t.Errorf("specialists output:\n%s", out)
	}
}

func TestPersonaErrorsNameFileAndField(t *testing.T) {
	for _, tc := range []struct{ file, body, want string }{
		{"bad.yaml", "name: bad\ngoal: g\ntools: [qa_fetch, qa_nope, qa_report]\nplanner: playbook\nplaybook: smoke\n", `bad.yaml: tools[1]: unknown tool "qa_nope"`},
		{"cron.yaml", "name: cron\ngoal: g\ntools: [qa_report]\nplanner: playbook\nplaybook: smoke\ntrigger:\n  cron: \"61 * * * *\"\n", "cron.yaml: trigger.cron: cron spec"},
		{"plan.yaml", "name: plan\ngoal: g\ntools: [qa_report]\nplanner: gpt5\n", `plan.yaml: planner: "gpt5" is not one of`},
		{"pb.yaml", "name: pb\ngoal: g\ntools: [qa_report]\nplanner: playbook\n", `pb.yaml: playbook: "pb" is not a playbook`},
		{"key.yaml", "name: key\ngoal: g\ntools: [qa_report]\nplanner: playbook\nplaybok: smoke\n", `key.yaml: line 5: unknown key "playbok"`},
		{"other.yaml", "name: renamed\ngoal: g\ntools: [qa_report]\nplanner: playbook\nplaybook: smoke\n", `name: "renamed" must match the file name "other"`},
		{"noreport.yaml", "name: noreport\ngoal: g\ntools: [qa_fetch]\nplanner: playbook\nplaybook: smoke\n", "must include qa_report"},
		{"two.yaml", "name: two\ngoal: g\ntools: [qa_report]\nplanner: playbook\nplaybook: smoke\ntrigger:\n  every: 1m\n  continuous: true\n", "trigger: set only one"},
		{"ev.yaml", "name: ev\ngoal: g\ntools: [qa_report]\nplanner: playbook\nplaybook: smoke\ntrigger:\n  events: [on_tuesday]\n", `trigger.events[0]: "on_tuesday"`},
		{"prompt.yaml", "name: prompt\ngoal: g\ntools: [qa_report]\nplanner: openai\n", "prompt: required for planner openai"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			fsys := fstest.MapFS{"p/" + tc.file: {Data: []byte(tc.body)}}
			_, err := loadPersonasFS(fsys, "p", "/etc/fleetd/personas")
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "/etc/fleetd/personas/"+tc.file) {
				t.Errorf("got %v, want %q naming the file", err, tc.want)
			}
		})
	}
}
