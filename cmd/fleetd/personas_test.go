package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/qafleet/fleetd/configs"
)

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

// TestPersonaErrorsNameFileAndField: the config's YAML decoder and the
// daemon's stages' reserved names reach the personas' validation
// (specialists.LoadPersonas, whose tests attack the rest).
func TestPersonaErrorsNameFileAndField(t *testing.T) {
	for _, tc := range []struct{ file, body, want string }{
		{"key.yaml", "name: key\ngoal: g\ntools: [qa_report]\nplanner: playbook\nplaybok: smoke\n", `key.yaml: line 5: unknown key "playbok"`},
		{"triage.yaml", "name: triage\ngoal: g\ntools: [qa_report]\nplanner: playbook\nplaybook: smoke\n", `name: "triage" is reserved`},
		{"fix.yaml", "name: fix\ngoal: g\ntools: [qa_report]\nplanner: playbook\nplaybook: smoke\n", `name: "fix" is reserved`},
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
