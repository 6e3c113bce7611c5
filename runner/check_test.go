package runner

import (
	"errors"
	"strings"
	"testing"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fixtures/testbed"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/fleet/fleettest"
	"github.com/qafleet/fleetd/triage"
)

// checkLog starts the embedded dev chain with a FeedbackLog holding one
// finding of qa-ux's from id (the devnet's sponsor pays).
func checkLog(t *testing.T, id *chain.Key) *chain.FeedbackLog {
	t.Helper()
	dn, err := testbed.StartDevnet(t.Context(), t.TempDir(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dn.Close)
	if _, err := dn.Log.SubmitFor(t.Context(), id, dn.Sponsor, "qa/v1 source=qa-ux sev=medium surface=face\nThe notes page reflects the comment field unescaped into a script block"); err != nil {
		t.Fatal(err)
	}
	return dn.Log
}

// TestCheck runs a specialist that reports one new finding against a log
// holding an old one of its own: the new one fails the check at high, the
// old one is no longer seen, nothing is posted without Post; a config
// without a log or, with Post, without a poster, and the kill switch,
// refuse before any run.
func TestCheck(t *testing.T) {
	f := newRunFixture(t)
	log := checkLog(t, f.key)
	f.env.Log = log
	ux := fleet.Persona{Name: "ux", Goal: "see that the docs hold", Tools: []string{"qa_report"}}
	f.script = &fleettest.Script{Steps: []any{
		fleet.Step{Call: &fleet.Call{Tool: "qa_report", Args: []byte(`{"severity":"high","surface":"docs","summary":"The docs promise GET /api/items answers JSON; it answers an HTML error page"}`)}},
		fleet.Step{Done: true, Summary: "reported"},
	}}
	var progress strings.Builder
	o := CheckOptions{Specialists: []fleet.Persona{ux}, Triage: triage.Config{Trusted: []fleet.Address{f.key.Address()}},
		Identity: f.key, Floor: fleet.SeverityHigh, Logger: f.env.Logger, Progress: &progress}
	res, err := Check(t.Context(), f.cfg, f.env, o)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	if len(res.Runs) != 1 || res.Dial != "observe" || res.FailOn != "high" || res.Posted || res.Head != 1 || res.Clusters != 1 {
		t.Errorf("result %+v", res.CheckResult)
	}
	if res.Failing != 1 || res.Count(triage.CheckNew) != 1 || res.Count(triage.CheckNoLongerIn) != 1 {
		t.Errorf("rows %+v: want the new finding failing and the old one no longer seen", res.Rows)
	}
	if len(res.Comparison.Report.Clusters) == 0 {
		t.Error("no clusters to render as SARIF")
	}
	if !strings.Contains(progress.String(), "check: ux (dial observe)") {
		t.Errorf("progress %q", progress.String())
	}
	if n, _ := log.Count(t.Context()); n != 1 {
		t.Errorf("%d entries on the log after a check without Post, want 1", n)
	}

	o.Floor = ""
	f.script = &fleettest.Script{}
	if res, err := Check(t.Context(), f.cfg, f.env, o); err != nil || res.Failing != 0 || res.FailOn != "never" {
		t.Errorf("--fail-on never: %+v, %v", res.CheckResult, err)
	}
	o.Post = true
	if _, err := Check(t.Context(), f.cfg, f.env, o); !errors.Is(err, ErrCheckNoPoster) {
		t.Errorf("Post without a poster: %v", err)
	}
	f.env.Control.Pause("test", "tester")
	if _, err := Check(t.Context(), f.cfg, f.env, o); !errors.Is(err, ErrPaused) {
		t.Errorf("paused: %v", err)
	}
	f.env.Log = nil
	if _, err := Check(t.Context(), f.cfg, f.env, o); !errors.Is(err, ErrCheckNoLog) {
		t.Errorf("no log: %v", err)
	}
}
