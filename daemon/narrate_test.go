package daemon

import (
	"strings"
	"testing"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/trajectory"
	"github.com/qafleet/fleetd/triage"
)

func TestTriageLine(t *testing.T) {
	rows := []fleet.Cluster{
		{Rank: 1, ID: "a", Severity: fleet.SeverityHigh, Surface: "compiler", Title: "Compiler crash on enum", State: fleet.ClusterOpen},
		{Rank: 2, ID: "b", Severity: fleet.SeverityMedium, Surface: "docs", Title: "Docs promise GET", State: fleet.ClusterRegressed},
		{Rank: 3, ID: "c", Severity: fleet.SeverityLow, Surface: "face", Title: "Leak on 404", State: fleet.ClusterOpen},
		{Rank: 4, ID: "d", Severity: fleet.SeverityLow, Surface: "web", Title: "Fourth", State: fleet.ClusterResolved},
	}
	next := fleet.Report{Clusters: rows}
	prev := fleet.Report{Clusters: []fleet.Cluster{{ID: "b", State: fleet.ClusterResolved}, {ID: "c", State: fleet.ClusterOpen}, {ID: "d", State: fleet.ClusterOpen}}}

	tests := []struct {
		name       string
		read       int
		prev, next fleet.Report
		want       []string
		not        []string
	}{
		{"nothing", 0, next, next, nil, nil},
		{"read, no change", 3, next, next, []string{"read 3 new entries; 4 clusters, no change"}, []string{"top"}},
		{"changes", 5, prev, next, []string{"read 5 new entries; 4 clusters (1 new, 1 regressed, 1 resolved); top:",
			"1. [high compiler] Compiler crash on enum;", "2. [medium docs] Docs promise GET;", "3. [low face] Leak on 404"}, []string{"Fourth", " 0 "}},
		{"one entry", 1, fleet.Report{}, fleet.Report{Clusters: rows[:1]}, []string{"read 1 new entry; 1 cluster (1 new); top: 1. [high compiler]"}, nil},
		{"correction only", 0, prev, next, []string{"ranked 4 clusters (1 new"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := triageLine(tt.read, triage.Diff(tt.prev, tt.next), tt.next)
			if tt.want == nil && got != "" {
				t.Fatalf("triageLine = %q, want silence", got)
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("triageLine = %q, want it to contain %q", got, w)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(got, n) {
					t.Errorf("triageLine = %q, must not contain %q", got, n)
				}
			}
		})
	}
}

func TestRunLine(t *testing.T) {
	r := fleet.RunResult{RunID: "r-1", Outcome: trajectory.OutcomeDone, Totals: trajectory.Totals{ToolCalls: 12, Findings: 3, Refusals: 1, DurationMS: 971}}
	r.Findings = []fleet.Result{{"status": "posted"}, {"status": "queued"}, {"status": "deduped"}}
	if got, want := runLine(r), "done in 1s (12 calls): 3 findings (2 new, 1 deduplicated), 1 call refused by the dial (fleetd runs show r-1)"; got != want {
		t.Errorf("runLine = %q, want %q", got, want)
	}
	// The demo's repeat run (issue 34): every finding was already on the
	// log, none was posted, and the line said "8 findings".
	repeat := fleet.RunResult{RunID: "r-2", Outcome: trajectory.OutcomeDone, Totals: trajectory.Totals{ToolCalls: 127, Findings: 8, DurationMS: 22900}}
	for range 8 {
		repeat.Findings = append(repeat.Findings, fleet.Result{"ok": true, "status": "deduped", "deduped": true})
	}
	if got, want := runLine(repeat), "done in 22.9s (127 calls): 8 findings (0 new, 8 deduplicated) (fleetd runs show r-2)"; got != want {
		t.Errorf("runLine of a repeat run = %q, want %q", got, want)
	}
	r.Totals.Findings, r.Totals.Refusals = 0, 0
	if got := runLine(r); !strings.Contains(got, "nothing found") || strings.Contains(got, " 0 ") {
		t.Errorf("runLine = %q, want 'nothing found' and no zeros", got)
	}
	r.Outcome, r.Summary = trajectory.OutcomeCancelled, "cancelled: "+fleet.ErrYielded.Error()
	if got := runLine(r); !strings.HasPrefix(got, "yielded its slot in 1s (12 calls)") {
		t.Errorf("a yielded run: runLine = %q", got)
	}
	r.Summary = "cancelled: context canceled"
	if got := runLine(r); !strings.HasPrefix(got, "cancelled in 1s") {
		t.Errorf("a cancelled run: runLine = %q", got)
	}
}
