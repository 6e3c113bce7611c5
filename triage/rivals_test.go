package triage

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/qafleet/fleetd/fleet"
)

func docs(summary string) string {
	return "qa/v1 source=qa-ux sev=low surface=docs\n" + summary
}

// sameClusters maps each entry index to a small cluster number, in order of
// first appearance, so tests can state which entries share a cluster.
func sameClusters(t *testing.T, e *Engine, n int) []int {
	t.Helper()
	ids := map[string]int{}
	out := make([]int, n)
	for i := range n {
		id, ok := e.ClusterOf(uint64(i))
		if !ok {
			t.Fatalf("entry %d is not a finding", i)
		}
		if _, seen := ids[id]; !seen {
			ids[id] = len(ids)
		}
		out[i] = ids[id]
	}
	return out
}

// TestRivalsKeepPlacesApart: once the log shows two module names filling
// one slot in different clusters, a reworded report naming one module does
// not join the other module's cluster, however much wording it shares.
func TestRivalsKeepPlacesApart(t *testing.T) {
	for _, tc := range []struct {
		name  string
		texts []string
		want  []int
	}{{
		name: "a reworded report follows its module",
		texts: []string{
			"the quickstart link in README in ibis returns 404",
			"the quickstart link in README in siskin returns 404", // one template, another module
			"dead link: the quickstart link in README in siskin",
			"dead link: the quickstart link in README in ibis",
		},
		want: []int{0, 1, 1, 0},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			e := MustEngine(t, Config{})
			var texts []string
			for _, s := range tc.texts {
				texts = append(texts, docs(s))
			}
			mustAdd(t, e, entries(0, fleetAddr, texts...))
			if diff := cmp.Diff(tc.want, sameClusters(t, e, len(texts))); diff != "" {
				t.Errorf("clusters (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRivalsOnlyFromTrusted: an untrusted sender posting the lesson does
// not teach it.
func TestRivalsOnlyFromTrusted(t *testing.T) {
	e := MustEngine(t, Config{})
	mustAdd(t, e,
		entries(0, fleetAddr, docs("the quickstart link in README in ibis returns 404")),
		entries(1, strangerAddr, docs("the quickstart link in README in siskin returns 404")),
	)
	if len(e.sim.rivals) != 0 || len(e.sim.specific) != 0 {
		t.Errorf("untrusted text taught %d rivals and %d specifics", len(e.sim.rivals), len(e.sim.specific))
	}
}

// TestBridge: two wordings of one bug that share too little to meet form
// two clusters until a trusted report close to both arrives; then they are
// one cluster under the older id, the younger listed as merged. An
// untrusted report never bridges, and a corrected cluster is never merged.
func TestBridge(t *testing.T) {
	a := "p95 latency of the register path in kestrel is 900ms, above the SLO"
	b := "slow register path in kestrel, SLO breached with latency way up"
	both := "p95 latency of the register path in kestrel above the SLO, SLO breached"
	t.Run("trusted", func(t *testing.T) {
		e := MustEngine(t, Config{})
		mustAdd(t, e, entries(0, fleetAddr, perf(a), perf(b)))
		if got := sameClusters(t, e, 2); got[0] == got[1] {
			t.Fatalf("the two wordings met without a bridge: %v", got)
		}
		idA, _ := e.ClusterOf(0)
		idB, _ := e.ClusterOf(1)
		mustAdd(t, e, entries(2, fleetAddr, perf(both)))
		if got := sameClusters(t, e, 3); got[0] != got[1] || got[1] != got[2] {
			t.Fatalf("after the bridge: %v, want one cluster", got)
		}
		if id, _ := e.ClusterOf(1); id != idA {
			t.Errorf("merged cluster is %s, want the older %s", id, idA)
		}
		r := e.Report(t0)
		if len(r.Clusters) != 1 || !cmp.Equal(r.Clusters[0].Merged, []string{idB}) || r.Clusters[0].Count != 3 {
			t.Errorf("report rows %+v", r.Clusters)
		}
	})
	t.Run("untrusted", func(t *testing.T) {
		e := MustEngine(t, Config{})
		mustAdd(t, e, entries(0, fleetAddr, perf(a), perf(b)), entries(2, strangerAddr, perf(both)))
		if got := sameClusters(t, e, 2); got[0] == got[1] {
			t.Errorf("an untrusted report bridged two clusters: %v", got)
		}
	})
	t.Run("corrected", func(t *testing.T) {
		e := MustEngine(t, Config{})
		fp, err := Correction{Kind: fleet.KindFalsePositive, Ref: 1, Source: "qa-operator", Surface: "fleet"}.Format()
		if err != nil {
			t.Fatal(err)
		}
		mustAdd(t, e, entries(0, fleetAddr, perf(a), perf(b)), entries(2, operatorAddr, fp), entries(3, fleetAddr, perf(both)))
		if got := sameClusters(t, e, 2); got[0] == got[1] {
			t.Errorf("a cluster marked false positive was merged: %v", got)
		}
	})
}

func perf(summary string) string {
	return "qa/v1 source=qa-perf sev=medium surface=perf\n" + summary
}

// TestLearnRivalsAndSpecifics checks the lessons themselves: fillers of one
// slot in two clusters become rivals, a token whose presence alone tells two
// clusters' summaries apart becomes a specific, and conflicts sees either in
// the difference of two token sets but nothing else.
func TestLearnRivalsAndSpecifics(t *testing.T) {
	s := newSimIndex(false)
	root := func(c int32) int32 { return c }
	tok := func(w string) uint64 { return fnv(w) }
	seq := func(ws ...string) []uint64 {
		var out []uint64
		for _, w := range ws {
			out = append(out, tok(w))
		}
		return out
	}
	set := func(ws ...string) []uint64 { return tokenSet(nil, seq(ws...)) }
	add := func(c int32, ws ...string) { s.add(c, 0, set(ws...), seq(ws...), true, root) }

	add(0, "quickstart", "link", "ibis", "broken")
	add(0, "quickstart", "link", "heron", "broken") // same cluster: a paraphrase, no lesson
	add(1, "quickstart", "link", "siskin", "broken")
	add(2, "metadata", "kestrel", "osprey", "stale")
	add(3, "metadata", "osprey", "stale")
	for _, tc := range []struct {
		q, t []string
		want bool
	}{
		{[]string{"readme", "ibis", "dead"}, []string{"readme", "siskin", "dead"}, true}, // rivals, whatever the words around
		{[]string{"readme", "ibis"}, []string{"readme", "heron"}, false},                 // filled one slot in one cluster only
		{[]string{"readme", "ibis"}, []string{"readme", "table"}, false},                 // never seen in one slot
		{[]string{"kestrel", "osprey", "doc"}, []string{"osprey", "doc"}, true},          // kestrel is a specific
		{[]string{"osprey", "doc"}, []string{"osprey", "doc", "old"}, false},
	} {
		if got := s.conflicts(0, set(tc.q...), set(tc.t...)); got != tc.want {
			t.Errorf("conflicts(%v, %v) = %v, want %v", tc.q, tc.t, got, tc.want)
		}
	}
	if s.conflicts(1, set("readme", "ibis"), set("readme", "siskin")) {
		t.Error("a lesson learned on one surface applied to another")
	}
}
