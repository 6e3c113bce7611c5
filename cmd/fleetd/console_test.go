package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/triage"
)

func TestReportFormatHTML(t *testing.T) {
	dir := t.TempDir()
	now := time.Now().UTC()
	rep := fleet.Report{Schema: fleet.ReportSchema, GeneratedAt: now, Head: 3, Totals: fleet.ReportTotals{Clusters: 1, Open: 1},
		Clusters: []fleet.Cluster{{Rank: 1, ID: "abc", Score: 16, Severity: fleet.SeverityHigh, Surface: fleet.SurfaceFace,
			Title: `<img src=x onerror=alert(1)>`, State: fleet.ClusterOpen, Trusted: true, Count: 2, Runs: 2, Sources: []string{"qa-security"},
			FirstSeen: now, LastSeen: now, Entries: []uint64{0, 2}}}}
	if err := triage.WriteReport(filepath.Join(dir, "reports"), rep, 0, 0); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "health.html")
	var stdout, stderr strings.Builder
	code := Main(context.Background(), []string{"report", "--data-dir", dir, "--format", "html", "--out", out}, strings.NewReader(""), &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "wrote "+out) {
		t.Errorf("stdout %q", stdout.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	html := string(b)
	for _, want := range []string{"<!doctype html>", "&lt;img src=x onerror=alert(1)&gt;", "<svg", "Content-Security-Policy"} {
		if !strings.Contains(html, want) {
			t.Errorf("the file lacks %q", want)
		}
	}
	if strings.Contains(html, "<img") || strings.Contains(html, "<script") {
		t.Error("markup in the file")
	}
	// Without --out it goes to stdout.
	stdout.Reset()
	if code := Main(context.Background(), []string{"report", "--data-dir", dir, "--format", "html"}, strings.NewReader(""), &stdout, io.Discard); code != 0 || !strings.HasPrefix(stdout.String(), "<!doctype html>") {
		t.Errorf("stdout: exit %d, %.40q", code, stdout.String())
	}
}
