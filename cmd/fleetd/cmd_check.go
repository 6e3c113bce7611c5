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
	"sync"
	"time"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/poster"
	"github.com/qafleet/fleetd/qatools"
	"github.com/qafleet/fleetd/sarif"
	"github.com/qafleet/fleetd/trajectory"
	"github.com/qafleet/fleetd/triage"
	"github.com/spf13/cobra"
)

// defaultCheckSpecialists are the specialists `fleetd check` runs without
// --specialists: the quick deterministic ones (fuzz and perf take minutes
// and belong to the service).
const defaultCheckSpecialists = "smoke,security,ux"

// Statuses of a finding of `fleetd check` against the log's clusters.
const (
	checkNew        = "new"            // in no cluster of the log
	checkRegressed  = "regressed"      // in a cluster the log marked resolved, or a false positive this finding regresses (a new crash state, a first repro)
	checkOpen       = "still open"     // in an open or regressed cluster
	checkDismissed  = "false positive" // in a cluster the log marked a false positive
	checkAccepted   = "accepted risk"  // in a cluster whose risk the log accepted (and the acceptance has not expired)
	checkNoLongerIn = "no longer seen" // an open cluster of these specialists that this check did not find
)

// checkHeld is what qa_report answers in a check without --post: the
// finding was collected, not posted.
const checkHeld poster.Status = "held"

// checkRow is one cluster in the check's result.
type checkRow struct {
	Status   string         `json:"status"`
	Cluster  string         `json:"cluster"`
	Severity fleet.Severity `json:"severity"`
	Surface  fleet.Surface  `json:"surface,omitempty"`
	Title    string         `json:"title"`
	Sources  []string       `json:"sources"`
	Places   []string       `json:"places,omitempty"` // where one behaviour was seen, when triage folded several places
	Findings int            `json:"findings"`         // findings of this check in the cluster; 0 for no longer seen
	Fails    bool           `json:"fails"`            // new or regressed, at or above --fail-on
}

// checkResult is a whole check.
type checkResult struct {
	Specialists []string   `json:"specialists"`
	Dial        string     `json:"dial"`
	FailOn      string     `json:"fail_on"`
	Head        uint64     `json:"head"` // log entries compared with: [0, Head)
	Clusters    int        `json:"clusters"`
	Runs        []string   `json:"runs"`
	Posted      bool       `json:"posted"`
	Rows        []checkRow `json:"rows"`
	Failing     int        `json:"failing"`
}

func (r *checkResult) count(status string) int {
	n := 0
	for _, row := range r.Rows {
		if row.Status == status {
			n++
		}
	}
	return n
}

// collector is qa_report's Reporter during a check: it keeps every finding
// and, with --post, passes it on to the fleet's poster.
type collector struct {
	mu    sync.Mutex
	post  qatools.Reporter // nil: hold
	found []fleet.Finding
}

var _ qatools.Reporter = (*collector)(nil)

func (c *collector) Report(ctx context.Context, f fleet.Finding) (poster.Result, error) {
	if c.post != nil {
		res, err := c.post.Report(ctx, f)
		if err == nil {
			c.keep(f)
		}
		return res, err
	}
	c.keep(f)
	return poster.Result{Status: checkHeld, FP: fleet.Fingerprint(f)}, nil
}

func (c *collector) keep(f fleet.Finding) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.found = append(c.found, f)
}

