package triage

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/qafleet/fleetd/fleet"
)

// TestReportLibrary: nothing written is fs.ErrNotExist; once a report is
// written, the latest files come back and a cluster is found by its id or
// by an id merged into it, an unknown id being fs.ErrNotExist.
func TestReportLibrary(t *testing.T) {
	ctx := context.Background()
	l := ReportLibrary{Dir: t.TempDir()}
	if _, _, err := l.LatestReport(ctx); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("no report yet: %v, want fs.ErrNotExist", err)
	}
	r := fleet.Report{Clusters: []fleet.Cluster{{ID: "c1", Title: "first", Merged: []string{"c0"}}, {ID: "c2", Title: "second"}}}
	if err := WriteReport(l.Dir, r, 0, 0); err != nil {
		t.Fatal(err)
	}
	md, js, err := l.LatestReport(ctx)
	if err != nil || len(md) == 0 || !strings.Contains(string(js), `"c2"`) {
		t.Fatalf("LatestReport: %v, md %d bytes, json %s", err, len(md), js)
	}
	for id, want := range map[string]string{"c1": "c1", "c0": "c1", "c2": "c2"} {
		b, err := l.Cluster(ctx, id)
		var c fleet.Cluster
		if err != nil || json.Unmarshal(b, &c) != nil || c.ID != want {
			t.Errorf("Cluster(%s) = %s, %v; want cluster %s", id, b, err, want)
		}
	}
	if _, err := l.Cluster(ctx, "nope"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Cluster(nope): %v, want fs.ErrNotExist", err)
	}
}
