package triage

import "github.com/qafleet/fleetd/fleet"

// Changes is what changed between two reports: clusters that appeared, that
// regressed and that were resolved (or marked false positive, or had their
// risk accepted) in between.
type Changes struct {
	New       []fleet.Cluster
	Regressed []fleet.Cluster
	Resolved  []fleet.Cluster
}

// Empty reports whether nothing changed.
func (c Changes) Empty() bool {
	return len(c.New) == 0 && len(c.Regressed) == 0 && len(c.Resolved) == 0
}

// Diff compares next with prev (which may be the zero Report: everything in
// next is new). Rows keep next's order, which is rank order.
func Diff(prev, next fleet.Report) Changes {
	before := make(map[string]fleet.ClusterState, len(prev.Clusters))
	for _, r := range prev.Clusters {
		before[r.ID] = r.State
	}
	var c Changes
	for _, r := range next.Clusters {
		was, seen := before[r.ID]
		switch {
		case !seen:
			c.New = append(c.New, r)
		case r.State == fleet.ClusterRegressed && was != fleet.ClusterRegressed:
			c.Regressed = append(c.Regressed, r)
		case (r.State == fleet.ClusterResolved || r.State == fleet.ClusterFalsePositive || r.State == fleet.ClusterAcceptedRisk) && was != r.State:
			c.Resolved = append(c.Resolved, r)
		}
	}
	return c
}
