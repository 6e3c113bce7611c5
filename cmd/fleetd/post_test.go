package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

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
