package specialists

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/qatools"
	"github.com/qafleet/fleetd/triggers"
)

// LoadPersonas reads every *.yaml in fsys's dir, decoding each with decode
// (cmd/fleetd's strict, ${ENV}-expanding YAML), and validates each against
// the tools, the playbooks and the cron parser (ValidatePersona); a name
// in reserved (the daemon's own stages) is refused. shownDir is where the
// files are said to be in errors ("": the built-in set, configs/personas).
// Errors name the file and the field; every file's are joined.
func LoadPersonas(fsys fs.FS, dir, shownDir string, decode func([]byte, any) error, reserved ...string) ([]fleet.Persona, error) {
	files, err := fs.Glob(fsys, path.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("personas: no *.yaml files in %s", cmp.Or(shownDir, "the built-in set"))
	}
	reg, err := qatools.NewRegistry(&qatools.Env{}, &qatools.Run{})
	if err != nil {
		return nil, err
	}
	var out []fleet.Persona
	var errs []error
	names := map[string]string{}
	for _, f := range files {
		shown := path.Join(cmp.Or(shownDir, "configs/personas"), path.Base(f))
		b, err := fs.ReadFile(fsys, f)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", shown, err))
			continue
		}
		var p fleet.Persona
		if err := decode(b, &p); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", shown, err))
			continue
		}
		if err := ValidatePersona(p, path.Base(f), reg, reserved...); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", shown, err))
			continue
		}
		if other, dup := names[p.Name]; dup {
			errs = append(errs, fmt.Errorf("%s: name %q is also used by %s", shown, p.Name, other))
			continue
		}
		names[p.Name] = shown
		out = append(out, p)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// ValidatePersona checks p, read from file, beyond fleet.Persona.Validate:
// its name is not reserved and matches the file's, every tool is one of
// reg's, qa_report is among them, a playbook planner names a playbook
// (Names), and a cron trigger parses.
func ValidatePersona(p fleet.Persona, file string, reg *fleet.Registry, reserved ...string) error {
	errs := []error{p.Validate()}
	if slices.Contains(reserved, p.Name) {
		errs = append(errs, fmt.Errorf("name: %q is reserved for the %s stage", p.Name, p.Name))
	}
	if want := strings.TrimSuffix(file, ".yaml"); p.Name != want {
		errs = append(errs, fmt.Errorf("name: %q must match the file name %q", p.Name, want))
	}
	for i, t := range p.Tools {
		if _, ok := reg.Get(t); !ok {
			errs = append(errs, fmt.Errorf("tools[%d]: unknown tool %q", i, t))
		}
	}
	if !slices.Contains(p.Tools, "qa_report") {
		errs = append(errs, errors.New("tools: must include qa_report, or the specialist cannot report anything"))
	}
	if p.Planner == fleet.PlannerPlaybook && !slices.Contains(Names(), p.PlaybookName()) {
		errs = append(errs, fmt.Errorf("playbook: %q is not a playbook (have: %s)", p.PlaybookName(), strings.Join(Names(), ", ")))
	}
	if p.Trigger.Cron != "" {
		if _, err := triggers.ParseCron(p.Trigger.Cron); err != nil {
			errs = append(errs, fmt.Errorf("trigger.cron: %w", err))
		}
	}
	return errors.Join(errs...)
}
