package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/qafleet/fleetd/console"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/triage"
)

func TestConsoleTokenRefusesOpenBindWithoutToken(t *testing.T) {
	broken := func(bool) (string, error) { return "", errors.New("http token: readable by other users") }
	good := func(bool) (string, error) { return "tok", nil }
	log := slog.New(slog.DiscardHandler)
	tests := []struct {
		addr    string
		token   func(bool) (string, error)
		want    string
		wantErr string
	}{
		{"127.0.0.1:8787", good, "tok", ""},
		{"0.0.0.0:8787", good, "tok", ""},
		{"127.0.0.1:8787", broken, "", ""}, // read-only on loopback
		{"[::1]:0", broken, "", ""},
		{"0.0.0.0:8787", broken, "", "is not a loopback address"},
		{":8787", broken, "", "is not a loopback address"},
		{"10.1.2.3:80", broken, "", "fleetd http-token"},
	}
	for _, tt := range tests {
		got, err := consoleToken(tt.addr, tt.token, log)
		if got != tt.want || (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("%s: %q, %v; want %q, error with %q", tt.addr, got, err, tt.want, tt.wantErr)
		}
	}
}

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

// TestConsolePublishesClusterChanges checks that a triage pass's changes
// reach the live feed, capped so a first pass over a big log does not flood it.
func TestConsolePublishesClusterChanges(t *testing.T) {
	c, err := console.New(console.Config{Control: fleet.NewControl(t.TempDir()), Source: nopSource{}})
	if err != nil {
		t.Fatal(err)
	}
	d := &daemon{console: c}
	var ch triage.Changes
	for i := range 70 {
		ch.New = append(ch.New, fleet.Cluster{ID: string(rune('a' + i%26)), Title: "t", Severity: fleet.SeverityHigh})
	}
	ch.Regressed = []fleet.Cluster{{ID: "reg", Title: "came back", State: fleet.ClusterRegressed}}
	d.publishChanges(ch)
	ev := c.Hub().Recent(1000, nil)
	if len(ev) != maxClusterEvents+1 {
		t.Fatalf("%d events, want %d", len(ev), maxClusterEvents+1)
	}
	if last := ev[0]; !strings.Contains(last.Text, "and 21 more") {
		t.Errorf("last event %+v", last)
	}
	if first := ev[len(ev)-1]; first.Cluster != "reg" || first.State != "regressed" {
		t.Errorf("regressions first: %+v", first)
	}
}

type nopSource struct{}

func (nopSource) Entries(context.Context, []uint64) ([]console.Entry, error) { return nil, nil }
func (nopSource) Fleet(context.Context) (console.Fleet, error)               { return console.Fleet{}, nil }
