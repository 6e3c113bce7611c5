package triage

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDiff(t *testing.T) {
	prev := Report{Clusters: []Row{
		{ID: "a", State: StateOpen},
		{ID: "b", State: StateOpen},
		{ID: "c", State: StateResolved},
		{ID: "d", State: StateOpen},
	}}
	next := Report{Clusters: []Row{
		{ID: "c", State: StateRegressed},
		{ID: "e", State: StateOpen},
		{ID: "a", State: StateOpen},
		{ID: "b", State: StateResolved},
		{ID: "d", State: StateFalsePositive},
	}}
	ids := func(rs []Row) []string {
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
	if first := Diff(Report{}, next); len(first.New) != len(next.Clusters) {
		t.Errorf("against no report every cluster is new: got %d of %d", len(first.New), len(next.Clusters))
	}
}
