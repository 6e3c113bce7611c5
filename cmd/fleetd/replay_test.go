package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/qafleet/fleetd/fleet"
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
		n, err := f.dn.log.Count(ctx)
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

	replay := func(args ...string) (replayReport, string, int) {
		t.Helper()
		out, stderr, code := run(t, "", append([]string{"runs", "replay", "--config", f.config, "--json"}, args...)...)
		var rep replayReport
		if code == 0 {
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatalf("replay printed %q: %v", out, err)
			}
		}
		return rep, stderr, code
	}
	byTool := func(rep replayReport) map[string][]replayRow {
		m := map[string][]replayRow{}
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
	if n := len(replayCalls(orig)); len(rep.Turns) != n {
		t.Errorf("replayed %d turns, the run made %d calls", len(rep.Turns), n)
	}
	tools := byTool(rep)
	for _, tool := range []string{"qa_create", "qa_compile", "qa_publish", "qa_fetch", "qa_call"} {
		if len(tools[tool]) == 0 {
			t.Errorf("no %s turn in the replay: %+v", tool, rep.Turns)
		}
		for _, r := range tools[tool] {
			if r.Comparison != replaySame {
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
			if r.Comparison != replayRefusedNow || !strings.Contains(r.Detail, "dial is observe") {
				t.Errorf("%s at observe: %s (%s)", tool, r.Comparison, r.Detail)
			}
		}
	}
	for _, r := range tools["qa_compile"] {
		if r.Comparison != replaySame {
			t.Errorf("qa_compile at observe: %s (%s)", r.Comparison, r.Detail)
		}
	}
	if rep.Counts[replayRefusedNow] < 3 {
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
		if r.Comparison != replaySame || !strings.Contains(r.Detail, "not posted") {
			t.Errorf("qa_report turn %d: %s (%s)", r.Turn, r.Comparison, r.Detail)
		}
	}
	if after := logLen(); after != before {
		t.Errorf("replaying %d qa_report calls posted %d entries", len(reports), after-before)
	}
	t.Logf("security run %s: %d calls, %v", secID, len(rep.Turns), rep.Counts)
	for _, r := range rep.Turns {
		if r.Comparison != replaySame {
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

// TestReplayerMapsNames: the recorded run's names and owners are rewritten
// in later arguments, longest first, and results compare after the mapping.
func TestReplayerMapsNames(t *testing.T) {
	turn := func(i int, tool, args, result string) trajectory.Turn {
		a := &trajectory.Action{Tool: tool, Args: json.RawMessage(args)}
		return trajectory.Turn{Index: i, ProposedAction: a, ExecutedAction: a, Validation: trajectory.Validation{Result: trajectory.ValidationOK}, Result: json.RawMessage(result)}
	}
	calls := []trajectory.Turn{
		turn(0, "qa_create", `{}`, `{"ok":true,"name":"qa-old-1","owner":"0xAbCdEf0000000000000000000000000000000001"}`),
		turn(1, "qa_publish", `{"name":"qa-old-1","source":"x"}`, `{"ok":false,"error":"not minted: qa-old-1"}`),
		turn(2, "qa_chain", `{"method":"eth_getBalance","params":["0xabcdef0000000000000000000000000000000001","qa-old-10"]}`, `{"ok":true}`),
	}
	r := newReplayer(calls)
	step, _ := r.Next(context.Background(), nil)
	if step.Call.Tool != "qa_create" {
		t.Fatal(step)
	}
	r.observe(fleet.TurnEvent{Index: 0, Tool: "qa_create", Verdict: fleet.VerdictOK, Result: fleet.Result{"ok": true, "name": "qa-new-1", "owner": "0x1111111111111111111111111111111111111111"}})
	step, _ = r.Next(context.Background(), nil)
	if got := string(step.Call.Args); got != `{"name":"qa-new-1","source":"x"}` {
		t.Errorf("publish args %s", got)
	}
	r.observe(fleet.TurnEvent{Index: 1, Tool: "qa_publish", Verdict: fleet.VerdictError, Result: fleet.Result{"ok": false, "error": "not minted: qa-new-1"}})
	step, _ = r.Next(context.Background(), nil)
	if got := string(step.Call.Args); got != `{"method":"eth_getBalance","params":["0x1111111111111111111111111111111111111111","qa-old-10"]}` {
		t.Errorf("chain args %s (the lowercase owner maps; qa-old-10 is another name)", got)
	}
	r.observe(fleet.TurnEvent{Index: 2, Tool: "qa_chain", Verdict: fleet.VerdictRefused, Result: fleet.Result{"ok": false, "error": "refused"}})
	if step, _ = r.Next(context.Background(), nil); !step.Done {
		t.Errorf("after the last call: %+v", step)
	}
	rows := r.finish()
	want := []string{replaySame, replaySame, replayRefusedNow}
	for i, row := range rows {
		if row.Comparison != want[i] {
			t.Errorf("row %d: %s (%s), want %s", i, row.Comparison, row.Detail, want[i])
		}
	}
	// A call the replay never reached, and a changed outcome of a tool
	// whose schema changed since the recording.
	r = newReplayer(calls)
	r.schemaChanged["qa_create"] = true
	r.Next(context.Background(), nil)
	r.observe(fleet.TurnEvent{Index: 0, Tool: "qa_create", Verdict: fleet.VerdictError, Result: fleet.Result{"ok": false, "error": "register: reverted"}})
	rows = r.finish()
	if rows[0].Comparison != replayChanged || !strings.Contains(rows[0].Detail, "verdict ok -> error") || !strings.Contains(rows[0].Detail, "schema changed") || rows[1].Comparison != replayNotReplayed || rows[2].Turn != -1 {
		t.Errorf("rows: %+v", rows)
	}
}

// TestReplayerMapsSignedInAddresses: a replayed qa_login signs in a fresh
// identity with another address; later calls naming the recorded
// identity's address (a's resource URL) name the replay's, in either case.
func TestReplayerMapsSignedInAddresses(t *testing.T) {
	turn := func(i int, tool, args, result string) trajectory.Turn {
		a := &trajectory.Action{Tool: tool, Args: json.RawMessage(args)}
		return trajectory.Turn{Index: i, ProposedAction: a, ExecutedAction: a, Validation: trajectory.Validation{Result: trajectory.ValidationOK}, Result: json.RawMessage(result)}
	}
	calls := []trajectory.Turn{
		turn(0, "qa_login", `{"identity":"a"}`, `{"ok":true,"identity":"a","address":"0xAbCdEf0000000000000000000000000000000001","status":200}`),
		turn(1, "qa_fetch", `{"url":"http://127.0.0.1:1/api/accounts/0xabcdef0000000000000000000000000000000001/settings","as":"b"}`, `{"ok":true,"status":200}`),
	}
	r := newReplayer(calls)
	r.Next(context.Background(), nil)
	r.observe(fleet.TurnEvent{Index: 0, Tool: "qa_login", Verdict: fleet.VerdictOK, Result: fleet.Result{"ok": true, "identity": "a", "address": "0x2222222222222222222222222222222222222222", "status": 200}})
	step, _ := r.Next(context.Background(), nil)
	if got := string(step.Call.Args); !strings.Contains(got, "/api/accounts/0x2222222222222222222222222222222222222222/settings") {
		t.Errorf("fetch args %s, want the replay's identity a", got)
	}
	if rows := r.finish(); rows[0].Comparison != replaySame {
		t.Errorf("the sign-in: %+v", rows[0])
	}
}

// FuzzLoadReplayable: whatever a run record file holds, loadReplayable
// returns a run with calls to replay or a usage error (exit 2), never
// panics, and never changes the file.
func FuzzLoadReplayable(f *testing.F) {
	good := `{"type":"header","run_id":"r-1","specialist":"s","harness_version":"` + harnessVersion + `","dial":"observe","budget":{"max_turns":0,"max_writes":0,"max_tokens":0,"deadline_ms":0},"tools":null,"started_at":"2026-01-01T00:00:00Z"}
{"type":"turn","index":0,"proposed_action":{"tool":"qa_fetch","args":{"url":"http://x"}},"validation":{"result":"ok","retries":0},"model_metadata":{"tokens_in":0,"tokens_out":0,"duration_ms":0},"latency_ms":1,"started_at":"2026-01-01T00:00:00Z"}
{"type":"footer","outcome":"done","final_summary":"","totals":{"turns":1,"tool_calls":0,"refusals":0,"findings":0,"tokens_in":0,"tokens_out":0,"writes":0,"duration_ms":0},"ended_at":"2026-01-01T00:00:00Z"}
`
	f.Add([]byte(good))
	f.Add([]byte(good[:len(good)-40]))
	f.Add([]byte(strings.Replace(good, harnessVersion, "other/9", 1)))
	f.Add([]byte(`{"type":"footer"}`))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		os.MkdirAll(filepath.Join(dir, trajectory.RunsDir), 0o700)
		path := trajectory.Path(dir, "r-1")
		os.WriteFile(path, data, 0o600)
		run, err := loadReplayable(dir, "r-1")
		var ee *exitError
		switch {
		case err == nil:
			if len(replayCalls(run)) == 0 || run.Footer == nil || run.Header.HarnessVersion != harnessVersion {
				t.Fatalf("accepted a record it cannot replay: %+v", run)
			}
		case !errors.As(err, &ee) || ee.code != exitConfig:
			t.Fatalf("error is not a usage error: %v", err)
		}
		if got, _ := os.ReadFile(path); !bytes.Equal(got, data) {
			t.Fatal("loadReplayable changed the file")
		}
	})
}
