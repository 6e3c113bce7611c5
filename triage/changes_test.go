package triage

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/qafleet/fleetd/fleet"
)

func TestDiff(t *testing.T) {
	prev := fleet.Report{Clusters: []fleet.Cluster{
		{ID: "a", State: fleet.ClusterOpen},
		{ID: "b", State: fleet.ClusterOpen},
		{ID: "c", State: fleet.ClusterResolved},
		{ID: "d", State: fleet.ClusterOpen},
	}}
	next := fleet.Report{Clusters: []fleet.Cluster{
		{ID: "c", State: fleet.ClusterRegressed},
		{ID: "e", State: fleet.ClusterOpen},
		{ID: "a", State: fleet.ClusterOpen},
		{ID: "b", State: fleet.ClusterResolved},
		{ID: "d", State: fleet.ClusterFalsePositive},
	}}
	ids := func(rs []fleet.Cluster) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.ID)
		}
		return out
	}
	c := Diff(prev, next)
	got := [][]string{ids(c.New), ids(c.Regressed), ids(c.Resolved)}
	want := [][]string{{"e"}, {"c"}, {"b", "d"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Diff (-want +got):\n%s", diff)
	}
	if c.Empty() {
		t.Error("Empty() on a diff with changes")
	}
	if !Diff(next, next).Empty() {
		t.Errorf("a report compared with itself changed: %+v", Diff(next, next))
	}
	if first := Diff(fleet.Report{}, next); len(first.New) != len(next.Clusters) {
		t.Errorf("against no report every cluster is new: got %d of %d", len(first.New), len(next.Clusters))
	}
}
