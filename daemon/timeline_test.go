package daemon

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/qafleet/fleetd/trajectory"
)

// TestRunsShowFuzzTurn: a qa_fuzz turn reads as the session's figures.
func TestRunsShowFuzzTurn(t *testing.T) {
	res := json.RawMessage(`{"ok":true,"engine":"libfuzzer","execs":64000,"elapsed_ms":20000,"execs_per_sec":3200,"execs_per_cpu_sec":3350,"coverage":812,"features":2400,"corpus_size":57,"started_from":50,
		"crashers":[{"crash_state":"panic: a"},{"crash_state":"panic: a"}],"new_coverage":false,"plateau_sessions":3}`)
	line := turnLine(trajectory.Turn{Index: 4, ProposedAction: &trajectory.Action{Tool: "qa_fuzz"}, Validation: trajectory.Validation{Result: trajectory.ValidationOK}, Result: res})
	for _, want := range []string{"qa_fuzz", "engine=libfuzzer", "inputs=64000", "3200/s", "3350/CPU-s", "coverage=812", "features=2400", "corpus=57", "crashers=2 states=1", "plateau 3 sessions"} {
		if !strings.Contains(line, want) {
			t.Errorf("line lacks %q: %s", want, line)
		}
	}
}

// TestRunsShowGeneratedHarness: a generated harness's session names the
// harness; the list turn counts the generated, dropped and crashed ones;
// a judged replay says its verdict.
func TestRunsShowGeneratedHarness(t *testing.T) {
	for _, tc := range []struct {
		res  string
		want []string
	}{
		{`{"ok":true,"harness":"FuzzGet","engine":"libfuzzer","execs":900,"coverage":647,"crashers":[],"new_coverage":true}`, []string{"harness=FuzzGet", "engine=libfuzzer", "inputs=900", "coverage=647", "new coverage"}},
		{`{"ok":true,"module":"github.com/tidwall/gjson","harnesses":[{"target":"FuzzGet"},{"target":"FuzzValid"}],"dropped":[{"entry":"x"}],"harness_crashes":2}`, []string{"generated=2 dropped=1 harness_crashes=2"}},
		{`{"ok":true,"harness":"FuzzGet","outcome":"crashed","verdict":"library"}`, []string{"verdict=library"}},
	} {
		line := turnLine(trajectory.Turn{Index: 2, ProposedAction: &trajectory.Action{Tool: "qa_fuzz"}, Validation: trajectory.Validation{Result: trajectory.ValidationOK}, Result: json.RawMessage(tc.res)})
		for _, w := range tc.want {
			if !strings.Contains(line, w) {
				t.Errorf("line lacks %q: %s", w, line)
			}
		}
	}
}

// TestRunsShowLeftOnPlatform: a qa_authz turn's undone and
// left_on_platform entries are printed under it, and what was left is
// gathered again beside the footer.
func TestRunsShowLeftOnPlatform(t *testing.T) {
	res := json.RawMessage(`{"ok":true,"outcome":"reproduced","undone":["restored role of /api/accounts/{address}/settings with PATCH as authz1b"],"left_on_platform":["the accounts of fresh identities authz1b, if the sign-in at /api/auth/verify made one"]}`)
	run := &trajectory.Run{
		Records: []trajectory.Record{trajectory.Turn{Index: 1, ProposedAction: &trajectory.Action{Tool: "qa_authz"}, Validation: trajectory.Validation{Result: trajectory.ValidationOK}, Result: res}},
		Footer:  &trajectory.Footer{Outcome: trajectory.OutcomeDone, FinalSummary: "done"},
	}
	var b strings.Builder
	if err := Timeline(&b, run); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"      undone: restored role of /api/accounts/{address}/settings with PATCH as authz1b\n",
		"      left on the platform: the accounts of fresh identities authz1b, if the sign-in at /api/auth/verify made one\n",
		"LEFT ON THE PLATFORM by the calls above (1): the accounts of fresh identities authz1b, if the sign-in at /api/auth/verify made one\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("fleetd runs show lacks %q:\n%s", want, b.String())
		}
	}
}

// TestRunsShowHangVerdict: a qa_fuzz replay whose input hung says under
// its turn whose loop it was and at which frame; a turn without a hang
// says nothing of hangs.
func TestRunsShowHangVerdict(t *testing.T) {
	hung := json.RawMessage(`{"ok":true,"outcome":"hang","hang_verdict":"library","hang_why":"innermost module frame","hang_frame":"gjson.queryMatches gjson.go:1234","hang_replayed_by":"go test"}`)
	plain := json.RawMessage(`{"ok":true,"outcome":"no crash"}`)
	run := &trajectory.Run{
		Records: []trajectory.Record{
			trajectory.Turn{Index: 1, ProposedAction: &trajectory.Action{Tool: "qa_fuzz"}, Validation: trajectory.Validation{Result: trajectory.ValidationOK}, Result: hung},
			trajectory.Turn{Index: 2, ProposedAction: &trajectory.Action{Tool: "qa_fuzz"}, Validation: trajectory.Validation{Result: trajectory.ValidationOK}, Result: plain},
		},
		Footer: &trajectory.Footer{Outcome: trajectory.OutcomeDone, FinalSummary: "done"},
	}
	var b strings.Builder
	if err := Timeline(&b, run); err != nil {
		t.Fatal(err)
	}
	want := "      hang: library at gjson.queryMatches gjson.go:1234 (innermost module frame), replayed by go test\n"
	if !strings.Contains(b.String(), want) {
		t.Errorf("fleetd runs show lacks %q:\n%s", want, b.String())
	}
	if n := strings.Count(b.String(), "hang:"); n != 1 {
		t.Errorf("%d hang lines, want 1 (the turn without a hang has none):\n%s", n, b.String())
	}
}
