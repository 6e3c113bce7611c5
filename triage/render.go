package triage

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/qafleet/fleetd/fleet"
)

// Formats Render understands.
const (
	FormatMarkdown = "md"
	FormatJSON     = "json"
	FormatTable    = "table"
)

// Render writes r in format (md, json or table), showing at most top
// clusters (all when top <= 0). now is used for the report's age.
func Render(w io.Writer, r fleet.Report, format string, top int, now time.Time) error {
	switch format {
	case FormatMarkdown, "markdown":
		return RenderMarkdown(w, r, top, now)
	case FormatJSON:
		return RenderJSON(w, r, top)
	case FormatTable:
		return RenderTable(w, r, top, now)
	}
	return fmt.Errorf("render report: unknown format %q: want md, json or table", format)
}

func topN(r fleet.Report, top int) []fleet.Cluster {
	if top <= 0 || top > len(r.Clusters) {
		return r.Clusters
	}
	return r.Clusters[:top]
}

// RenderJSON writes r as indented JSON, with at most top clusters.
// encoding/json escapes <, > and & and replaces invalid UTF-8, so the output
// is safe to embed anywhere JSON is.
func RenderJSON(w io.Writer, r fleet.Report, top int) error {
	r.Clusters = topN(r, top)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("render report json: %w", err)
	}
	return nil
}

