package fleet

// PRLink is the fix stage's pull request for a cluster, as cmd/fleetd
// attaches it to a report (triage.AttachPRs): triage itself never talks to
// a forge.
type PRLink struct {
	Number   int    `json:"number"`
	State    string `json:"state"` // draft, open, merged, closed
	URL      string `json:"url"`
	Verified bool   `json:"verified"`
	// Cause is the fix stage's bisection in one line: the commit that
	// introduced the finding, or since when it is present ("" when none
	// was conclusive).
	Cause string `json:"cause,omitempty"`
}
