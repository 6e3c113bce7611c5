package sarif_test

import (
	"strings"
	"testing"
	"time"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/sarif"
)

// TestSARIFAcceptedRisk: an accepted risk is suppressed with its reason
// until it expires; once triage reports it open again it is not.
func TestSARIFAcceptedRisk(t *testing.T) {
	r := sampleReport()
	r.Clusters = r.Clusters[:1]
	r.Clusters[0].State, r.Clusters[0].Correction = fleet.ClusterAcceptedRisk, u64(12)
	r.Clusters[0].StateReason = "risk accepted at entry 12 until " + time.Date(2027, 1, 31, 0, 0, 0, 0, time.UTC).Format(time.RFC3339) + ": only the admin network reaches it"
	validate(t, MustSchema(t), render(t, r, opts()))
	res := sarif.Build(r, opts()).Runs[0].Results[0]
	if len(res.Suppressions) != 1 || res.Suppressions[0].Status != "accepted" || !strings.Contains(res.Suppressions[0].Justification, "only the admin network reaches it") {
		t.Errorf("suppressions %+v", res.Suppressions)
	}
	r.Clusters[0].State, r.Clusters[0].StateReason = fleet.ClusterOpen, "the risk accepted at entry 12 expired at 2027-01-31T00:00:00Z"
	if res := sarif.Build(r, opts()).Runs[0].Results[0]; len(res.Suppressions) != 0 {
		t.Errorf("an expired acceptance is still suppressed: %+v", res.Suppressions)
	}
}
