package main

import (
	"fmt"
	"io/fs"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/qafleet/fleetd/configs"
	fleetdaemon "github.com/qafleet/fleetd/daemon"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/specialists"
	"github.com/spf13/cobra"
)

// loadPersonas reads every *.yaml in the config's personas_dir, or the
// embedded defaults when none is set, and validates each against the tools,
// the playbooks and the cron parser. Errors name the file and the field.
func (a specialistCommands) loadPersonas() ([]fleet.Persona, error) {
	var fsys fs.FS = configs.Personas
	dir := "personas"
	where := a.cfg.PersonasDir
	if where != "" {
		where = a.cfg.resolve(where)
		fsys, dir = os.DirFS(where), "."
	}
	return loadPersonasFS(fsys, dir, where)
}

// loadPersonasFS is specialists.LoadPersonas with the config's YAML
// decoder and the daemon's stages' names reserved.
func loadPersonasFS(fsys fs.FS, dir, shownDir string) ([]fleet.Persona, error) {
	return specialists.LoadPersonas(fsys, dir, shownDir, decodeStrict, triageName, fixName)
}

// persona returns the named specialist.
func (a specialistCommands) persona(name string) (fleet.Persona, error) {
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

func (a specialistCommands) specialistsCmd() *cobra.Command {
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

func (a specialistCommands) printSpecialists(ps []fleet.Persona) error {
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tPLANNER\tTRIGGER\tTOOLS")
	for _, p := range ps {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.Name, p.Planner, p.Trigger, strings.Join(p.Tools, ","))
	}
	return tw.Flush()
}
