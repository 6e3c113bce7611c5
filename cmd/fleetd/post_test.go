package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/triage"
)

// TestMarkAndPostThroughTheOutbox: `findings mark` and `findings post` go
// through the poster. With the chain up they print what they always
// printed; with the node unreachable they queue in the outbox, say so and
// exit 0; the next post with the chain back posts what was queued first, in
// order and once. An operator's own key queues in an outbox of its own.
func TestMarkAndPostThroughTheOutbox(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	info := startDevnetCmd(t, data)
	c := []string{"--config", info.Config}
	down := append(c, "--rpc", "http://127.0.0.1:1")
	jsonOut := func(out string) map[string]any {
		t.Helper()
		var m map[string]any
		if err := json.Unmarshal([]byte(out), &m); err != nil {
			t.Fatalf("output %q: %v", out, err)
		}
		return m
	}
	finding := "qa/v1 source=qa-fuzz sev=high surface=compiler run=r-1\ncompile panic on enum E {}\nrepro: qa_compile {\"source\":\"enum E {}\"}"
	out, stderr, code := run(t, "", append(c, "findings", "post", "--text", finding)...)
	if code != 0 {
		t.Fatalf("findings post: %s", stderr)
	}
	if m := jsonOut(out); m["index"] != 0.0 || m["tx"] == "" || m["sponsored"] != true || len(m) != 6 {
		t.Errorf("findings post printed %v", m)
	}
	markFP, _ := triage.Correction{Kind: "false-positive", Ref: 0}.Format()
	out, stderr, code = run(t, "", append(c, "findings", "mark", "0", "false-positive")...)
	if m := jsonOut(out); code != 0 || m["index"] != 1.0 || m["text"] != markFP || m["tx"] == "" || len(m) != 3 {
		t.Fatalf("findings mark: %d %v %s", code, m, stderr)
	}

	// The node is away: both queue in the fleet's outbox.
	markResolved, _ := triage.Correction{Kind: "resolution", Ref: 0}.Format()
	out, stderr, code = run(t, "", append(down, "findings", "mark", "0", "resolved")...)
	outbox := filepath.Join(data, "outbox")
	if m := jsonOut(out); code != 0 || m["status"] != "queued" || m["outbox"] != outbox || m["text"] != markResolved || !strings.Contains(stderr, "queued in "+outbox) {
		t.Fatalf("findings mark with the node away: %d %v %s", code, m, stderr)
	}
	out, stderr, code = run(t, "", append(down, "findings", "post", "--text", "a note while the node was away")...)
	if m := jsonOut(out); code != 0 || m["status"] != "queued" || m["outbox"] != outbox || !strings.Contains(stderr, "fleetd reconcile") {
		t.Fatalf("findings post with the node away: %d %v %s", code, m, stderr)
	}
	if files, _ := filepath.Glob(filepath.Join(outbox, "*.json")); len(files) != 2 {
		t.Fatalf("outbox holds %v, want 2 entries", files)
	}

	// An operator's own key: its own outbox, never posted as the fleet.
	opKey := filepath.Join(dir, "op.key")
	if _, stderr, code := run(t, "", "keys", "new", "--out", opKey); code != 0 {
		t.Fatal(stderr)
	}
	out, stderr, code = run(t, "", append(down, "findings", "post", "--key-file", opKey, "--text", "an operator's note")...)
	m := jsonOut(out)
	opOutbox, _ := m["outbox"].(string)
	if code != 0 || m["status"] != "queued" || filepath.Dir(opOutbox) != outbox || !strings.Contains(opOutbox, strings.ToLower(m["sender"].(string))) {
		t.Fatalf("an operator's post with the node away: %d %v %s", code, m, stderr)
	}

	// The node is back: the next post goes after what was queued.
	out, stderr, code = run(t, "", append(c, "findings", "post", "--text", "the node is back")...)
	if m := jsonOut(out); code != 0 || m["index"] != 4.0 {
		t.Fatalf("findings post after the outage: %d %v %s", code, m, stderr)
	}
	if _, stderr, code := run(t, "", append(c, "findings", "post", "--key-file", opKey, "--text", "the operator again")...); code != 0 {
		t.Fatal(stderr)
	}
	out, _, _ = run(t, "", append(c, "findings", "--json")...)
	var texts, senders []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var row findingJSON
		json.Unmarshal([]byte(line), &row)
		texts, senders = append(texts, row.Text), append(senders, row.Sender.String())
	}
	want := []string{finding, markFP, markResolved, "a note while the node was away", "the node is back", "an operator's note", "the operator again"}
	if !slices.Equal(texts, want) {
		t.Errorf("the log holds\n%q\nwant\n%q", texts, want)
	}
	if len(senders) == len(want) && (senders[5] != senders[6] || senders[5] == senders[0]) {
		t.Errorf("senders %v: the operator's entries must be the operator's", senders)
	}
	for _, d := range []string{outbox, opOutbox} {
		if files, _ := filepath.Glob(filepath.Join(d, "*.json")); len(files) != 0 {
			t.Errorf("%s still holds %v", d, files)
		}
	}
	audit, _ := os.ReadFile(filepath.Join(data, "audit.jsonl"))
	if !strings.Contains(string(audit), "correction queued") {
		t.Errorf("the audit log does not say the correction was queued:\n%s", audit)
	}
}