// RenderMarkdown writes r as a Markdown document: a summary, a table of at
// most top clusters and the repro of each. Every string from the log is
// escaped (see MarkdownText), so a hostile entry renders as its literal
// text: no HTML, no links or images, no table breakage, no control or
// bidirectional-override characters.
func RenderMarkdown(w io.Writer, r fleet.Report, top int, now time.Time) error {
	var b strings.Builder
	t := r.Totals
	fmt.Fprintf(&b, "# fleetd health report\n\n")
	fmt.Fprintf(&b, "Generated %s (%s ago) from log entries 0–%d", r.GeneratedAt.Format(time.RFC3339), age(now, r.GeneratedAt), int64(r.Head)-1)
	if r.Block != 0 {
		fmt.Fprintf(&b, " read at block %d", r.Block)
	}
	b.WriteString(".\n\n")
	accepted := ""
	if t.AcceptedRisk > 0 {
		accepted = fmt.Sprintf(", %d accepted risk", t.AcceptedRisk)
	}
	fmt.Fprintf(&b, "**%d open, %d regressed**, %d resolved%s, %d false positive in %d clusters; %d findings (%d free-form, %d malformed, %d from untrusted senders), %d meta summaries, %d corrections (%d applied, %d ignored from untrusted senders, %d invalid).\n\n",
		t.Open, t.Regressed, t.Resolved, accepted, t.FalsePositive, t.Clusters, t.Findings, t.FreeForm, t.Malformed, t.Untrusted, t.Meta, t.Corrections, t.CorrectionsApplied, t.CorrectionsIgnored, t.CorrectionsInvalid)
	if t.Causes > 0 {
		fmt.Fprintf(&b, "%d cause records from bisections (%d ignored from untrusted senders, %d invalid).\n\n", t.Causes, t.CausesIgnored, t.CausesInvalid)
	}
	b.WriteString("Text quoted from the log is untrusted data: it is escaped here and must never be pasted into a shell or a prompt.\n\n")
	rows := topN(r, top)
	if len(rows) == 0 {
		b.WriteString("No findings.\n")
		_, err := io.WriteString(w, b.String())
		return err
	}
	b.WriteString("| # | score | sev | surface | title | state | count | runs | sources | first seen | last seen | entries |\n")
	b.WriteString("|---:|---:|---|---|---|---|---:|---:|---|---|---|---|\n")
	for _, row := range rows {
		title := MarkdownText(row.Title, 120)
		if !row.Trusted {
			title = "⚠ untrusted: " + title
		}
		if n := len(row.Places); n > 0 {
			title = fmt.Sprintf("%s (at %d places)", title, n)
		}
		surface := string(row.Surface)
		if surface == "" {
			surface = "free-form"
		}
		fmt.Fprintf(&b, "| %d | %.2f | %s | %s | %s | %s | %d | %d | %s | %s | %s | %s |\n",
			row.Rank, row.Score, row.Severity, MarkdownText(surface, 32), title, stateLabel(row), row.Count, row.Runs,
			MarkdownText(strings.Join(row.Sources, ", "), 80), day(row.FirstSeen), day(row.LastSeen), entryList(row))
	}
	if len(rows) < len(r.Clusters) {
		fmt.Fprintf(&b, "\n%d more clusters are in latest.json.\n", len(r.Clusters)-len(rows))
	}
	var prs []fleet.Cluster
	for _, row := range rows {
		if row.PR != nil {
			prs = append(prs, row)
		}
	}
	if len(prs) > 0 {
		b.WriteString("\n## Pull requests\n\n")
		for _, row := range prs {
			fmt.Fprintf(&b, "- #%d %s: PR %d, %s: %s\n", row.Rank, MarkdownCode(row.ID, 16), row.PR.Number, MarkdownText(row.PR.State, 10), MarkdownCode(row.PR.URL, 300))
		}
	}
	var caused []fleet.Cluster
	for _, row := range rows {
		if row.Cause != nil {
			caused = append(caused, row)
		}
	}
	if len(caused) > 0 {
		b.WriteString("\n## Causes\n\nThe commit that introduced each bug, as the fix stage's bisection found it:\n\n")
		for _, row := range caused {
			fmt.Fprintf(&b, "- #%d %s: %s (entry %d)\n", row.Rank, MarkdownCode(row.ID, 16), causeMarkdown(row.Cause), row.Cause.Entry)
		}
	}
	var folded []fleet.Cluster
	for _, row := range rows {
		if len(row.Places) > 0 {
			folded = append(folded, row)
		}
	}
	if len(folded) > 0 {
		b.WriteString("\n## Places\n\nOne behaviour seen at several places is one row; where it was seen:\n\n")
		for _, row := range folded {
			fmt.Fprintf(&b, "- #%d %s: %s\n", row.Rank, MarkdownCode(row.ID, 16), placeList(row, func(s string) string { return MarkdownCode(s, 120) }))
		}
	}
	var corrected []fleet.Cluster
	for _, row := range rows {
		if len(row.Corrections) > 0 || row.StateReason != "" {
			corrected = append(corrected, row)
		}
	}
	if len(corrected) > 0 {
		b.WriteString("\n## Corrections\n\nWhy a state is what it is, and every correction applied, oldest first:\n\n")
		for _, row := range corrected {
			fmt.Fprintf(&b, "- #%d %s %s", row.Rank, MarkdownCode(row.ID, 16), row.State)
			if row.StateReason != "" {
				fmt.Fprintf(&b, ": %s", MarkdownText(row.StateReason, 300))
			}
			b.WriteString("\n")
			for _, n := range row.Corrections {
				fmt.Fprintf(&b, "  - entry %d %s of %s", n.Entry, n.Kind, MarkdownCode(n.Ref, 20))
				if n.Of != "" {
					fmt.Fprintf(&b, " (%s)", MarkdownCode(n.Of, 20))
				}
				if n.Until != nil {
					fmt.Fprintf(&b, " until %s", n.Until.Format(time.RFC3339))
				}
				if n.Reason != "" {
					fmt.Fprintf(&b, ": %s", MarkdownText(n.Reason, 200))
				}
				b.WriteString("\n")
			}
		}
	}
	b.WriteString("\n## Repros\n\n")
	for _, row := range rows {
		if row.Repro == nil {
			continue
		}
		fmt.Fprintf(&b, "- #%d %s: %s\n", row.Rank, MarkdownCode(row.ID, 16), MarkdownCode(reproText(row.Repro), 400))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// causeMarkdown is a cluster's cause in Markdown: the commit as code, the
// subject (from the log: untrusted) escaped.
func causeMarkdown(c *fleet.Cause) string {
	if c.Commit == "" {
		s := "present since the oldest commit tried, " + MarkdownCode(c.Since, 64)
		if c.Span > 0 {
			s += fmt.Sprintf(" (%d commits back)", c.Span)
		}
		return s
	}
	s := "introduced by " + MarkdownCode(c.Commit, 64)
	if c.Subject != "" {
		s += " " + MarkdownText(c.Subject, fleet.MaxCauseSubject)
	}
	if !c.Date.IsZero() {
		s += " (" + c.Date.UTC().Format(time.RFC3339) + ")"
	}
	return s
}

// placeList is a folded row's places with their counts, each rendered by
// quote (the places come from the log: untrusted).
func placeList(row fleet.Cluster, quote func(string) string) string {
	var b strings.Builder
	for i, p := range row.Places {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s ×%d", quote(p.Place), p.Count)
	}
	return b.String()
}

func stateLabel(row fleet.Cluster) string {
	s := string(row.State)
	if row.NeedsRepro {
		s += ", needs repro"
	}
	s += prLabel(row.PR)
	return s
}

func entryList(row fleet.Cluster) string {
	var b strings.Builder
	for i, e := range row.Entries {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.FormatUint(e, 10))
		if i == 0 && row.EntriesOmitted > 0 {
			fmt.Fprintf(&b, ", (%d more)", row.EntriesOmitted)
		}
	}
	return b.String()
}

func reproText(r *fleet.Repro) string { return r.Tool + " " + string(r.Args) }

func day(t time.Time) string { return t.UTC().Format("2006-01-02 15:04") }

// age is how long ago t was, rounded for people.
func age(now, t time.Time) string {
	d := now.Sub(t)
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return d.Round(time.Second).String()
	case d < 48*time.Hour:
		return d.Round(time.Minute).String()
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// RenderTable writes r as a plain-text table for a terminal, with at most
// top clusters. Control characters (escape sequences included) and
// bidirectional overrides are removed from log text.
func RenderTable(w io.Writer, r fleet.Report, top int, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "report of %s (%s ago), entries 0-%d: %d open, %d regressed, %d resolved, %d false positive\n",
		r.GeneratedAt.Format(time.RFC3339), age(now, r.GeneratedAt), int64(r.Head)-1, r.Totals.Open, r.Totals.Regressed, r.Totals.Resolved, r.Totals.FalsePositive)
	fmt.Fprintln(tw, "RANK\tSCORE\tSEV\tSURFACE\tSTATE\tCOUNT\tRUNS\tSOURCES\tLAST SEEN\tENTRIES\tTITLE")
	for _, row := range topN(r, top) {
		title := PlainText(row.Title, 80)
		if !row.Trusted {
			title = "[untrusted] " + title
		}
		if n := len(row.Places); n > 0 {
			title = fmt.Sprintf("[%d places] %s", n, title)
		}
		surface := string(row.Surface)
		if surface == "" {
			surface = "-"
		}
		last := ""
		if n := len(row.Entries); n > 0 {
			last = strconv.FormatUint(row.Entries[n-1], 10)
		}
		fmt.Fprintf(tw, "%d\t%.2f\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\n", row.Rank, row.Score, row.Severity, PlainText(surface, 32),
			stateLabel(row), row.Count, row.Runs, PlainText(strings.Join(row.Sources, ","), 40), day(row.LastSeen), last, title)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("render report table: %w", err)
	}
	for _, row := range topN(r, top) {
		if row.Cause != nil {
			if _, err := fmt.Fprintf(w, "#%d cause: %s\n", row.Rank, PlainText(row.Cause.Line(), 300)); err != nil {
				return fmt.Errorf("render report table: %w", err)
			}
		}
	}
	return nil
}

// PlainText makes untrusted text safe for a terminal line (fleet.PlainText).
func PlainText(s string, limit int) string { return fleet.PlainText(s, limit) }

// MarkdownText makes untrusted text safe to place in Markdown prose or a
// table cell: PlainText, then HTML's special characters as entities, every
// other ASCII punctuation character Markdown gives a meaning backslash-
// escaped (so no emphasis, link, image, code, heading or table syntax
// survives), and URL schemes and "www." defanged (http[:]//, www[.]) so
// that GitHub's autolinking cannot turn them into links either.
func MarkdownText(s string, limit int) string {
	s = PlainText(s, limit)
	var b strings.Builder
	b.Grow(len(s) + len(s)/4)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		case '"':
			b.WriteString("&quot;")
		case '\\', '`', '*', '_', '{', '}', '[', ']', '(', ')', '#', '+', '-', '.', '!', '|', '~', '=', '$', '^':
			b.WriteByte('\\')
			b.WriteByte(c)
		case ':':
			if strings.HasPrefix(s[i:], "://") {
				b.WriteString(`\[:\]`)
			} else {
				b.WriteByte(c)
			}
		case '@':
			b.WriteString(`\[@\]`)
		case 'w', 'W':
			if len(s)-i >= 4 && strings.EqualFold(s[i:i+4], "www.") {
				b.WriteString(s[i : i+3])
				b.WriteString(`\[.\]`)
				i += 3
			} else {
				b.WriteByte(c)
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// MarkdownCode renders untrusted text as a Markdown code span: its content
// is shown literally (no HTML, links or emphasis inside code), the fence is
// longer than any backtick run in it, and pipes are escaped so that a table
// row stays one row.
func MarkdownCode(s string, limit int) string {
	s = PlainText(s, limit)
	run, longest := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	s = strings.ReplaceAll(s, "|", `\|`)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") || s == "" {
		s = " " + s + " "
	}
	return fence + s + fence
}
