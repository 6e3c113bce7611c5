package triage

import (
	"fmt"
	"strings"
)

// CheckResult is a whole check (`fleetd check`), as its --json prints it.
type CheckResult struct {
	Specialists []string   `json:"specialists"`
	Dial        string     `json:"dial"`
	FailOn      string     `json:"fail_on"`
	Head        uint64     `json:"head"` // log entries compared with: [0, Head)
	Clusters    int        `json:"clusters"`
	Runs        []string   `json:"runs"`
	Posted      bool       `json:"posted"`
	Rows        []CheckRow `json:"rows"`
	Failing     int        `json:"failing"`
}

// Count is how many rows have status.
func (r CheckResult) Count(status string) int {
	n := 0
	for _, row := range r.Rows {
		if row.Status == status {
			n++
		}
	}
	return n
}

// Summary is the result as Markdown for a pull request comment. Text
// from the log and from the platform is escaped (MarkdownText), so
// a hostile page cannot inject links or markup into the comment.
func (r CheckResult) Summary() string {
	var b strings.Builder
	verdict := fmt.Sprintf("✅ nothing new or regressed at or above **%s**", r.FailOn)
	switch {
	case r.FailOn == "never":
		verdict = "ℹ️ `--fail-on never`: findings do not fail this check"
	case r.Failing > 0:
		verdict = fmt.Sprintf("❌ **%d new or regressed** at or above **%s**", r.Failing, r.FailOn)
	}
	fmt.Fprintf(&b, "## fleetd check: %d new, %d regressed, %d still open, %d no longer seen\n\n%s.\n\n",
		r.Count(CheckNew), r.Count(CheckRegressed), r.Count(CheckOpen), r.Count(CheckNoLongerIn), verdict)
	posted := "nothing was posted to the log"
	if r.Posted {
		posted = "the findings were posted to the log"
	}
	fmt.Fprintf(&b, "Ran %s once at dial %s and compared with the %d clusters of the feedback log (entries 0–%d); %s.\n",
		MarkdownText(strings.Join(r.Specialists, ", "), 200), r.Dial, r.Clusters, int64(r.Head)-1, posted)
	for _, sec := range []struct{ status, heading string }{
		{CheckNew, "New"}, {CheckRegressed, "Regressed (the log had it resolved)"}, {CheckOpen, "Still open"},
		{CheckAccepted, "Accepted risk on the log"}, {CheckDismissed, "Marked false positive on the log"}, {CheckNoLongerIn, "No longer seen"},
	} {
		var rows []CheckRow
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
			title := MarkdownText(row.Title, 200)
			if len(row.Places) > 0 {
				title += fmt.Sprintf(" (at %d places: %s)", len(row.Places), MarkdownText(strings.Join(row.Places, ", "), 200))
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", mark, row.Severity, MarkdownText(string(row.Surface), 32),
				title, MarkdownCode(row.Cluster, 16))
		}
	}
	b.WriteString("\nText quoted from the platform and the log is untrusted and escaped here.\n")
	return b.String()
}
