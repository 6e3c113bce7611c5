package triage

import "strconv"

// PRLink is the fix stage's pull request for a cluster, as cmd/fleetd
// attaches it to a report (AttachPRs): triage itself never talks to a forge.
type PRLink struct {
	Number   int    `json:"number"`
	State    string `json:"state"` // draft, open, merged, closed
	URL      string `json:"url"`
	Verified bool   `json:"verified"`
}

// AttachPRs sets Row.PR of every cluster whose id has a PR in prs.
func AttachPRs(r *Report, prs map[string]PRLink) {
	for i := range r.Clusters {
		if p, ok := prs[r.Clusters[i].ID]; ok {
			p := p
			r.Clusters[i].PR = &p
		}
	}
}

// prLabel is the short PR note of a state label: ", PR #3 draft".
func prLabel(p *PRLink) string {
	if p == nil {
		return ""
	}
	s := ", PR #" + strconv.Itoa(p.Number) + " " + p.State
	if p.Verified && (p.State == "open" || p.State == "merged") {
		s += " (verified)"
	}
	return s
}
