package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/qatools"
	"github.com/qafleet/fleetd/sandbox"
	"github.com/spf13/cobra"
)

// toolsRegistry lists the tools with an empty environment: metadata only.
func toolsRegistry() (*fleet.Registry, error) {
	return qatools.NewRegistry(&qatools.Env{}, &qatools.Run{})
}

func (a specialistCommands) toolsCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "tools",
		Short: "List the qa_* tools with the dial rung each needs and its argument schema",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			reg, err := toolsRegistry()
			if err != nil {
				return err
			}
			if asJSON {
				for _, t := range reg.List() {
					if err := a.printJSON(t); err != nil {
						return err
					}
				}
				return nil
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TOOL\tRUNG\tARGUMENTS\tDESCRIPTION")
			for _, t := range reg.List() {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.Name, t.Rung, argList(t.Schema), clip(t.Description, 90))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			_, err = fmt.Fprintln(a.stdout, "\n* required. Full JSON schemas: fleetd tools --json")
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON object per tool")
	return cmd
}

// argList renders a schema's arguments compactly: name:type, * when required.
func argList(s *fleet.Schema) string {
	if s == nil || len(s.Properties) == 0 {
		return "-"
	}
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	slices.Sort(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + ":" + s.Properties[n].Type
		if slices.Contains(s.Required, n) {
			parts[i] += "*"
		}
	}
	return strings.Join(parts, " ")
}

// Exit statuses of `fleetd tool call`.
const (
	exitToolError = 1 // the tool ran and failed, or arguments were invalid
	exitRefused   = 3 // the dial (or the never-list) refused the call
)

func (a specialistCommands) toolCmd() *cobra.Command {
	c := &cobra.Command{Use: "tool", Short: "Call one qa_* tool by hand"}
	var args, source string
	call := &cobra.Command{
		Use:   "call NAME --args JSON",
		Short: "Run one tool in a fresh sandbox run under the stored dial and print its JSON result",
		Long: `Opens a fresh sandbox run, calls NAME with the JSON arguments through the
same dispatch path the agent loop uses (dial gate, validation, budgets), prints
the result as one JSON line, then releases any name the call minted and sweeps
its throwaway keys back to the sponsor. Exit status: 0 ok, 1 tool error or
invalid arguments, 3 refused.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, pos []string) error {
			ctx := cmd.Context()
			logger := a.warnLogger()
			env, err := a.buildEnv(ctx, logger)
			if err != nil {
				return err
			}
			defer env.Close()
			base := a.sandboxDir()
			if r := a.recoverCrashed(ctx, env, "fleetd tool call"); r.Err != nil {
				logger.Warn("recover crashed runs", "err", r.Err)
			} else if n := r.Closed() + len(r.Footers); n > 0 {
				logger.Warn("recovered crashed runs", "sandboxes", r.Closed(), "records", len(r.Footers))
			}
			runID := sandbox.NewRunID(time.Now())
			sb, err := sandbox.Open(base, runID)
			if err != nil {
				return err
			}
			run := &qatools.Run{ID: runID, Source: source, Sandbox: sb, Meter: sandbox.NewMeter(a.cfg.budget())}
			reg, err := qatools.NewRegistry(env.Env, run)
			if err != nil {
				sb.Discard() // the run never started
				return err
			}
			out, derr := reg.Dispatch(ctx, env.Control, pos[0], json.RawMessage(args))
			cerr := qatools.CleanupRun(context.WithoutCancel(ctx), env.Env, run)
			out.Result["run_id"] = runID
			if err := a.printJSON(out.Result); err != nil {
				return err
			}
			switch {
			case derr != nil:
				return errors.Join(derr, cerr)
			case cerr != nil:
				return cerr
			case out.Verdict == fleet.VerdictRefused:
				return &exitError{code: exitRefused, err: fmt.Errorf("%s: %s", pos[0], out.Result.Err())}
			case out.Verdict != fleet.VerdictOK:
				return &exitError{code: exitToolError, err: fmt.Errorf("%s: %s", pos[0], out.Result.Err())}
			}
			return nil
		},
	}
	call.Flags().StringVar(&args, "args", "{}", "the tool's arguments as a JSON object")
	call.Flags().StringVar(&source, "source", "qa-operator", "the reporting source qa_report uses")
	c.AddCommand(call)
	return c
}
