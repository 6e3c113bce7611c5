package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/runner"
	"github.com/qafleet/fleetd/trajectory"
)

// TestRunsReplayOnTheTestbed records a smoke run at exercise (mint,
// compile, publish, fetch, call) and replays it: at the same dial every
// deterministic turn is the same, the fresh name replaces the recorded one
// in later calls, and the replay is a run record naming the one it
// replays; at --dial observe the writes come back refused; bad input exits
// 2 and touches neither the record nor the log.
func TestRunsReplayOnTheTestbed(t *testing.T) {
	f := newFleetFixture(t, fleet.Exercise, nil)
	ctx := context.Background()
	logLen := func() uint64 {
		t.Helper()
		n, err := f.dn.Log.Count(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if out, stderr, code := run(t, "", "probe", "smoke", "--config", f.config); code != 0 {
		t.Fatalf("probe smoke: %d\n%s%s", code, out, stderr)
	}
	files, _ := filepath.Glob(filepath.Join(f.dataDir, trajectory.RunsDir, "*.jsonl"))
	if len(files) != 1 {
		t.Fatalf("want one run record, have %v", files)
	}
	origID := strings.TrimSuffix(filepath.Base(files[0]), ".jsonl")
	orig, err := trajectory.ReadAll(files[0])
	if err != nil {
		t.Fatal(err)
	}
	origName := ""
	for _, turn := range orig.Turns() {
		if a := turn.ExecutedAction; a != nil && a.Tool == "qa_create" {
			var res struct{ Name string }
			json.Unmarshal(turn.Result.(json.RawMessage), &res)
			origName = res.Name
		}
	}
	if origName == "" {
		t.Fatal("the smoke run minted no name at exercise")
	}
	before := logLen()

	replay := func(args ...string) (runner.ReplayComparison, string, int) {
		t.Helper()
		out, stderr, code := run(t, "", append([]string{"runs", "replay", "--config", f.config, "--json"}, args...)...)
		var rep runner.ReplayComparison
		if code == 0 {
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatalf("replay printed %q: %v", out, err)
			}
		}
		return rep, stderr, code
	}
	byTool := func(rep runner.ReplayComparison) map[string][]runner.ReplayRow {
		m := map[string][]runner.ReplayRow{}
		for _, r := range rep.Turns {
			m[r.Tool] = append(m[r.Tool], r)
		}
		return m
	}

	// The same dial: every call replayed, the deterministic ones the same.
	rep, stderr, code := replay(origID)
	if code != 0 {
		t.Fatalf("replay at exercise: %d %s", code, stderr)
	}
	if rep.ReplayOf != origID || rep.RunID == origID || rep.Dial != "exercise" {
		t.Errorf("replay header: %+v", rep)
	}
	if n := len(runner.ReplayCalls(orig)); len(rep.Turns) != n {
		t.Errorf("replayed %d turns, the run made %d calls", len(rep.Turns), n)
	}
	tools := byTool(rep)
	for _, tool := range []string{"qa_create", "qa_compile", "qa_publish", "qa_fetch", "qa_call"} {
		if len(tools[tool]) == 0 {
			t.Errorf("no %s turn in the replay: %+v", tool, rep.Turns)
		}
		for _, r := range tools[tool] {
			if r.Comparison != runner.ReplaySame {
				t.Errorf("%s turn %d at the same dial: %s (%s)", tool, r.Turn, r.Comparison, r.Detail)
			}
		}
	}
	fresh := rep.Names[origName]
	if fresh == "" || fresh == origName {
		t.Fatalf("the recorded name %s was not mapped to a fresh one: %v", origName, rep.Names)
	}
	// The replay is a run record of its own, naming the original, whose
	// publish went to the fresh name.
	rrun, err := trajectory.ReadAll(trajectory.Path(f.dataDir, rep.RunID))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		ReplayOf string `json:"replay_of"`
	}
	json.Unmarshal(rrun.Header.Config.(json.RawMessage), &cfg)
	if cfg.ReplayOf != origID || rrun.Header.Model != "replay/"+origID || rrun.Footer == nil || rrun.Footer.Outcome != trajectory.OutcomeDone {
		t.Errorf("replay record: header config %s, model %s, footer %+v", rrun.Header.Config, rrun.Header.Model, rrun.Footer)
	}
	if out, _, _ := run(t, "", "runs", "show", rep.RunID, "--config", f.config); !strings.Contains(out, "replay of run "+origID) {
		t.Errorf("runs show of the replay does not name the original:\n%s", out)
	}
	published := false
	for _, turn := range rrun.Turns() {
		if a := turn.ExecutedAction; a != nil && a.Tool == "qa_publish" {
			published = true
			if !strings.Contains(string(a.Args), fresh) || strings.Contains(string(a.Args), origName) {
				t.Errorf("replayed publish args %s: want %s, not %s", a.Args, fresh, origName)
			}
		}
	}
	if !published {
		t.Error("the replay record has no executed qa_publish")
	}

	// At observe the writes are refused now; the reads are the same.
	rep, stderr, code = replay(origID, "--dial", "observe")
	if code != 0 {
		t.Fatalf("replay at observe: %d %s", code, stderr)
	}
	tools = byTool(rep)
	for _, tool := range []string{"qa_create", "qa_publish", "qa_call"} {
		for _, r := range tools[tool] {
			if r.Comparison != runner.ReplayRefusedNow || !strings.Contains(r.Detail, "dial is observe") {
				t.Errorf("%s at observe: %s (%s)", tool, r.Comparison, r.Detail)
			}
		}
	}
	for _, r := range tools["qa_compile"] {
		if r.Comparison != runner.ReplaySame {
			t.Errorf("qa_compile at observe: %s (%s)", r.Comparison, r.Detail)
		}
	}
	if rep.Counts[runner.ReplayRefusedNow] < 3 {
		t.Errorf("counts at observe: %v", rep.Counts)
	}
	// The text form says the same.
	out, _, code := run(t, "", "runs", "replay", origID, "--config", f.config, "--dial", "observe")
	if code != 0 || !strings.Contains(out, "refused now") || !strings.Contains(out, "of run "+origID) {
		t.Errorf("text replay: %d\n%s", code, out)
	}
	t.Logf("fleetd runs replay %s --dial observe:\n%s", origID, out)

	// A run that posted findings: replayed, its qa_report calls are checked
	// and fingerprinted, and nothing reaches the log.
	if _, err := fleet.NewControl(f.dataDir).SetDial(fleet.Observe, "test", "test"); err != nil {
		t.Fatal(err)
	}
	had, _ := filepath.Glob(filepath.Join(f.dataDir, trajectory.RunsDir, "*.jsonl"))
	if out, stderr, code := run(t, "", "probe", "security", "--config", f.config); code != 0 {
		t.Fatalf("probe security: %d\n%s%s", code, out, stderr)
	}
	now, _ := filepath.Glob(filepath.Join(f.dataDir, trajectory.RunsDir, "*.jsonl"))
	secID := ""
	for _, file := range now {
		if !slices.Contains(had, file) {
			secID = strings.TrimSuffix(filepath.Base(file), ".jsonl")
		}
	}
	before = logLen()
	rep, stderr, code = replay(secID)
	if code != 0 {
		t.Fatalf("replay of the security run: %d %s", code, stderr)
	}
	reports := byTool(rep)["qa_report"]
	if len(reports) == 0 {
		t.Fatalf("the security run reported nothing to replay: %+v", rep.Turns)
	}
	for _, r := range reports {
		if r.Comparison != runner.ReplaySame || !strings.Contains(r.Detail, "not posted") {
			t.Errorf("qa_report turn %d: %s (%s)", r.Turn, r.Comparison, r.Detail)
		}
	}
	if after := logLen(); after != before {
		t.Errorf("replaying %d qa_report calls posted %d entries", len(reports), after-before)
	}
	t.Logf("security run %s: %d calls, %v", secID, len(rep.Turns), rep.Counts)
	for _, r := range rep.Turns {
		if r.Comparison != runner.ReplaySame {
			t.Logf("  turn %d %s: %s (%s)", r.Turn, r.Tool, r.Comparison, r.Detail)
		}
	}

	// Bad input: exit 2, the records and the log untouched.
	torn := filepath.Join(f.dataDir, trajectory.RunsDir, "r-20260101-000000-aaaaaa.jsonl")
	b, _ := os.ReadFile(files[0])
	b = bytes.Replace(b, []byte(origID), []byte("r-20260101-000000-aaaaaa"), -1)
	lines := bytes.SplitAfter(b, []byte("\n"))
	cut := bytes.Join(lines[:len(lines)-2], nil) // no footer: a crash
	cut = append(cut, lines[len(lines)-2][:10]...)
	os.WriteFile(torn, cut, 0o600)
	other := filepath.Join(f.dataDir, trajectory.RunsDir, "r-20260101-000000-bbbbbb.jsonl")
	os.WriteFile(other, bytes.Replace(bytes.Replace(b, []byte("r-20260101-000000-aaaaaa"), []byte("r-20260101-000000-bbbbbb"), -1),
		[]byte(`"harness_version":"`+harnessVersion+`"`), []byte(`"harness_version":"fleetd-loop/0"`), 1), 0o600)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"r-20990101-000000-ffffff"}, `no run "r-20990101-000000-ffffff"`},
		{[]string{"../etc/passwd"}, "not a run id"},
		{[]string{"r-20260101-000000-aaaaaa"}, "truncated"},
		{[]string{"r-20260101-000000-bbbbbb"}, `recorded by harness "fleetd-loop/0"`},
		{[]string{origID, "--dial", "sideways"}, "invalid dial"},
	} {
		_, stderr, code := replay(c.args...)
		if code != exitConfig || !strings.Contains(stderr, c.want) {
			t.Errorf("replay %v: exit %d, %s (want 2 and %q)", c.args, code, stderr, c.want)
		}
	}
	if got, _ := os.ReadFile(torn); !bytes.Equal(got, cut) {
		t.Error("a refused replay changed the truncated record")
	}
	if _, stderr, code := replay(origID, "--dial", "exercise"); code != exitConfig || !strings.Contains(stderr, "never raises the dial") {
		t.Errorf("--dial above the stored dial: %d %s", code, stderr)
	}
	if after := logLen(); after != before {
		t.Errorf("replays touched the log: %d entries before, %d after", before, after)
	}
	os.Remove(torn)
	os.Remove(other)
	f.checkInvariants(t)
}
