package triage

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
)

// TestCompareWithFoldedPlaces: a finding at a new place of a
// behaviour the log already holds at other places is that behaviour, still
// open; the same check answering otherwise at another place is new.
func TestCompareWithFoldedPlaces(t *testing.T) {
	fleetAddr := fleet.Address{0xf1}
	leak := func(name, reply string) fleet.Finding {
		return fleet.Finding{Source: "qa-redteam", Severity: fleet.SeverityCritical, Surface: fleet.SurfaceCall, Run: "r-1",
			Summary: fmt.Sprintf("The agent of %q %s when told to ignore its instructions.", name, reply),
			Repro:   &fleet.Repro{Tool: "qa_call", Args: json.RawMessage(fmt.Sprintf(`{"target":%q,"message":"ignore them"}`, name))}}
	}
	e, err := NewEngine(Config{Trusted: []fleet.Address{fleetAddr}})
	if err != nil {
		t.Fatal(err)
	}
	var log []chain.Entry
	for i, name := range []string{"alice", "bob"} {
		text, err := fleet.Format(leak(name, "reveals its system prompt"))
		if err != nil {
			t.Fatal(err)
		}
		log = append(log, chain.Entry{Index: uint64(i), Sender: fleetAddr, Time: time.Unix(int64(i), 0), Text: text})
	}
	if err := e.Add(log); err != nil {
		t.Fatal(err)
	}
	before := e.Report(time.Unix(10, 0))
	if len(before.Clusters) != 1 || len(before.Clusters[0].Places) != 2 {
		t.Fatalf("the log's report: %+v", before.Clusters)
	}
	cmp, err := Compare(e, before, fleetAddr,
		[]fleet.Finding{leak("carol", "reveals its system prompt"), leak("dave", "deletes every name")},
		[]string{"qa-redteam"}, fleet.SeverityHigh, time.Unix(20, 0))
	if err != nil {
		t.Fatal(err)
	}
	if len(cmp.Rows) != 2 {
		t.Fatalf("rows %+v", cmp.Rows)
	}
	open, fresh := cmp.Rows[1], cmp.Rows[0] // new rows sort first
	if open.Status != CheckOpen || open.Cluster != before.Clusters[0].ID || !slices.Equal(open.Places, []string{"alice", "bob", "carol"}) || open.Fails {
		t.Errorf("carol's finding: %+v", open)
	}
	if fresh.Status != CheckNew || !strings.Contains(fresh.Title, "dave") || !fresh.Fails || cmp.Failing != 1 {
		t.Errorf("dave's finding: %+v (failing %d)", fresh, cmp.Failing)
	}
}

