package triage

import (
	"fmt"
	"strings"

	"github.com/qafleet/fleetd/fleet"
)

// WorkItem is a cluster the fix stage may work on.
type WorkItem struct {
	ID       string             `json:"id"` // the cluster id: one PR per id
	Rank     int                `json:"rank"`
	Score    float64            `json:"score"`
	Severity fleet.Severity     `json:"severity"`
	Surface  fleet.Surface      `json:"surface"`
	Title    string             `json:"title"` // untrusted-origin text is never here, but it is still data
	State    fleet.ClusterState `json:"state"`
	Repro    fleet.Repro        `json:"repro"`
	Entries  []uint64           `json:"entries"`
	Sources  []string           `json:"sources"`
}

// WorkItems returns, in rank order, the clusters the fix stage may take:
// open or regressed, reported by trusted senders (whose findings are the
// only ones counted when any exist, so every counted source is trusted),
// not free-form, and with a repro taken from a trusted entry.
func WorkItems(r fleet.Report) []WorkItem {
	var out []WorkItem
	for _, row := range r.Clusters {
		if !row.State.Active() || !row.Trusted || row.FreeForm || row.Repro == nil {
			continue
		}
		out = append(out, WorkItem{
			ID: row.ID, Rank: row.Rank, Score: row.Score, Severity: row.Severity, Surface: row.Surface,
			Title: row.Title, State: row.State, Repro: *row.Repro, Entries: row.Entries, Sources: row.Sources,
		})
	}
	return out
}

// PickItem finds the work item fp names (an id or a unique prefix of at
// least 4 characters), or says why r's cluster of that id is not one.
func PickItem(items []WorkItem, r fleet.Report, fp string) (WorkItem, error) {
	var found []WorkItem
	for _, wi := range items {
		if wi.ID == fp || len(fp) >= 4 && strings.HasPrefix(wi.ID, fp) {
			found = append(found, wi)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		for _, row := range r.Clusters {
			if row.ID == fp || len(fp) >= 4 && strings.HasPrefix(row.ID, fp) {
				why := "it is " + string(row.State)
				switch {
				case !row.Trusted:
					why = "only untrusted senders reported it"
				case row.FreeForm:
					why = "it is free-form text"
				case row.Repro == nil:
					why = "it has no repro"
				}
				return WorkItem{}, fmt.Errorf("cluster %s is not a work item: %s", row.ID, why)
			}
		}
		return WorkItem{}, fmt.Errorf("no cluster %q in the report (fleetd report lists them)", fp)
	}
	return WorkItem{}, fmt.Errorf("%q names %d clusters: give more of the id", fp, len(found))
}
