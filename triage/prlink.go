package triage

import (
	"strconv"

	"github.com/qafleet/fleetd/fleet"
)

// AttachPRs sets fleet.Cluster.PR of every cluster whose id has a PR in prs.
func AttachPRs(r *fleet.Report, prs map[string]fleet.PRLink) {
	for i := range r.Clusters {
		if p, ok := prs[r.Clusters[i].ID]; ok {
			p := p
			r.Clusters[i].PR = &p
		}
	}
}

// prLabel is the short PR note of a state label: ", PR #3 draft".
func prLabel(p *fleet.PRLink) string {
	if p == nil {
		return ""
	}
	s := ", PR #" + strconv.Itoa(p.Number) + " " + p.State
	if p.Verified && (p.State == "open" || p.State == "merged") {
		s += " (verified)"
	}
	return s
}
