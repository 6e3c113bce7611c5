package qatools

import "github.com/qafleet/fleetd/fleet"

// fuzzState adds what qa_report's state and flaky arguments say to f's
// header: state=<fleet.StateID(state)>, so the fingerprint (and triage's
// cluster) is the bug's rather than the input's; and flaky=true for a
// crash whose repro did not reproduce when replayed, which is never posted
// above low (the quality bar: a finding at high or above reproduces).
func fuzzState(f fleet.Finding, a reportArgs) fleet.Finding {
	if a.State != "" {
		f = f.WithState(fleet.StateID(a.State))
	}
	if a.Flaky {
		f.Extra = append(f.Extra, fleet.Field{Key: "flaky", Value: "true"})
		if f.Severity.Rank() > fleet.SeverityLow.Rank() {
			f.Severity = fleet.SeverityLow
		}
	}
	return f
}
