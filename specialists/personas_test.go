package specialists

import (
	"bytes"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/qafleet/fleetd/configs"
	"go.yaml.in/yaml/v3"
)

// strictYAML decodes refusing unknown keys (cmd/fleetd passes its own,
// which also expands ${ENV}).
func strictYAML(b []byte, out any) error {
	d := yaml.NewDecoder(bytes.NewReader(b))
	d.KnownFields(true)
	return d.Decode(out)
}

func TestBuiltinPersonas(t *testing.T) {
	ps, err := LoadPersonas(configs.Personas, "personas", "", strictYAML)
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

func TestPersonaErrorsNameFileAndField(t *testing.T) {
	for _, tc := range []struct{ file, body, want string }{
		{"bad.yaml", "name: bad\ngoal: g\ntools: [qa_fetch, qa_nope, qa_report]\nplanner: playbook\nplaybook: smoke\n", `bad.yaml: tools[1]: unknown tool "qa_nope"`},
		{"cron.yaml", "name: cron\ngoal: g\ntools: [qa_report]\nplanner: playbook\nplaybook: smoke\ntrigger:\n  cron: \"61 * * * *\"\n", "cron.yaml: trigger.cron: cron spec"},
		{"plan.yaml", "name: plan\ngoal: g\ntools: [qa_report]\nplanner: gpt5\n", `plan.yaml: planner: "gpt5" is not one of`},
		{"pb.yaml", "name: pb\ngoal: g\ntools: [qa_report]\nplanner: playbook\n", `pb.yaml: playbook: "pb" is not a playbook`},
		{"other.yaml", "name: renamed\ngoal: g\ntools: [qa_report]\nplanner: playbook\nplaybook: smoke\n", `name: "renamed" must match the file name "other"`},
		{"noreport.yaml", "name: noreport\ngoal: g\ntools: [qa_fetch]\nplanner: playbook\nplaybook: smoke\n", "must include qa_report"},
		{"two.yaml", "name: two\ngoal: g\ntools: [qa_report]\nplanner: playbook\nplaybook: smoke\ntrigger:\n  every: 1m\n  continuous: true\n", "trigger: set only one"},
		{"ev.yaml", "name: ev\ngoal: g\ntools: [qa_report]\nplanner: playbook\nplaybook: smoke\ntrigger:\n  events: [on_tuesday]\n", `trigger.events[0]: "on_tuesday"`},
		{"prompt.yaml", "name: prompt\ngoal: g\ntools: [qa_report]\nplanner: openai\n", "prompt: required for planner openai"},
		{"stage.yaml", "name: stage\ngoal: g\ntools: [qa_report]\nplanner: playbook\nplaybook: smoke\n", `name: "stage" is reserved for the stage stage`},
	} {
		t.Run(tc.file, func(t *testing.T) {
			fsys := fstest.MapFS{"p/" + tc.file: {Data: []byte(tc.body)}}
			_, err := LoadPersonas(fsys, "p", "/etc/fleetd/personas", strictYAML, "stage")
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "/etc/fleetd/personas/"+tc.file) {
				t.Errorf("got %v, want %q naming the file", err, tc.want)
			}
		})
	}
}

// TestPersonasEveryFileErrs: every bad file is named in one error (not the
// first only), and a directory with no persona file is refused by name.
func TestPersonasEveryFileErrs(t *testing.T) {
	fsys := fstest.MapFS{
		"p/a.yaml": {Data: []byte("name: a\ngoal: g\ntools: [qa_fetch]\nplanner: playbook\nplaybook: smoke\n")},
		"p/b.yaml": {Data: []byte("name: b\ngoal: g\ntools: [qa_report]\nplanner: playbook\nplaybook: nope\n")},
		"p/c.yaml": {Data: []byte("name: c\ngoal: g\ntools: [qa_report]\nplanner: playbook\nplaybook: smoke\n")},
	}
	ps, err := LoadPersonas(fsys, "p", "/etc/fleetd/personas", strictYAML)
	if ps != nil || err == nil || !strings.Contains(err.Error(), "/etc/fleetd/personas/a.yaml") || !strings.Contains(err.Error(), "/etc/fleetd/personas/b.yaml") || strings.Contains(err.Error(), "c.yaml") {
		t.Fatalf("got %v, %v; want one error naming a.yaml and b.yaml only", ps, err)
	}
	if _, err := LoadPersonas(fstest.MapFS{}, "p", "/etc/fleetd/personas", strictYAML); err == nil || !strings.Contains(err.Error(), "no *.yaml files in /etc/fleetd/personas") {
		t.Fatalf("empty dir: %v", err)
	}
}
