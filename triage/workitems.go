package triage

import "github.com/qafleet/fleetd/fleet"

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
