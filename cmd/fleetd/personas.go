package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/qafleet/fleetd/configs"
	fleetdaemon "github.com/qafleet/fleetd/daemon"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/specialists"
	"github.com/qafleet/fleetd/triggers"
	"github.com/spf13/cobra"
)

// loadPersonas reads every *.yaml in the config's personas_dir, or the
// embedded defaults when none is set, and validates each against the tools,
// the playbooks and the cron parser. Errors name the file and the field.
func (a probeCommands) loadPersonas() ([]fleet.Persona, error) {
	var fsys fs.FS = configs.Personas
	dir := "personas"
	where := a.cfg.PersonasDir
	if where != "" {
		where = a.cfg.resolve(where)
		fsys, dir = os.DirFS(where), "."
	}
	return loadPersonasFS(fsys, dir, where)
}

func loadPersonasFS(fsys fs.FS, dir, shownDir string) ([]fleet.Persona, error) {
	files, err := fs.Glob(fsys, path.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("personas: no *.yaml files in %s", orDefault(shownDir, "the built-in set"))
	}
	reg, err := toolsRegistry()
	if err != nil {
		return nil, err
	}
	var out []fleet.Persona
	var errs []error
	names := map[string]string{}
	for _, f := range files {
		shown := path.Join(orDefault(shownDir, "configs/personas"), path.Base(f))
		b, err := fs.ReadFile(fsys, f)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", shown, err))
			continue
		}
		var p fleet.Persona
		if err := decodeStrict(b, &p); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", shown, err))
			continue
		}
		if err := validatePersona(p, path.Base(f), reg); err != nil {
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

func validatePersona(p fleet.Persona, file string, reg *fleet.Registry) error {
	errs := []error{p.Validate()}
	if p.Name == triageName || p.Name == fixName {
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
	if p.Planner == fleet.PlannerPlaybook && !slices.Contains(playbookNames(), p.PlaybookName()) {
		errs = append(errs, fmt.Errorf("playbook: %q is not a playbook (have: %s)", p.PlaybookName(), strings.Join(playbookNames(), ", ")))
	}
	if p.Trigger.Cron != "" {
		if _, err := triggers.ParseCron(p.Trigger.Cron); err != nil {
			errs = append(errs, fmt.Errorf("trigger.cron: %w", err))
		}
	}
	return errors.Join(errs...)
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// persona returns the named specialist.
func (a probeCommands) persona(name string) (fleet.Persona, error) {
	ps, err := a.loadPersonas()
	if err != nil {
		return fleet.Persona{}, err
	}
	var have []string
	for _, p := range ps {
		if p.Name == name {
			return p, nil
		}
		have = append(have, p.Name)
	}
	return fleet.Persona{}, fmt.Errorf("no specialist %q (have: %s)", name, strings.Join(have, ", "))
}

// playbookNames lists the deterministic playbooks a persona may name.
func playbookNames() []string { return specialists.Names() }

func (a probeCommands) specialistsCmd() *cobra.Command {
	var onChain, asJSON bool
	cmd := &cobra.Command{
		Use:   "specialists",
		Short: "List the specialists (personas) with their planner, trigger and tools; --on-chain: compare with what the fleet published",
		Long: `Lists the specialists with their planner, trigger and tools.

The daemon publishes the running set on the feedback log as the fleet
identity (a sev=meta kind=persona record: each specialist's tools, trigger,
planner and a hash of its goal and prompt, and the dial's rung) whenever it
differs from the newest one there: at start, when the node comes back and
after a reload. --on-chain reads that record and says whether it matches
what this config runs; it exits 1 when it does not or none is published.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ps, err := a.loadPersonas()
			if err != nil {
				return err
			}
			if onChain {
				rung, _ := a.control().Dial()
				if asJSON {
					return a.onChain(cmd.Context(), fleetdaemon.NewSpecialistSet(ps, rung), true)
				}
				if err := a.printSpecialists(ps); err != nil {
					return err
				}
				return a.onChain(cmd.Context(), fleetdaemon.NewSpecialistSet(ps, rung), false)
			}
			if asJSON {
				rung, _ := a.control().Dial()
				set := fleetdaemon.NewSpecialistSet(ps, rung)
				return a.printJSON(map[string]any{"set": set.Hash(), "rung": set.Rung, "specialists": set.Lines})
			}
			return a.printSpecialists(ps)
		},
	}
	cmd.Flags().BoolVar(&onChain, "on-chain", false, "compare with the newest set the fleet identity published on the log")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func (a probeCommands) printSpecialists(ps []fleet.Persona) error {
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tPLANNER\tTRIGGER\tTOOLS")
	for _, p := range ps {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.Name, p.Planner, p.Trigger, strings.Join(p.Tools, ","))
	}
	return tw.Flush()
}
