package triage

import (
	"strings"
	"testing"

	"github.com/qafleet/fleetd/fleet"
)

// TestPickItem: an id or a unique prefix of 4 or more names a work item; a
// cluster that is not one says why; an ambiguous or short prefix is refused.
func TestPickItem(t *testing.T) {
	repro := &fleet.Repro{Tool: "compile"}
	r := fleet.Report{Clusters: []fleet.Cluster{
		{ID: "abcd1111", State: fleet.ClusterOpen, Trusted: true, Repro: repro},
		{ID: "abcd2222", State: fleet.ClusterRegressed, Trusted: true, Repro: repro},
		{ID: "eeee0000", State: fleet.ClusterOpen, Trusted: false, Repro: repro},
		{ID: "ffff0000", State: fleet.ClusterOpen, Trusted: true, FreeForm: true},
		{ID: "9999aaaa", State: fleet.ClusterOpen, Trusted: true},
		{ID: "77770000", State: fleet.ClusterResolved, Trusted: true, Repro: repro},
	}}
	items := WorkItems(r)
	for _, c := range []struct{ fp, want, err string }{
		{fp: "abcd1111", want: "abcd1111"},
		{fp: "abcd2", want: "abcd2222"},
		{fp: "abcd", err: "names 2 clusters"},
		{fp: "abc", err: `no cluster "abc"`},
		{fp: "eeee", err: "only untrusted senders"},
		{fp: "ffff0000", err: "free-form"},
		{fp: "9999", err: "has no repro"},
		{fp: "7777", err: "it is resolved"},
		{fp: "zzzz", err: `no cluster "zzzz"`},
	} {
		wi, err := PickItem(items, r, c.fp)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("PickItem(%q) = %v, %v; want error containing %q", c.fp, wi.ID, err, c.err)
			}
			continue
		}
		if err != nil || wi.ID != c.want {
			t.Errorf("PickItem(%q) = %q, %v; want %q", c.fp, wi.ID, err, c.want)
		}
	}
}
