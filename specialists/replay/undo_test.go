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

// TestRestoreFields: what a write changed in an identity's own resource
// is written back by that identity (PATCH: the changed fields' prior
// values; PUT: the whole prior object) and read again; a refusal, other
// values read back or no call left list the fields as left on the
// platform, by name and the resource's template, never a value.
func TestRestoreFields(t *testing.T) {
	before := map[string]json.RawMessage{"display_name": json.RawMessage(`"new user"`), "role": json.RawMessage(`"user"`), "verified": json.RawMessage(`false`)}
	after := map[string]json.RawMessage{"display_name": json.RawMessage(`"new user"`), "role": json.RawMessage(`"admin"`), "verified": json.RawMessage(`false`)}
	prior := `{"display_name":"new user","role":"user","verified":false}`
	for _, tc := range []struct {
		name    string
		method  string
		after   map[string]json.RawMessage
		cap     int
		fields  []string       // the write's; default role
		answers []fleet.Result // to the restore, then to the read
		sent    string         // the restore's body; "" for none
		ok      bool
		left    string
	}{
		{name: "patch", method: "PATCH", after: after, cap: 20, answers: []fleet.Result{{"ok": true, "status": 200}, {"ok": true, "status": 200, "body": prior}},
			sent: `{"role":"user"}`, ok: true},
		{name: "put sends the whole object", method: "PUT", after: after, cap: 20, answers: []fleet.Result{{"ok": true, "status": 200}, {"ok": true, "status": 200, "body": prior}},
			sent: prior, ok: true},
		{name: "nothing changed", method: "PATCH", after: before, cap: 20, ok: true},
		{name: "not read after the write: the field sent", method: "PATCH", after: nil, cap: 20, answers: []fleet.Result{{"ok": true, "status": 200}, {"ok": true, "status": 200, "body": prior}},
			sent: `{"role":"user"}`, ok: true},
		{name: "not read after a PUT: the whole object", method: "PUT", after: nil, cap: 20, answers: []fleet.Result{{"ok": true, "status": 200}, {"ok": true, "status": 200, "body": prior}},
			sent: prior, ok: true},
		{name: "a field the write added", method: "PATCH", cap: 20, after: map[string]json.RawMessage{"display_name": json.RawMessage(`"new user"`), "role": json.RawMessage(`"admin"`), "verified": json.RawMessage(`false`), "tier": json.RawMessage(`"gold"`)},
			fields: []string{"role", "tier"}, answers: []fleet.Result{{"ok": true, "status": 200}, {"ok": true, "status": 200, "body": `{"display_name":"new user","role":"user","tier":"gold","verified":false}`}},
			sent: `{"role":"user"}`, left: "the fields tier of /api/accounts/{address}/settings (identity b's own resource) hold what the run's PATCH wrote (restoring them: the field had no value before)"},
		{name: "refused", method: "PATCH", after: after, cap: 20, answers: []fleet.Result{{"ok": true, "status": 403}},
			sent: `{"role":"user"}`, left: "the fields role of /api/accounts/{address}/settings (identity b's own resource) hold what the run's PATCH wrote (restoring them: PATCH: HTTP 403)"},
		{name: "read back otherwise", method: "PATCH", after: after, cap: 20, answers: []fleet.Result{{"ok": true, "status": 200}, {"ok": true, "status": 200, "body": `{"display_name":"new user","role":"admin","verified":false}`}},
			sent: `{"role":"user"}`, left: "the fields role of /api/accounts/{address}/settings (identity b's own resource) hold what the run's PATCH wrote (restoring them: reading it back shows other values)"},
		{name: "read back fails", method: "PATCH", after: after, cap: 20, answers: []fleet.Result{{"ok": true, "status": 200}, {"ok": false, "error": "qa_fetch: connection refused"}},
			sent: `{"role":"user"}`, left: "(restoring them: reading it back: qa_fetch: connection refused, not the resource)"},
		{name: "no call left", method: "PATCH", after: after, cap: 2, left: "(restoring them: no call or write left)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var restored bool
			fields := tc.fields
			if fields == nil {
				fields = []string{"role"}
			}
			program := func(p *Play) {
				restored = p.RestoreFields(Restore{URL: "http://k.test/api/accounts/0xab/settings", Shown: "/api/accounts/{address}/settings", Whose: "identity b's own resource",
					Method: tc.method, As: "b", Before: before, Fields: fields}, tc.after)
			}
			s := &fleet.State{RunID: "r-restore"}
			var calls []fleet.Call
			var summary string
			for range 4 {
				step, err := Replay(s, Config{Name: "restore", Cap: tc.cap}, program)
				if err != nil {
					t.Fatal(err)
				}
				if step.Done {
					summary = step.Summary
					break
				}
				calls = append(calls, *step.Call)
				s.History = append(s.History, fleet.Exchange{Call: *step.Call, Verdict: fleet.VerdictOK, Result: tc.answers[len(calls)-1]})
			}
			if restored != tc.ok {
				t.Errorf("restored %v, want %v", restored, tc.ok)
			}
			if tc.sent == "" {
				if len(calls) != 0 {
					t.Errorf("calls %v, want none", calls)
				}
			} else {
				var w struct{ URL, Method, JSON, As string }
				json.Unmarshal(calls[0].Args, &w)
				if calls[0].Tool != "qa_submit" || w.Method != tc.method || w.As != "b" || w.URL != "http://k.test/api/accounts/0xab/settings" || w.JSON != tc.sent {
					t.Errorf("the restore sent %s %s, want qa_submit %s %s as b", calls[0].Tool, calls[0].Args, tc.method, tc.sent)
				}
				if tc.answers[0]["status"] == 200 && (len(calls) != 2 || calls[1].Tool != "qa_fetch" || !strings.Contains(string(calls[1].Args), `"as":"b"`)) {
					t.Errorf("calls %v, want the restore read back as b", calls)
				}
			}
			_, left, _ := strings.Cut(summary, "Left on the platform: ")
			if tc.left == "" && left != "" || !strings.Contains(left, tc.left) || strings.Contains(left, "admin") || strings.Contains(left, "0xab") {
				t.Errorf("left on the platform %q, want %q (field names only)", left, tc.left)
			}
		})
	}
}
