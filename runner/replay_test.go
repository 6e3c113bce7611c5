package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/trajectory"
)

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
	want := []string{ReplaySame, ReplaySame, ReplayRefusedNow}
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
	if rows[0].Comparison != ReplayChanged || !strings.Contains(rows[0].Detail, "verdict ok -> error") || !strings.Contains(rows[0].Detail, "schema changed") || rows[1].Comparison != ReplayNotReplayed || rows[2].Turn != -1 {
		t.Errorf("rows: %+v", rows)
	}
}

// FuzzLoadReplayable: whatever a run record file holds, LoadReplayable
// returns a run with calls to replay or a *NotReplayable (fleetd exits 2),
// never panics, and never changes the file.
func FuzzLoadReplayable(f *testing.F) {
	good := `{"type":"header","run_id":"r-1","specialist":"s","harness_version":"` + HarnessVersion + `","dial":"observe","budget":{"max_turns":0,"max_writes":0,"max_tokens":0,"deadline_ms":0},"tools":null,"started_at":"2026-01-01T00:00:00Z"}
{"type":"turn","index":0,"proposed_action":{"tool":"qa_fetch","args":{"url":"http://x"}},"validation":{"result":"ok","retries":0},"model_metadata":{"tokens_in":0,"tokens_out":0,"duration_ms":0},"latency_ms":1,"started_at":"2026-01-01T00:00:00Z"}
{"type":"footer","outcome":"done","final_summary":"","totals":{"turns":1,"tool_calls":0,"refusals":0,"findings":0,"tokens_in":0,"tokens_out":0,"writes":0,"duration_ms":0},"ended_at":"2026-01-01T00:00:00Z"}
`
	f.Add([]byte(good))
	f.Add([]byte(good[:len(good)-40]))
	f.Add([]byte(strings.Replace(good, HarnessVersion, "other/9", 1)))
	f.Add([]byte(`{"type":"footer"}`))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		os.MkdirAll(filepath.Join(dir, trajectory.RunsDir), 0o700)
		path := trajectory.Path(dir, "r-1")
		os.WriteFile(path, data, 0o600)
		run, err := LoadReplayable(dir, "r-1")
		var nr *NotReplayable
		switch {
		case err == nil:
			if len(ReplayCalls(run)) == 0 || run.Footer == nil || run.Header.HarnessVersion != HarnessVersion {
				t.Fatalf("accepted a record it cannot replay: %+v", run)
			}
		case !errors.As(err, &nr):
			t.Fatalf("error is not a refusal of the record: %v", err)
		}
		if got, _ := os.ReadFile(path); !bytes.Equal(got, data) {
			t.Fatal("LoadReplayable changed the file")
		}
	})
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
	if rows := r.finish(); rows[0].Comparison != ReplaySame {
		t.Errorf("the sign-in: %+v", rows[0])
	}
}
