package triage

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/qafleet/fleetd/fleet"
)

// FuzzFoldPlaces: rows whose titles and repro arguments come from the log
// fold without panicking, never lose or invent a finding (counts are
// conserved), keep every row that folded nothing, and fold only rows of two or
// more distinct places; maskMeasures is idempotent.
func FuzzFoldPlaces(f *testing.F) {
	f.Add(`The agent of "alice" answers HTTP 500`, `{"target":"alice","message":"x"}`, "alice", "bob")
	f.Add(`Latency of "alice": p95 812 ms`, `{"target":"alice"}`, "alice", "alice")
	f.Add(`face http://h/alice/ "alice" 404`, `{"url":"http://h/alice/"}`, "http://h/alice/", "http://h/bob/")
	f.Add("", "not json", "", "\x00")
	f.Fuzz(func(t *testing.T, title, args, a, b string) {
		if m := maskMeasures(title); maskMeasures(m) != m {
			t.Fatalf("maskMeasures is not idempotent on %q: %q then %q", title, m, maskMeasures(m))
		}
		var rows []fleet.Cluster
		var first []uint64
		total := 0
		for i, place := range []string{a, b, a + "x"} {
			rargs := args
			if p, err := json.Marshal(place); err == nil && len(place) > 0 {
				rargs = `{"target":` + string(p) + `}`
			}
			rows = append(rows, fleet.Cluster{ID: string(rune('a' + i)), Severity: fleet.SeverityHigh, Surface: "call", State: fleet.ClusterOpen,
				Trusted: true, Title: title + " " + place, Count: i + 1, Sources: []string{"qa-x"}, Entries: []uint64{uint64(i)},
				Repro: &fleet.Repro{Tool: "qa_call", Args: json.RawMessage(rargs)}, LastSeen: time.Unix(int64(i), 0)})
			first = append(first, uint64(i))
			total += i + 1
		}
		out, outFirst := foldPlaces(rows, first, func(i int) (string, string, bool) { return behaviour(&rows[i]) })
		if len(out) != len(outFirst) || len(out) == 0 {
			t.Fatalf("%d rows, %d firsts", len(out), len(outFirst))
		}
		sum := 0
		for _, r := range out {
			sum += r.Count
			seen := map[string]bool{}
			for _, p := range r.Places {
				seen[p.Place] = true
			}
			if len(r.Places) > 0 && len(seen) < 2 {
				t.Fatalf("a folded row of one place: %+v", r.Places)
			}
		}
		if sum != total {
			t.Fatalf("counts %d after the fold, %d before", sum, total)
		}
	})
}
