package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/runner"
	"github.com/qafleet/fleetd/sarif"
	"github.com/qafleet/fleetd/triage"
	"github.com/spf13/cobra"
)

// defaultCheckSpecialists are the specialists `fleetd check` runs without
// --specialists: the quick deterministic ones (fuzz and perf take minutes
// and belong to the service).
const defaultCheckSpecialists = "smoke,security,ux"

func (a specialistCommands) checkCmd() *cobra.Command {
	var (
		specs, failOn, sarifOut, summaryOut string
		post, asJSON                        bool
	)
	cmd := &cobra.Command{
		Use:   "check [--specialists a,b] [--fail-on SEV] [--sarif F] [--summary F] [--post]",
		Short: "CI gate: run specialists once, compare with the log's clusters, fail only on new findings",
		Long: `Runs each chosen specialist once against the config's target (a preview
deployment, a compiler built from the commit under test), triages the
feedback log as it stands, and puts every finding of this check into the
cluster triage would put it in. It prints each cluster as new, regressed
(the log marked it resolved), still open, false positive (the log marked it
so), or no longer seen (open on the log, reported by these specialists, not
found now). --sarif writes the check's clusters as SARIF 2.1.0
(baselineState new or unchanged) and --summary a Markdown summary for a pull
request comment.

Nothing is posted to the log unless --post is given; the specialists run
under the stored dial (observe writes nothing anywhere). Exit status:
  0  nothing new or regressed at or above --fail-on
  1  a new or regressed finding at or above --fail-on; or the node, the
     platform or a file failed the check
  2  usage: a bad flag, specialist or severity, an output file whose
     directory does not exist, or a config without a target or a feedback log
  3  paused (the kill switch)`,
		Args: func(cmd *cobra.Command, args []string) error {
			if err := cobra.NoArgs(cmd, args); err != nil {
				return &exitError{code: exitConfig, err: err}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			names, floor, err := a.checkFlags(specs, failOn)
			if err != nil {
				return &exitError{code: exitConfig, err: err}
			}
			// Output paths are checked before minutes of runs, not after.
			for flag, path := range map[string]string{"--sarif": sarifOut, "--summary": summaryOut} {
				if path == "" {
					continue
				}
				if st, err := os.Stat(filepath.Dir(path)); err != nil || !st.IsDir() {
					return &exitError{code: exitConfig, err: fmt.Errorf("%s %s: its directory does not exist", flag, path)}
				}
			}
			res, err := a.runCheck(cmd.Context(), names, floor, post)
			if err != nil {
				return err
			}
			if sarifOut != "" {
				if err := writeAtomic(sarifOut, res.sarif); err != nil {
					return &exitError{code: exitInfra, err: fmt.Errorf("check --sarif: %w", err)}
				}
			}
			if summaryOut != "" {
				if err := writeAtomic(summaryOut, []byte(res.CheckResult.Summary())); err != nil {
					return &exitError{code: exitInfra, err: fmt.Errorf("check --summary: %w", err)}
				}
			}
			if asJSON {
				if err := a.printJSON(res.CheckResult); err != nil {
					return err
				}
			} else {
				printCheck(a.stdout, res.CheckResult)
			}
			if res.Failing > 0 {
				return &exitError{code: 1, err: fmt.Errorf("check: %d new or regressed finding(s) at or above %s", res.Failing, floor)}
			}
			return nil
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &exitError{code: exitConfig, err: err} })
	cmd.Flags().StringVar(&specs, "specialists", defaultCheckSpecialists, "comma-separated specialists to run once each")
	cmd.Flags().StringVar(&failOn, "fail-on", "high", "exit 1 when a new or regressed finding is at least this severe: critical, high, medium, low, info, or never")
	cmd.Flags().StringVar(&sarifOut, "sarif", "", "write the check's clusters as SARIF 2.1.0 to FILE (atomically)")
	cmd.Flags().StringVar(&summaryOut, "summary", "", "write a Markdown summary for a pull request comment to FILE (atomically)")
	cmd.Flags().BoolVar(&post, "post", false, "post the check's findings to the log as the fleet identity (off: nothing is posted)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as one JSON line instead of a table")
	return cmd
}

// checkFlags validates --specialists and --fail-on before anything runs.
// floor is the severity --fail-on names, "" for never.
func (a specialistCommands) checkFlags(specs, failOn string) (names []string, floor fleet.Severity, err error) {
	for _, n := range strings.Split(specs, ",") {
		if n = strings.TrimSpace(n); n == "" {
			continue
		}
		if slices.Contains(names, n) {
			return nil, "", fmt.Errorf("--specialists: %q is named twice", n)
		}
		if _, err := a.persona(n); err != nil {
			return nil, "", fmt.Errorf("--specialists: %w", err)
		}
		names = append(names, n)
	}
	if len(names) == 0 {
		return nil, "", errors.New("--specialists: name at least one specialist")
	}
	if strings.EqualFold(failOn, "never") {
		return names, "", nil
	}
	floor, err = fleet.ParseSeverity(failOn)
	if err != nil || floor.Rank() < fleet.SeverityInfo.Rank() {
		return nil, "", fmt.Errorf("--fail-on %q: want critical, high, medium, low, info or never", failOn)
	}
	return names, floor, nil
}

// checkRun is a check's result and its SARIF.
type checkRun struct {
	triage.CheckResult
	sarif []byte
}

// runCheck runs the check (runner.Check) on the config's environment and
// renders its clusters as SARIF; errors are exitErrors with check's codes.
func (a specialistCommands) runCheck(ctx context.Context, names []string, floor fleet.Severity, post bool) (checkRun, error) {
	var out checkRun
	logger := a.warnLogger()
	env, err := a.buildEnv(ctx, logger)
	if err != nil {
		if errors.Is(err, chain.ErrUnreachable) {
			return out, &exitError{code: exitInfra, err: err}
		}
		return out, &exitError{code: exitConfig, err: err}
	}
	defer env.Close()
	fa := findingsCommands{a.app}
	o := runner.CheckOptions{Identity: fa.fleetIdentity(), Floor: floor, Post: post, Logger: logger, Progress: a.stderr}
	if o.Triage, err = fa.triageConfig(o.Identity); err != nil {
		return out, &exitError{code: exitConfig, err: fmt.Errorf("triage config: %w", err)}
	}
	for _, n := range names {
		p, err := a.persona(n)
		if err != nil {
			return out, &exitError{code: exitConfig, err: err}
		}
		o.Specialists = append(o.Specialists, p)
	}
	res, err := runner.Check(ctx, a.runConfig(), env, o)
	out.CheckResult = res.CheckResult
	switch {
	case errors.Is(err, ErrPaused):
		return out, &exitError{code: exitPaused, err: err}
	case errors.Is(err, runner.ErrCheckNoLog), errors.Is(err, runner.ErrCheckNoPoster):
		return out, &exitError{code: exitConfig, err: err}
	case err != nil:
		return out, &exitError{code: exitInfra, err: err}
	}
	cmp := res.Comparison
	opt := fa.sarifOptions(fleet.Report{})
	opt.Text = func(c fleet.Cluster) string { return cmp.Texts[c.ID] }
	opt.Baseline = func(c fleet.Cluster) string {
		switch cmp.Status[c.ID] {
		case triage.CheckNew, triage.CheckRegressed:
			return "new"
		}
		return "unchanged"
	}
	var buf bytes.Buffer
	if err := sarif.Render(&buf, cmp.Report, opt); err != nil {
		return out, err
	}
	out.sarif = buf.Bytes()
	return out, nil
}

// printCheck writes the result as a table for a terminal or a CI log.
func printCheck(w io.Writer, r triage.CheckResult) {
	fmt.Fprintf(w, "check of %s at dial %s against the log's %d clusters (entries 0-%d): %d new, %d regressed, %d still open, %d accepted risk, %d false positive, %d no longer seen\n",
		strings.Join(r.Specialists, ","), r.Dial, r.Clusters, int64(r.Head)-1, r.Count(triage.CheckNew), r.Count(triage.CheckRegressed), r.Count(triage.CheckOpen), r.Count(triage.CheckAccepted), r.Count(triage.CheckDismissed), r.Count(triage.CheckNoLongerIn))
	for _, row := range r.Rows {
		mark := " "
		if row.Fails {
			mark = "!"
		}
		title := triage.PlainText(row.Title, 120)
		if n := len(row.Places); n > 0 {
			title = fmt.Sprintf("[%d places] %s", n, title)
		}
		fmt.Fprintf(w, "%s %-15s %-8s %-14s %s  %s\n", mark, row.Status, row.Severity, triage.PlainText(string(row.Surface), 14), row.Cluster, title)
	}
	switch {
	case r.FailOn == "never":
		fmt.Fprintln(w, "--fail-on never: the check does not fail on findings")
	case r.Failing > 0:
		fmt.Fprintf(w, "FAIL: %d new or regressed at or above %s (marked !)\n", r.Failing, r.FailOn)
	default:
		fmt.Fprintf(w, "PASS: nothing new or regressed at or above %s\n", r.FailOn)
	}
}

// writeAtomic writes b to path (relative to the working directory).
func writeAtomic(path string, b []byte) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	return fleet.WriteFileAtomic(abs, b, 0o644)
}
