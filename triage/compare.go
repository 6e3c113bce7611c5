package triage

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
)

// Statuses of a finding of `fleetd check` against the log's clusters
// (Compare).
const (
	CheckNew        = "new"            // in no cluster of the log
	CheckRegressed  = "regressed"      // in a cluster the log marked resolved, or a false positive this finding regresses (a new crash state, a first repro)
	CheckOpen       = "still open"     // in an open or regressed cluster
	CheckDismissed  = "false positive" // in a cluster the log marked a false positive
	CheckAccepted   = "accepted risk"  // in a cluster whose risk the log accepted (and the acceptance has not expired)
	CheckNoLongerIn = "no longer seen" // an open cluster of these specialists that this check did not find
)

// CheckRow is one cluster in a check's result (`fleetd check`).
type CheckRow struct {
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

// Comparison is what Compare found: one row per cluster the check's
// findings joined, then the clusters of the checked sources they no longer
// reach, new and regressed first.
type Comparison struct {
	Rows     []CheckRow
	Head     uint64            // log entries compared with: [0, Head)
	Clusters int               // the log's clusters before the check's findings
	Failing  int               // rows that fail the check (new or regressed at or above the floor)
	Report   fleet.Report      // the check's clusters, as triage ranks them with the check's findings added
	Texts    map[string]string // cluster id -> the summary of the check's first finding in it
	Status   map[string]string // cluster id -> check status
}

// ReadLog triages the whole log with a fresh engine (so a daemon holding
// the triage store is no obstacle) and returns it with its report, for
// Compare.
func ReadLog(ctx context.Context, log *chain.FeedbackLog, cfg Config, now time.Time) (*Engine, fleet.Report, error) {
	// BuildEngine: an unmerge on the log splits its entry as triage does.
	e, err := BuildEngine(cfg, func(add func([]Entry) error) error {
		_, err := log.Scan(ctx, 0, add)
		return err
	})
	if err != nil {
		return nil, fleet.Report{}, fmt.Errorf("check: read the log: %w", err)
	}
	return e, e.Report(now), nil
}

// Compare adds a check's findings to e (the log's engine; before
// is its report) after the log's last entry, as sender would post them,
// and asks the engine which cluster each joined: a finding is judged the
// way triage would cluster it, similarity and corrections included.
func Compare(e *Engine, before fleet.Report, sender fleet.Address, found []fleet.Finding, sources []string, floor fleet.Severity, now time.Time) (Comparison, error) {
	var cmp Comparison
	cmp.Head, cmp.Clusters = e.Next(), len(before.Clusters)
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
	rows := map[string]*CheckRow{}
	var order []string
	cmp.Texts, cmp.Status = map[string]string{}, map[string]string{}
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
			status := CheckNew
			if prev, seen := known[id]; seen {
				switch prev.State {
				case fleet.ClusterResolved:
					status = CheckRegressed
				case fleet.ClusterFalsePositive:
					status = CheckDismissed
					if now, ok := afterRows[member]; ok && now.State == fleet.ClusterRegressed {
						status = CheckRegressed // this finding is what the dismissal said would bring it back
					}
				case fleet.ClusterAcceptedRisk:
					status = CheckAccepted
				default:
					status = CheckOpen
				}
			}
			row = &CheckRow{Status: status, Cluster: id, Severity: f.Severity, Surface: f.Surface, Title: f.Summary}
			rows[id], cmp.Texts[id], cmp.Status[id] = row, f.Summary, status
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
			cmp.Report.Clusters = append(cmp.Report.Clusters, c)
		}
	}
	cmp.Report.Schema, cmp.Report.GeneratedAt, cmp.Report.Head = after.Schema, after.GeneratedAt, after.Head
	for _, id := range order {
		row := rows[id]
		row.Fails = floor != "" && (row.Status == CheckNew || row.Status == CheckRegressed) && row.Severity.Rank() >= floor.Rank()
		if row.Fails {
			cmp.Failing++
		}
		cmp.Rows = append(cmp.Rows, *row)
	}
	for _, c := range before.Clusters {
		if rows[c.ID] != nil || !c.State.Active() || !c.Trusted || !slices.ContainsFunc(c.Sources, func(s string) bool { return slices.Contains(sources, s) }) {
			continue
		}
		cmp.Rows = append(cmp.Rows, CheckRow{Status: CheckNoLongerIn, Cluster: c.ID, Severity: c.Severity, Surface: c.Surface, Title: c.Title, Sources: c.Sources})
	}
	slices.SortStableFunc(cmp.Rows, func(x, y CheckRow) int { return statusOrder(x.Status) - statusOrder(y.Status) })
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
	return slices.Index([]string{CheckNew, CheckRegressed, CheckOpen, CheckAccepted, CheckDismissed, CheckNoLongerIn}, s)
}