// TestMarkCorrectionsThatStick: unmerge and accepted-risk from the CLI on a
// real dev chain. Bad requests exit 2 and leave the log as it was; good ones
// change the next report, and the report is the same after the triage
// store is thrown away and rebuilt from the chain.
func TestMarkCorrectionsThatStick(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	info := startDevnetCmd(t, data)
	c := []string{"--config", info.Config}
	post := func(text string) {
		t.Helper()
		if _, stderr, code := run(t, "", append(c, "findings", "post", "--text", text)...); code != 0 {
			t.Fatalf("findings post: %s", stderr)
		}
	}
	// 0 and 1 read alike, so triage merges them; 2 is another bug.
	post("qa/v1 source=qa-registry sev=high surface=registry run=r-1\nregistry lookup returns the stale owner of a name after its transfer")
	post("qa/v1 source=qa-registry sev=high surface=registry run=r-2\nregistry lookup returns the stale owner of a name after its transfer once the name has expired")
	post("qa/v1 source=qa-fuzz sev=high surface=compiler run=r-3\ncompile panic on enum E {}\nrepro: qa_compile {\"source\":\"enum E {}\"}")
	count := func() int {
		out, _, _ := run(t, "", append(c, "findings", "--json")...)
		return strings.Count(strings.TrimSpace(out), "\n") + 1
	}
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"9", "unmerge"}, "entry 9: no such finding"},
		{[]string{"0", "unmerge"}, "first finding of cluster"},
		{[]string{"2", "unmerge"}, "alone in cluster"},
		{[]string{"2", "accepted-risk"}, "accepted-risk needs a reason"},
		{[]string{"2", "accepted-risk", "--reason", "x", "--until", "2020-01-01"}, "not in the future"},
		{[]string{"2", "false-positive", "--until", "720h"}, "only for accepted-risk"},
		{[]string{"5c1e0a9d2b3f4a10", "unmerge"}, "no such finding"},
	} {
		_, stderr, code := run(t, "", append(append(c, "findings", "mark"), tc.args...)...)
		if code != 2 || !strings.Contains(stderr, tc.msg) {
			t.Errorf("mark %v: exit %d %q, want 2 and %q", tc.args, code, stderr, tc.msg)
		}
	}
	if n := count(); n != 3 {
		t.Fatalf("refused corrections reached the log: %d entries, want 3", n)
	}
	for _, args := range [][]string{
		{"1", "unmerge", "--reason", "the expiry path is another bug"},
		{"2", "accepted-risk", "--reason", "only the admin network reaches it", "--until", "720h"},
	} {
		if _, stderr, code := run(t, "", append(append(c, "findings", "mark"), args...)...); code != 0 {
			t.Fatalf("mark %v: %s", args, stderr)
		}
	}
	if _, stderr, code := run(t, "", append(c, "findings", "mark", "1", "unmerge")...); code != 2 || !strings.Contains(stderr, "already split") {
		t.Errorf("a second unmerge: exit %d %q", code, stderr)
	}
	report := func() fleet.Report {
		t.Helper()
		if _, stderr, code := run(t, "", append(c, "triage")...); code != 0 {
			t.Fatalf("triage: %s", stderr)
		}
		out, stderr, code := run(t, "", append(c, "report", "--format", "json")...)
		if code != 0 {
			t.Fatalf("report: %s", stderr)
		}
		var r fleet.Report
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := report()
	states := map[fleet.ClusterState]int{}
	for _, row := range r.Clusters {
		states[row.State]++
		if row.State == fleet.ClusterAcceptedRisk && (len(row.Corrections) != 1 || row.Corrections[0].Until == nil || !strings.Contains(row.StateReason, "only the admin network")) {
			t.Errorf("the accepted risk: %q %+v", row.StateReason, row.Corrections)
		}
	}
	if len(r.Clusters) != 3 || states[fleet.ClusterOpen] != 2 || states[fleet.ClusterAcceptedRisk] != 1 {
		t.Errorf("after the corrections: %d clusters, states %v, want the split pair open and one accepted risk", len(r.Clusters), states)
	}
	if err := os.RemoveAll(filepath.Join(data, triage.StoreDir)); err != nil {
		t.Fatal(err)
	}
	r2 := report()
	for i := range r.Clusters {
		if i >= len(r2.Clusters) || r.Clusters[i].ID != r2.Clusters[i].ID || r.Clusters[i].State != r2.Clusters[i].State || r.Clusters[i].Count != r2.Clusters[i].Count {
			t.Fatalf("rebuilt from the chain, the report differs:\n%+v\n%+v", r.Clusters, r2.Clusters)
		}
	}
}
