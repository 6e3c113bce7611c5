package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
)

// TestToolCallAtEveryRung drives `fleetd tool call` the way an operator does.
func TestToolCallAtEveryRung(t *testing.T) {
	f := newFleetFixture(t, fleet.Observe, map[string]fleet.Trigger{})
	call := func(args ...string) (map[string]any, int, string) {
		t.Helper()
		out, stderr, code := run(t, "", append([]string{"tool", "call", "--config", f.config}, args...)...)
		var res map[string]any
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("tool call %v printed %q (%s): %v", args, out, stderr, err)
		}
		return res, code, stderr
	}
	// Observe: writes are refused (exit 3), reads work.
	res, code, _ := call("qa_create")
	if code != exitRefused || !strings.Contains(res["error"].(string), "needs dial exercise, dial is observe") {
		t.Errorf("qa_create at observe: %d %v", code, res)
	}
	if res, code, _ = call("qa_chain", "--args", `{"method":"simulate","params":["adminBurn(string[])"]}`); code != 0 || res["reverted"] != false {
		t.Errorf("simulate adminBurn: %d %v (the testbed's planted flaw: it should not revert)", code, res)
	}
	if res, code, _ = call("qa_fetch", "--args", `{"url":"http://169.254.169.254/latest/meta-data/"}`); code != exitToolError || !strings.Contains(res["error"].(string), "not on the fetch allowlist") {
		t.Errorf("metadata fetch: %d %v", code, res)
	}
	if res, code, _ = call("qa_fetch", "--args", `{"url":`); code != exitToolError || !strings.Contains(res["error"].(string), "want a JSON object") {
		t.Errorf("malformed args: %d %v", code, res)
	}
	// Exercise: a name is minted, and released before the command exits.
	if _, err := fleet.NewControl(f.dataDir).SetDial(fleet.Exercise, "test", "test"); err != nil {
		t.Fatal(err)
	}
	res, code, stderr := call("qa_create")
	if code != 0 || res["owner_verified"] != true {
		t.Fatalf("qa_create at exercise: %d %v %s", code, res, stderr)
	}
	cl, err := chain.Dial(context.Background(), f.dn.Info.RPC, chain.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if owner, _ := cl.Registry(mustParseAddr(t, f.tb.Registry())).OwnerOf(context.Background(), res["name"].(string)); !owner.IsZero() {
		t.Errorf("%s still registered after tool call exited", res["name"])
	}
	// A later call cannot publish to that name: it belonged to another run.
	res, code, _ = call("qa_publish", "--args", `{"name":"`+res["name"].(string)+`","source":"let x = 1;"}`)
	if code != exitToolError || !strings.Contains(res["error"].(string), "not minted by this run") {
		t.Errorf("publish to another run's name: %d %v", code, res)
	}
	f.checkInvariants(t)
}

// TestReportOffline: with the chain gone, report prints the saved report and its age.
func TestReportOffline(t *testing.T) {
	f := newFleetFixture(t, fleet.Observe, map[string]fleet.Trigger{})
	if _, stderr, code := run(t, "", "findings", "post", "--config", f.config, "--text",
		"qa/v1 source=qa-test sev=high surface=compiler\ncompiler crash on an empty enum\nrepro: qa_compile {\"source\":\"enum E{}\"}"); code != 0 {
		t.Fatal(stderr)
	}
	out, stderr, code := run(t, "", "report", "--config", f.config, "--format", "table")
	if code != 0 || !strings.Contains(out, "compiler crash on an empty enum") {
		t.Fatalf("report: %d %s %s", code, out, stderr)
	}
	f.dn.Close() // the chain goes away
	out, stderr, code = run(t, "", "report", "--config", f.config, "--format", "json")
	if code != 0 || !strings.Contains(out, "compiler crash on an empty enum") || !strings.Contains(stderr, "showing the report saved") {
		t.Errorf("offline report: %d\n%s\n%s", code, out, stderr)
	}
	// findings and triage read what triage stored (triage.OpenStored).
	out, stderr, code = run(t, "", "findings", "--config", f.config)
	if code != 0 || !strings.Contains(out, "compiler crash on an empty enum") || !strings.Contains(stderr, "unreachable: showing the 1 entries triage stored") {
		t.Errorf("offline findings: %d\n%s\n%s", code, out, stderr)
	}
	out, stderr, code = run(t, "", "triage", "--config", f.config)
	if code != 0 || !strings.Contains(stderr, "unreachable: ranked the 1 entries triage stored") {
		t.Errorf("offline triage: %d\n%s\n%s", code, out, stderr)
	}
}
