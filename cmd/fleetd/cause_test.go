package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/fleet/fleettest"
)

// TestCauseOnTheReportAndClusterPage: a finding and the fix stage's
// kind=cause record naming its cluster, both posted by the fleet identity
// on the dev chain, put the first bad commit in the report and on the
// cluster page of a running daemon; a cause record from a sender outside
// the trusted set naming another commit changes nothing and is counted
// ignored.
func TestCauseOnTheReportAndClusterPage(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the daemon against a dev chain")
	}
	hour := fleet.Trigger{Every: time.Hour} // no run fires during the test
	f := newFleetFixture(t, fleet.Observe, map[string]fleet.Trigger{"smoke": hour, "ux": hour, "security": hour, "perf": hour, "fuzz": hour})
	finding := "qa/v1 source=qa-fuzz sev=high surface=compiler run=r-1\ncompile panic on enum E {} with no variants\nrepro: qa_compile {\"source\":\"enum E {}\"}"
	parsed, err := fleet.Parse(finding)
	if err != nil {
		t.Fatal(err)
	}
	id := fleet.Fingerprint(parsed)
	const culprit = "3f2a9c1d0e8b7a6f5e4d3c2b1a0f9e8d7c6b5a49"
	day := time.Date(2026, 11, 20, 10, 4, 0, 0, time.UTC)
	cause := func(c fleet.Cause) string {
		t.Helper()
		rec, err := c.Record("qa-fixer", fleet.SurfaceCompiler, id, "fleetd's fix stage bisected this cluster.")
		if err != nil {
			t.Fatal(err)
		}
		text, err := fleet.Format(rec)
		if err != nil {
			t.Fatal(err)
		}
		return text
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Posted while the daemon runs: each new entry triggers a triage pass.
	d := startTestDaemon(t, ctx, f.config)
	postFinding(t, f, finding)
	postFinding(t, f, cause(fleet.Cause{Commit: culprit, Subject: "simplify enum lowering", Date: day, Span: 12}))
	// A stranger's record, sponsored like anyone's, naming another commit.
	stranger, err := chain.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.dn.Log.SubmitFor(ctx, stranger, f.dn.Sponsor, cause(fleet.Cause{Commit: "deadbeefdeadbeef", Subject: "blame someone else"})); err != nil {
		t.Fatal(err)
	}

	get := func(path string) string {
		t.Helper()
		resp, err := http.Get(d.base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	var rep fleet.Report
	var last string
	defer func() {
		if t.Failed() {
			t.Logf("last /api/report answer: %s", last)
		}
	}()
	fleettest.WaitFor(t, 30*time.Second, "a report that read both cause records", func() bool {
		rep = fleet.Report{}
		last = get("/api/report")
		return json.Unmarshal([]byte(last), &rep) == nil && rep.Totals.Causes == 2
	})
	if rep.Totals.CausesIgnored != 1 || rep.Totals.CausesInvalid != 0 {
		t.Errorf("totals %+v", rep.Totals)
	}
	var api struct{ Cluster fleet.Cluster }
	if err := json.Unmarshal([]byte(get("/api/clusters/"+id)), &api); err != nil || api.Cluster.Cause == nil {
		t.Fatalf("/api/clusters/%s: %+v, %v", id, api.Cluster, err)
	}
	if c := api.Cluster.Cause; c.Commit != culprit || c.Subject != "simplify enum lowering" || !c.Date.Equal(day) || c.Span != 12 {
		t.Errorf("cause %+v", c)
	}
	page := get("/clusters/" + id)
	for _, s := range []string{"introduced by <code>" + culprit + "</code>", "simplify enum lowering"} {
		if !strings.Contains(page, s) {
			t.Errorf("the cluster page lacks %q", s)
		}
	}
	if strings.Contains(page, "deadbeef") || strings.Contains(page, "blame someone else") {
		t.Error("the cluster page shows the untrusted sender's cause")
	}
	out, stderr, code := run(t, "", "report", "--config", f.config, "--format", "md")
	if code != 0 || !strings.Contains(out, "## Causes") || !strings.Contains(out, "introduced by `"+culprit+"` simplify enum lowering (2026-11-20T10:04:00Z)") || strings.Contains(out, "deadbeef") {
		t.Errorf("report --format md: exit %d %s\n%s", code, stderr, out)
	}
}
