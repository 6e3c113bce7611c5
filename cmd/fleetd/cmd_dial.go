package main

import (
	"errors"
	"fmt"

	"github.com/qafleet/fleetd/fleet"
	"github.com/spf13/cobra"
)

func (a serviceCommands) dialCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dial",
		Short: "Show the autonomy dial (observe, exercise, propose)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			d, err := a.control().Dial()
			if err != nil {
				return fmt.Errorf("%w (treated as observe)", err)
			}
			paused, _ := a.control().Paused()
			_, err = fmt.Fprintf(a.stdout, "%s%s\n", d, map[bool]string{true: " (paused)"}[paused])
			return err
		},
	}
	var reason string
	set := &cobra.Command{
		Use:   "set RUNG --reason TEXT",
		Short: "Move the dial; takes effect at the next tool call of every run",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			to, err := fleet.ParseDial(args[0])
			if err != nil {
				return err
			}
			if reason == "" {
				return errors.New("dial set: --reason is required (it goes to the audit log)")
			}
			from, err := a.control().SetDial(to, reason, operator())
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(a.stdout, "dial %s -> %s\n", from, to)
			return err
		},
	}
	set.Flags().StringVar(&reason, "reason", "", "why (recorded in <data-dir>/audit.jsonl)")
	cmd.AddCommand(set)
	return cmd
}

func (a serviceCommands) pauseCmds() []*cobra.Command {
	var reason string
	pause := &cobra.Command{
		Use:   "pause",
		Short: "Kill switch: no run starts; running runs stop at their next tool call (names are still released)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if err := a.control().Pause(reason, operator()); err != nil {
				return err
			}
			_, err := fmt.Fprintln(a.stdout, "paused")
			return err
		},
	}
	pause.Flags().StringVar(&reason, "reason", "", "why (recorded in the audit log)")
	var resumeReason string
	resume := &cobra.Command{
		Use:   "resume",
		Short: "Turn the kill switch off",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if err := a.control().Resume(resumeReason, operator()); err != nil {
				return err
			}
			_, err := fmt.Fprintln(a.stdout, "resumed")
			return err
		},
	}
	resume.Flags().StringVar(&resumeReason, "reason", "", "why (recorded in the audit log)")
	return []*cobra.Command{pause, resume}
}
