package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestFeedbackLogV2EndToEnd deploys a version-2 log with `chain deploy
// --version 2`, posts through it sponsored (the EIP-712 domain is v2's),
// keyed and plain, and reads it back with `findings` and `triage`: every
// command finds the version out by itself.
func TestFeedbackLogV2EndToEnd(t *testing.T) {
	info := startDevnetCmd(t, t.TempDir())
	out, stderr, code := run(t, "", "chain", "deploy", "--rpc", info.RPC, "--key-file", info.SponsorKeyFile, "--version", "2")
	if code != 0 {
		t.Fatalf("deploy --version 2: %s", stderr)
	}
	var d struct {
		FeedbackLog string `json:"feedback_log"`
		Version     int    `json:"version"`
	}
	if err := json.Unmarshal([]byte(out), &d); err != nil || d.Version != 2 || len(d.FeedbackLog) != 42 {
		t.Fatalf("deploy output %q", out)
	}
	if _, stderr, code := run(t, "", "chain", "deploy", "--rpc", info.RPC, "--key-file", info.SponsorKeyFile, "--version", "3"); code == 0 || !strings.Contains(stderr, "want 1 or 2") {
		t.Errorf("--version 3: code %d, %s", code, stderr)
	}
	texts := []string{
		"qa/v1 source=qa-ux sev=low surface=docs run=r-1\ndead link: /docs/publish returns 404",
		"qa/v1 source=qa-fuzz sev=high surface=compiler run=r-2\ncompile panic on `enum E{}`\nrepro: qa_compile {\"source\":\"enum E{}\"}",
		"a human's note",
	}
	for _, text := range texts {
		if _, stderr, code := run(t, "", "findings", "post", "--config", info.Config, "--feedback-log", d.FeedbackLog, "--text", text); code != 0 {
			t.Fatalf("findings post to v2: %s", stderr)
		}
	}
	out, stderr, code = run(t, "", "findings", "--config", info.Config, "--feedback-log", d.FeedbackLog, "--json")
	if code != 0 {
		t.Fatalf("findings on v2: %s", stderr)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != len(texts) {
		t.Fatalf("findings --json printed %d lines, want %d:\n%s", len(lines), len(texts), out)
	}
	var second findingJSON
	json.Unmarshal([]byte(lines[1]), &second)
	if second.Source != "qa-fuzz" || second.Surface != "compiler" || second.Repro == "" || second.Index != 1 {
		t.Errorf("second finding read from v2 = %+v", second)
	}
	out, stderr, code = run(t, "", "triage", "--config", info.Config, "--feedback-log", d.FeedbackLog, "--data-dir", t.TempDir())
	if code != 0 || !strings.Contains(out, "triaged entries 0..3") || !strings.Contains(out, "3 clusters") {
		t.Errorf("triage of a v2 log: code %d\n%s\n%s", code, out, stderr)
	}
}