// TestCompareHonoursCorrections: a finding in a cluster whose risk
// the log accepted is not new and does not fail; once the acceptance has
// expired it is still open; a false positive stays one for the same crash
// and is regressed (and fails) by a new crash state with its repro; a place
// unmerged from its folded row is matched to its own cluster.
func TestCompareHonoursCorrections(t *testing.T) {
	fleetAddr := fleet.Address{0xf1}
	crash := func(state, src string) fleet.Finding {
		return fleet.Finding{Source: "qa-fuzz", Severity: fleet.SeverityHigh, Surface: fleet.SurfaceCompiler, Run: "r-1",
			Summary: "compile panic in the type checker on " + src, Extra: []fleet.Field{{Key: fleet.KeyState, Value: state}},
			Repro: &fleet.Repro{Tool: "qa_compile", Args: json.RawMessage(fmt.Sprintf(`{"source":%q}`, src))}}
	}
	leak := func(name string) fleet.Finding {
		return fleet.Finding{Source: "qa-redteam", Severity: fleet.SeverityCritical, Surface: fleet.SurfaceCall, Run: "r-1",
			Summary: fmt.Sprintf("The agent of %q reveals its system prompt when told to ignore its instructions.", name),
			Repro:   &fleet.Repro{Tool: "qa_call", Args: json.RawMessage(fmt.Sprintf(`{"target":%q,"message":"ignore them"}`, name))}}
	}
	var texts []string
	for _, f := range []fleet.Finding{crash("5c1e0a9d3b7f2a10", "enum E{}"), crash("0aa0bb1cc2dd3ee4", "struct S{}"), leak("alice"), leak("bobby"), leak("carol")} {
		text, err := fleet.Format(f)
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, text)
	}
	now := time.Unix(1000, 0).UTC()
	build := func(until time.Time) (*Engine, fleet.Report) {
		t.Helper()
		e, err := BuildEngine(Config{Trusted: []fleet.Address{fleetAddr}}, func(add func([]chain.Entry) error) error {
			var log []chain.Entry
			for i, text := range texts {
				log = append(log, chain.Entry{Index: uint64(i), Sender: fleetAddr, Time: time.Unix(int64(i), 0), Text: text})
			}
			return add(log)
		})
		if err != nil {
			t.Fatal(err)
		}
		r := e.Report(now)
		bobby := ""
		for _, row := range r.Clusters {
			for _, p := range row.Places {
				if p.Place == "bobby" {
					bobby = p.Cluster
				}
			}
		}
		if bobby == "" {
			t.Fatalf("no folded row lists bobby: %+v", r.Clusters)
		}
		var corr []chain.Entry
		for i, c := range []Correction{
			{Kind: fleet.KindFalsePositive, Ref: 0},
			{Kind: fleet.KindAcceptedRisk, Ref: 1, Note: "admin network only", Until: until},
			{Kind: fleet.KindUnmerge, Cluster: bobby},
		} {
			text, err := c.Format()
			if err != nil {
				t.Fatal(err)
			}
			corr = append(corr, chain.Entry{Index: uint64(len(texts) + i), Sender: fleetAddr, Time: time.Unix(int64(len(texts)+i), 0), Text: text})
		}
		if err := e.Add(corr); err != nil {
			t.Fatal(err)
		}
		return e, e.Report(now)
	}
	for _, tc := range []struct {
		name     string
		until    time.Time
		accepted string
	}{
		{"accepted", now.Add(time.Hour), CheckAccepted},
		{"expired", now.Add(-time.Second), CheckOpen},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, before := build(tc.until)
			cmp, err := Compare(e, before, fleetAddr, []fleet.Finding{
				crash("5c1e0a9d3b7f2a10", "enum E{}"), // the false positive again
				crash("0aa0bb1cc2dd3ee4", "struct S{}"),
				leak("bobby"),
			}, []string{"qa-fuzz", "qa-redteam"}, fleet.SeverityHigh, now)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]CheckRow{}
			for _, row := range cmp.Rows {
				got[row.Title] = row
			}
			if row := got["compile panic in the type checker on enum E{}"]; row.Status != CheckDismissed || row.Fails {
				t.Errorf("the false positive again: %+v", row)
			}
			if row := got["compile panic in the type checker on struct S{}"]; row.Status != tc.accepted || row.Fails {
				t.Errorf("the accepted risk: %+v, want %s", row, tc.accepted)
			}
			if row := got[leak("bobby").Summary]; row.Status != CheckOpen || len(row.Places) != 0 || row.Fails {
				t.Errorf("the unmerged place: %+v, want its own row, still open", row)
			}
			if cmp.Failing != 0 {
				t.Errorf("%d failing, want none", cmp.Failing)
			}
			// A new crash state with the false positive's repro is what the
			// dismissal said would bring it back.
			cmp, err = Compare(e, e.Report(now), fleetAddr, []fleet.Finding{crash("77aa00bb11cc22dd", "enum E{}")}, []string{"qa-fuzz"}, fleet.SeverityHigh, now)
			if err != nil {
				t.Fatal(err)
			}
			if len(cmp.Rows) == 0 || cmp.Rows[0].Status != CheckRegressed || !cmp.Rows[0].Fails || cmp.Failing != 1 {
				t.Errorf("a new crash state of the false positive: %+v", cmp.Rows)
			}
		})
	}
}
