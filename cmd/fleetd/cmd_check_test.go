package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/triage"
	"go.yaml.in/yaml/v3"
)

// crashingCompiler stands for a new build of the testbed's compiler with a
// regression: it crashes like a Go panic on every program, known-good ones
// included.
const crashingCompiler = `#!/bin/sh
echo 'panic: runtime error: invalid memory address or nil pointer dereference' >&2
echo '[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x4a2b3c]' >&2
echo '' >&2
echo 'goroutine 1 [running]:' >&2
echo 'main.emit(...)' >&2
echo '	/build/repo/compiler/emit.go:88 +0x1c' >&2
exit 2
`

// TestCheckOnTheTestbed: fleetd check passes when everything it finds is
// already on the log, fails and names the finding when a new flaw appears
// (the compiler under test starts crashing), posts nothing without --post,
// and passes again once --post has put the new finding on the log.
func TestCheckOnTheTestbed(t *testing.T) {
	f := newFleetFixture(t, fleet.Observe, nil)
	ctx := context.Background()
	logLen := func() uint64 {
		t.Helper()
		n, err := f.dn.Log.Count(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	// The recipe's own check line (docs/ci.md), on the testbed: its
	// config, its output files, its specialists and --fail-on.
	recipe, _ := ciCheckArgs(t)
	dir := t.TempDir()
	sarifFile, summaryFile := filepath.Join(dir, "fleetd.sarif"), filepath.Join(dir, "summary.md")
	args := slices.Clone(recipe)
	for i := range args {
		switch {
		case i > 0 && args[i-1] == "--config":
			args[i] = f.config
		case i > 0 && args[i-1] == "--sarif":
			args[i] = sarifFile
		case i > 0 && args[i-1] == "--summary":
			args[i] = summaryFile
		}
	}
	// The log knows what the recipe's specialists find today, as after
	// the service's runs.
	for _, s := range strings.Split(flagValue(recipe, "specialists"), ",") {
		if out, stderr, code := run(t, "", "probe", s, "--config", f.config); code != 0 {
			t.Fatalf("probe %s: exit %d\n%s%s", s, code, out, stderr)
		}
	}
	known := logLen()
	if known == 0 {
		t.Fatal("the probes posted nothing: the test would compare with an empty log")
	}
	out, stderr, code := run(t, "", args...)
	if code != 0 {
		t.Fatalf("%v with nothing new: exit %d\n%s\n%s", args, code, out, stderr)
	}
	t.Logf("check with nothing new:\n%s", out)
	if !strings.Contains(out, ": 0 new, 0 regressed, ") || !strings.Contains(out, "PASS") {
		t.Errorf("check output:\n%s", out)
	}
	summary, _ := os.ReadFile(summaryFile)
	if !strings.HasPrefix(string(summary), "## fleetd check: 0 new, 0 regressed, ") || !strings.Contains(string(summary), "### Still open") {
		t.Errorf("summary:\n%s", summary)
	}
	b, _ := os.ReadFile(sarifFile)
	log := mustValidSARIF(t, b)
	stillOpen := strings.Count(out, "  still open ")
	if n := len(log.Runs[0].Results); n == 0 || n != stillOpen {
		t.Errorf("%d SARIF results for %d still-open clusters:\n%s", n, stillOpen, out)
	}
	for _, res := range log.Runs[0].Results {
		if res.BaselineState != "unchanged" {
			t.Errorf("a finding the log knows has baselineState %q", res.BaselineState)
		}
	}
	if logLen() != known {
		t.Fatalf("check without --post wrote to the log: %d entries, had %d", logLen(), known)
	}

	// A new flaw: the compiler under test now crashes on known-good programs.
	cfg, err := LoadConfig(f.config)
	if err != nil {
		t.Fatal(err)
	}
	compiler, err := os.ReadFile(cfg.Target.Compiler[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg.Target.Compiler[0], []byte(crashingCompiler), 0o755); err != nil {
		t.Fatal(err)
	}
	out, stderr, code = run(t, "", "check", "--config", f.config, "--specialists", "smoke,security", "--json", "--sarif", sarifFile, "--summary", summaryFile)
	if code != 1 || !strings.Contains(stderr, "new or regressed finding(s) at or above high") {
		t.Fatalf("check with a new flaw: exit %d, want 1\n%s\n%s", code, out, stderr)
	}
	var res triage.CheckResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("--json: %v\n%s", err, out)
	}
	var fresh []triage.CheckRow
	for _, row := range res.Rows {
		if row.Status == triage.CheckNew {
			fresh = append(fresh, row)
		}
	}
	if len(fresh) == 0 || fresh[0].Surface != fleet.SurfaceCompiler || !fresh[0].Fails || !strings.Contains(fresh[0].Title, "corpus program") || res.Failing != len(fresh) {
		t.Fatalf("new rows %+v (failing %d)", fresh, res.Failing)
	}
	summary, _ = os.ReadFile(summaryFile)
	t.Logf("summary with a new flaw:\n%s", summary)
	if !strings.Contains(string(summary), "❌ **") || !strings.Contains(string(summary), "### New") || !strings.Contains(string(summary), "corpus program") {
		t.Errorf("the summary does not name the new finding:\n%s", summary)
	}
	b, _ = os.ReadFile(sarifFile)
	log = mustValidSARIF(t, b)
	newResults := 0
	for _, r := range log.Runs[0].Results {
		if r.BaselineState == "new" {
			newResults++
			if r.PartialFingerprints["fleetdCluster/v1"] != fresh[0].Cluster && len(fresh) == 1 {
				t.Errorf("the new result's fingerprint %v is not its cluster %s", r.PartialFingerprints, fresh[0].Cluster)
			}
		}
	}
	if newResults != len(fresh) {
		t.Errorf("%d SARIF results are new, %d rows", newResults, len(fresh))
	}
	if logLen() != known {
		t.Fatalf("check without --post wrote to the log: %d entries, had %d", logLen(), known)
	}

	// --fail-on never reports the new finding without failing.
	if out, stderr, code = run(t, "", "check", "--config", f.config, "--specialists", "smoke", "--fail-on", "never"); code != 0 || !strings.Contains(out, "  new ") {
		t.Fatalf("check --fail-on never: exit %d\n%s\n%s", code, out, stderr)
	}

	// --post puts the findings on the log (the check itself still fails:
	// they were new to it); the next check knows them.
	if out, stderr, code = run(t, "", "check", "--config", f.config, "--specialists", "smoke", "--post"); code != 1 {
		t.Fatalf("check --post: exit %d\n%s\n%s", code, out, stderr)
	}
	if logLen() == known {
		t.Fatal("check --post posted nothing")
	}
	if out, stderr, code = run(t, "", "check", "--config", f.config, "--specialists", "smoke"); code != 0 || !strings.Contains(out, ": 0 new") {
		t.Fatalf("check after --post: exit %d\n%s\n%s", code, out, stderr)
	}
	// The fix lands: the crashes the log holds are no longer seen.
	if err := os.WriteFile(cfg.Target.Compiler[0], compiler, 0o755); err != nil {
		t.Fatal(err)
	}
	out, stderr, code = run(t, "", "check", "--config", f.config, "--specialists", "smoke")
	if code != 0 || !strings.Contains(out, ": 0 new") || strings.Count(out, "  no longer seen ") != len(fresh) {
		t.Fatalf("check after the fix: exit %d, want 0 and %d no longer seen\n%s\n%s", code, len(fresh), out, stderr)
	}

	// The whole log's report as SARIF, from the specialists' real findings:
	// valid, one result per cluster, and the same fingerprints twice. With
	// target.repo set, the compiler crash's output (in the entry, past its
	// title) gives the file and line in the repository.
	var doc map[string]any
	raw, _ := os.ReadFile(f.config)
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	doc["target"].(map[string]any)["repo"] = map[string]any{"url": t.TempDir(), "surfaces": []string{"compiler"}}
	if raw, err = yaml.Marshal(doc); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.config, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	var fps [2][]string
	for i := range fps {
		out := filepath.Join(dir, "report.sarif")
		if _, stderr, code := run(t, "", "report", "--config", f.config, "--format", "sarif", "--out", out); code != 0 {
			t.Fatalf("report --format sarif: exit %d\n%s", code, stderr)
		}
		b, _ := os.ReadFile(out)
		log := mustValidSARIF(t, b)
		rep, err := triage.LoadReport(filepath.Join(cfg.DataDir, "reports"))
		if err != nil {
			t.Fatal(err)
		}
		if len(log.Runs[0].Results) != len(rep.Clusters) || len(rep.Clusters) == 0 {
			t.Fatalf("%d SARIF results for %d clusters", len(log.Runs[0].Results), len(rep.Clusters))
		}
		lines := 0
		for j, r := range log.Runs[0].Results {
			if r.PartialFingerprints["fleetdCluster/v1"] != rep.Clusters[j].ID {
				t.Errorf("result %d: %v, cluster %s", j, r.PartialFingerprints, rep.Clusters[j].ID)
			}
			fps[i] = append(fps[i], r.PartialFingerprints["fleetdCluster/v1"])
			if p := r.Locations[0].PhysicalLocation; p != nil && p.Region != nil {
				if p.ArtifactLocation.URI != "compiler/emit.go" || p.ArtifactLocation.URIBaseID != "SRCROOT" || p.Region.StartLine != 88 || r.RuleID != "fleetd/compiler/crash" {
					t.Errorf("result %d: location %+v line %d, rule %s", j, p.ArtifactLocation, p.Region.StartLine, r.RuleID)
				}
				lines++
			}
		}
		if lines != len(fresh) {
			t.Errorf("%d results with a file and line, want the %d compiler crashes", lines, len(fresh))
		}
	}
	if !slices.Equal(fps[0], fps[1]) {
		t.Errorf("two reports of one log gave other fingerprints:\n%v\n%v", fps[0], fps[1])
	}
}

// TestCheckUsage: bad flags, specialists and severities exit 2 before
// anything runs, as the CLI's other commands do for usage errors.
func TestCheckUsage(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "fleetd.yaml")
	if err := os.WriteFile(cfg, []byte("data_dir: "+t.TempDir()+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--fail-on", "dire"}, `--fail-on "dire"`},
		{[]string{"--fail-on", "meta"}, `--fail-on "meta"`},
		{[]string{"--specialists", "smoke,nope"}, `no specialist "nope"`},
		{[]string{"--specialists", "smoke,smoke"}, "named twice"},
		{[]string{"--specialists", ","}, "at least one"},
		{[]string{"--bogus"}, "unknown flag"},
		{[]string{"extra"}, "unknown command"},
		{[]string{"--sarif", "/nonexistent-dir/x.sarif"}, "its directory does not exist"},
		{nil, "no target"}, // the config has no target: section
	} {
		_, stderr, code := run(t, "", append([]string{"check", "--config", cfg}, tc.args...)...)
		if code != exitConfig || !strings.Contains(stderr, tc.want) {
			t.Errorf("check %v: exit %d, want 2 and %q\n%s", tc.args, code, tc.want, stderr)
		}
	}
}