func (a probeCommands) checkCmd() *cobra.Command {
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
				if err := writeAtomic(summaryOut, []byte(checkSummary(res.checkResult))); err != nil {
					return &exitError{code: exitInfra, err: fmt.Errorf("check --summary: %w", err)}
				}
			}
			if asJSON {
				if err := a.printJSON(res.checkResult); err != nil {
					return err
				}
			} else {
				printCheck(a.stdout, res.checkResult)
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
func (a probeCommands) checkFlags(specs, failOn string) (names []string, floor fleet.Severity, err error) {
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
	checkResult
	sarif []byte
}

// runCheck runs the specialists, triages the log and compares.
func (a probeCommands) runCheck(ctx context.Context, names []string, floor fleet.Severity, post bool) (checkRun, error) {
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
	if env.Log == nil {
		return out, &exitError{code: exitConfig, err: errors.New("check compares with the feedback log: set chain.feedback_log in the config")}
	}
	if paused, _ := env.Control.Paused(); paused {
		return out, &exitError{code: exitPaused, err: ErrPaused}
	}
	// The log as it stands before this check posts anything: what the
	// findings are compared with.
	fa := findingsCommands{a.app}
	identity := fa.fleetIdentity()
	cfg, err := fa.triageConfig(identity)
	if err != nil {
		return out, &exitError{code: exitConfig, err: fmt.Errorf("triage config: %w", err)}
	}
	e, before, err := triageLog(ctx, env.Log, cfg, time.Now())
	if err != nil {
		return out, &exitError{code: exitInfra, err: err}
	}
	var sender fleet.Address
	switch {
	case identity != nil:
		sender = identity.Address()
	case len(cfg.Trusted) > 0:
		sender = cfg.Trusted[0]
	}
	col := &collector{}
	if post {
		if env.Poster == nil {
			return out, &exitError{code: exitConfig, err: errors.New("check --post posts as the fleet identity: set chain.fleet_key_file in the config")}
		}
		col.post = env.Poster
	}
	env.Reporter = col
	dial, _ := env.Control.Dial()
	out.Specialists, out.Dial, out.Posted = names, dial.String(), post
	out.FailOn = string(floor)
	if floor == "" {
		out.FailOn = "never"
	}
	var sources []string
	for _, n := range names {
		p, err := a.persona(n)
		if err != nil {
			return out, &exitError{code: exitConfig, err: err}
		}
		sources = append(sources, p.ReportingSource())
		fmt.Fprintf(a.stderr, "check: %s (dial %s)\n", n, dial)
		res, err := a.runSpecialist(ctx, env, p, runOptions{Logger: logger, Narrate: func(e fleet.TurnEvent) {
			fmt.Fprintln(a.stderr, "  "+e.SummaryLine())
		}})
		if res.RunID != "" {
			out.Runs = append(out.Runs, res.RunID)
		}
		switch {
		case errors.Is(err, ErrPaused):
			return out, &exitError{code: exitPaused, err: err}
		case err != nil && res.RunID == "":
			return out, &exitError{code: exitInfra, err: fmt.Errorf("check: %s: %w", n, err)}
		case res.Outcome != trajectory.OutcomeDone && res.Outcome != trajectory.OutcomeBudgetExhausted && res.Outcome != trajectory.OutcomeDeadlineExceeded:
			return out, &exitError{code: exitInfra, err: fmt.Errorf("check: %s: run %s ended %s", n, res.RunID, res.Outcome)}
		}
	}
	if post {
		// What the poster queued (the log did not answer) goes now rather
		// than at the next command that flushes.
		if _, _, err := env.Poster.Flush(ctx); err != nil {
			logger.Warn("flush the outbox", "err", err)
		}
	}
	cmp, err := compareFindings(e, before, sender, col.found, sources, floor, time.Now())
	if err != nil {
		return out, &exitError{code: exitInfra, err: err}
	}
	out.Rows, out.Head, out.Clusters, out.Failing = cmp.rows, cmp.head, cmp.clusters, cmp.failing
	if out.Rows == nil {
		out.Rows = []checkRow{}
	}
	opt := findingsCommands{a.app}.sarifOptions(fleet.Report{})
	opt.Text = func(c fleet.Cluster) string { return cmp.texts[c.ID] }
	opt.Baseline = func(c fleet.Cluster) string {
		switch cmp.status[c.ID] {
		case checkNew, checkRegressed:
			return "new"
		}
		return "unchanged"
	}
	var buf bytes.Buffer
	if err := sarif.Render(&buf, cmp.report, opt); err != nil {
		return out, err
	}
	out.sarif = buf.Bytes()
	return out, nil
}

// comparison is what compareFindings found.
type comparison struct {
	rows     []checkRow
	head     uint64
	clusters int
	failing  int
	report   fleet.Report      // the check's clusters, as triage ranks them with the check's findings added
	texts    map[string]string // cluster id -> the summary of the check's first finding in it
	status   map[string]string // cluster id -> check status
}

// triageLog triages the whole log with a fresh engine (so a daemon
// holding the triage store is no obstacle) and returns it with its report.
func triageLog(ctx context.Context, log *chain.FeedbackLog, cfg triage.Config, now time.Time) (*triage.Engine, fleet.Report, error) {
	// BuildEngine: an unmerge on the log splits its entry as triage does.
	e, err := triage.BuildEngine(cfg, func(add func([]triage.Entry) error) error {
		_, err := log.Scan(ctx, 0, add)
		return err
	})
	if err != nil {
		return nil, fleet.Report{}, fmt.Errorf("check: read the log: %w", err)
	}
	return e, e.Report(now), nil
}

// compareFindings adds the check's findings to e (the log's engine; before
// is its report) after the log's last entry, as sender would post them,
// and asks the engine which cluster each joined: a finding is judged the
// way triage would cluster it, similarity and corrections included.
func compareFindings(e *triage.Engine, before fleet.Report, sender fleet.Address, found []fleet.Finding, sources []string, floor fleet.Severity, now time.Time) (comparison, error) {
	var cmp comparison
	cmp.head, cmp.clusters = e.Next(), len(before.Clusters)
	known := rowsByCluster(before)
	base := e.Next()
	entries := make([]chain.Entry, 0, len(found))
	kept := make([]fleet.Finding, 0, len(found))
	for _, f := range found {
		if f.Surface == fleet.SurfaceFleet {
			continue // about the fleet itself (a run over its budget), not the change under test
		}
		text, err := fleet.Format(f)
		if err != nil {
			continue // qa_report would have refused it too
		}
		entries = append(entries, chain.Entry{Index: base + uint64(len(entries)), Sender: sender, Time: now, Text: text})
		kept = append(kept, f)
	}
	if err := e.Add(entries); err != nil {
		return cmp, fmt.Errorf("check: cluster the findings: %w", err)
	}
	after := e.Report(now)
	afterRows := rowsByCluster(after)
	rows := map[string]*checkRow{}
	var order []string
	cmp.texts, cmp.status = map[string]string{}, map[string]string{}
	for i, f := range kept {
		member, ok := e.ClusterOf(base + uint64(i))
		if !ok {
			continue
		}
		// The report's row for it: a place of a folded behaviour counts
		// as that behaviour (its row keeps the id of the place seen first).
		id := member
		if row, ok := afterRows[member]; ok {
			id = row.ID
		}
		row := rows[id]
		if row == nil {
			status := checkNew
			if prev, seen := known[id]; seen {
				switch prev.State {
				case fleet.ClusterResolved:
					status = checkRegressed
				case fleet.ClusterFalsePositive:
					status = checkDismissed
					if now, ok := afterRows[member]; ok && now.State == fleet.ClusterRegressed {
						status = checkRegressed // this finding is what the dismissal said would bring it back
					}
				case fleet.ClusterAcceptedRisk:
					status = checkAccepted
				default:
					status = checkOpen
				}
			}
			row = &checkRow{Status: status, Cluster: id, Severity: f.Severity, Surface: f.Surface, Title: f.Summary}
			rows[id], cmp.texts[id], cmp.status[id] = row, f.Summary, status
			order = append(order, id)
		}
		row.Findings++
		if f.Severity.Rank() > row.Severity.Rank() {
			row.Severity = f.Severity
		}
		if !slices.Contains(row.Sources, f.Source) {
			row.Sources = append(row.Sources, f.Source)
		}
	}
	for _, c := range after.Clusters {
		if row := rows[c.ID]; row != nil {
			row.Title = c.Title
			for _, p := range c.Places {
				row.Places = append(row.Places, p.Place)
			}
			cmp.report.Clusters = append(cmp.report.Clusters, c)
		}
	}
	cmp.report.Schema, cmp.report.GeneratedAt, cmp.report.Head = after.Schema, after.GeneratedAt, after.Head
	for _, id := range order {
		row := rows[id]
		row.Fails = floor != "" && (row.Status == checkNew || row.Status == checkRegressed) && row.Severity.Rank() >= floor.Rank()
		if row.Fails {
			cmp.failing++
		}
		cmp.rows = append(cmp.rows, *row)
	}
	for _, c := range before.Clusters {
		if rows[c.ID] != nil || !c.State.Active() || !c.Trusted || !slices.ContainsFunc(c.Sources, func(s string) bool { return slices.Contains(sources, s) }) {
			continue
		}
		cmp.rows = append(cmp.rows, checkRow{Status: checkNoLongerIn, Cluster: c.ID, Severity: c.Severity, Surface: c.Surface, Title: c.Title, Sources: c.Sources})
	}
	slices.SortStableFunc(cmp.rows, func(x, y checkRow) int { return statusOrder(x.Status) - statusOrder(y.Status) })
	return cmp, nil
}

// rowsByCluster maps every engine cluster id of r to its row: a row's own
// id and, for a folded behaviour, each place's cluster.
func rowsByCluster(r fleet.Report) map[string]fleet.Cluster {
	m := make(map[string]fleet.Cluster, len(r.Clusters))
	for _, c := range r.Clusters {
		m[c.ID] = c
		for _, p := range c.Places {
			m[p.Cluster] = c
		}
	}
	return m
}

func statusOrder(s string) int {
	return slices.Index([]string{checkNew, checkRegressed, checkOpen, checkAccepted, checkDismissed, checkNoLongerIn}, s)
}

// printCheck writes the result as a table for a terminal or a CI log.
func printCheck(w io.Writer, r checkResult) {
	fmt.Fprintf(w, "check of %s at dial %s against the log's %d clusters (entries 0-%d): %d new, %d regressed, %d still open, %d accepted risk, %d false positive, %d no longer seen\n",
		strings.Join(r.Specialists, ","), r.Dial, r.Clusters, int64(r.Head)-1, r.count(checkNew), r.count(checkRegressed), r.count(checkOpen), r.count(checkAccepted), r.count(checkDismissed), r.count(checkNoLongerIn))
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

// checkSummary is the result as Markdown for a pull request comment. Text
// from the log and from the platform is escaped (triage.MarkdownText), so
// a hostile page cannot inject links or markup into the comment.
func checkSummary(r checkResult) string {
	var b strings.Builder
	verdict := fmt.Sprintf("✅ nothing new or regressed at or above **%s**", r.FailOn)
	switch {
	case r.FailOn == "never":
		verdict = "ℹ️ `--fail-on never`: findings do not fail this check"
	case r.Failing > 0:
		verdict = fmt.Sprintf("❌ **%d new or regressed** at or above **%s**", r.Failing, r.FailOn)
	}
	fmt.Fprintf(&b, "## fleetd check: %d new, %d regressed, %d still open, %d no longer seen\n\n%s.\n\n",
		r.count(checkNew), r.count(checkRegressed), r.count(checkOpen), r.count(checkNoLongerIn), verdict)
	posted := "nothing was posted to the log"
	if r.Posted {
		posted = "the findings were posted to the log"
	}
	fmt.Fprintf(&b, "Ran %s once at dial %s and compared with the %d clusters of the feedback log (entries 0–%d); %s.\n",
		triage.MarkdownText(strings.Join(r.Specialists, ", "), 200), r.Dial, r.Clusters, int64(r.Head)-1, posted)
	for _, sec := range []struct{ status, heading string }{
		{checkNew, "New"}, {checkRegressed, "Regressed (the log had it resolved)"}, {checkOpen, "Still open"},
		{checkAccepted, "Accepted risk on the log"}, {checkDismissed, "Marked false positive on the log"}, {checkNoLongerIn, "No longer seen"},
	} {
		var rows []checkRow
		for _, row := range r.Rows {
			if row.Status == sec.status {
				rows = append(rows, row)
			}
		}
		if len(rows) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n### %s (%d)\n\n| | severity | surface | finding | cluster |\n|---|---|---|---|---|\n", sec.heading, len(rows))
		for _, row := range rows {
			mark := ""
			if row.Fails {
				mark = "❌"
			}
			title := triage.MarkdownText(row.Title, 200)
			if len(row.Places) > 0 {
				title += fmt.Sprintf(" (at %d places: %s)", len(row.Places), triage.MarkdownText(strings.Join(row.Places, ", "), 200))
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", mark, row.Severity, triage.MarkdownText(string(row.Surface), 32),
				title, triage.MarkdownCode(row.Cluster, 16))
		}
	}
	b.WriteString("\nText quoted from the platform and the log is untrusted and escaped here.\n")
	return b.String()
}

// writeAtomic writes b to path (relative to the working directory).
func writeAtomic(path string, b []byte) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	return fleet.WriteFileAtomic(abs, b, 0o644)
}
