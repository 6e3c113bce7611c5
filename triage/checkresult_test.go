package triage

import (
	"strings"
	"testing"

	"github.com/qafleet/fleetd/fleet"
)

// TestCheckSummaryNamesPlaces: a row of a behaviour triage folded over
// several places names them in the pull request comment.
func TestCheckSummaryNamesPlaces(t *testing.T) {
	rows := []CheckRow{{Status: CheckOpen, Cluster: "c1", Severity: fleet.SeverityCritical, Surface: fleet.SurfaceCall,
		Title: "The agent reveals its system prompt", Sources: []string{"qa-redteam"}, Places: []string{"alice", "bob", "carol"}, Findings: 1}}
	summary := CheckResult{FailOn: "high", Rows: rows}.Summary()
	if !strings.Contains(summary, "(at 3 places: alice, bob, carol)") {
		t.Errorf("summary:\n%s", summary)
	}
}
