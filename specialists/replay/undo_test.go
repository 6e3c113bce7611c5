package replay

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/qafleet/fleetd/fleet"
)

// TestUndoWritesAsItsCreator: what a signed-in identity's POST created is
// deleted with that identity's session (as), not without one; what a
// qa_authz call lists as left on the platform (its result read back from a
// run record: JSON arrays) is in the run's summary.
func TestUndoWritesAsItsCreator(t *testing.T) {
	program := func(p *Play) {
		p.Call("qa_submit", map[string]any{"url": "http://a.test/api/notes", "method": "POST", "enctype": "json", "json": `{"text":"x"}`, "as": "a"})
		p.Call("qa_authz", map[string]any{"check": "logout", "logout_url": "http://a.test/api/auth/logout", "me_url": "http://a.test/api/me"})
		p.UndoWrites()
	}
	s := &fleet.State{RunID: "r-undo"}
	answers := []fleet.Result{
		{"ok": true, "status": 201, "created": "http://a.test/api/notes/1"},
		{"ok": true, "outcome": "not_reproduced", "left_on_platform": []any{"the accounts of fresh identities authz1l, if the sign-in at /api/auth/verify made one (qa_authz removes none)"}},
		{"ok": true, "status": 204},
	}
	var calls []fleet.Call
	for range 5 {
		step, err := Replay(s, Config{Name: "undo", Cap: 20}, program)
		if err != nil {
			t.Fatal(err)
		}
		if step.Done {
			if !strings.Contains(step.Summary, "Left on the platform: the accounts of fresh identities authz1l") {
				t.Errorf("the summary does not list what qa_authz left: %s", step.Summary)
			}
			break
		}
		calls = append(calls, *step.Call)
		s.History = append(s.History, fleet.Exchange{Call: *step.Call, Verdict: fleet.VerdictOK, Result: answers[len(calls)-1]})
	}
	if len(calls) != 3 {
		t.Fatalf("calls %v, want the POST, qa_authz and the DELETE", calls)
	}
	var del map[string]any
	json.Unmarshal(calls[2].Args, &del)
	if calls[2].Tool != "qa_submit" || del["method"] != "DELETE" || del["url"] != "http://a.test/api/notes/1" || del["as"] != "a" {
		t.Errorf("the undo sent %s %s, want qa_submit DELETE of the note as a", calls[2].Tool, calls[2].Args)
	}
}
