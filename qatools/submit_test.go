package qatools

import (
	"net/url"
	"strings"
	"testing"

	"github.com/qafleet/fleetd/fleet"
)

// TestSubmit covers qa_submit: each encoding arrives as the server parses
// it, every refusal names what was wrong and spends no write, each request
// sent spends one write from the run's meter (writes_left says what is
// left, and the call past the budget ends the run), qa_fetch's fences hold
// (the allowlist, redirects re-checked hop by hop), and the observe rung
// refuses it.
func TestSubmit(t *testing.T) {
	h := newHarness(t, fleet.Exercise)
	run, reg := h.newRun("r-submit", fleet.Budget{MaxWrites: 7})
	echo := h.web.URL + "/echo"
	for _, tc := range []struct {
		name    string
		args    map[string]any
		verdict fleet.Verdict
		want    string // substring of the body, or of the error
		spent   uint64 // writes used after the call
	}{
		{"form by default", map[string]any{"url": echo, "fields": map[string]any{"b": "<x>&y", "a": "1"}},
			fleet.VerdictOK, "POST application/x-www-form-urlencoded a=1&b=%3Cx%3E%26y", 1},
		{"multipart PUT", map[string]any{"url": echo, "method": "PUT", "enctype": "multipart", "fields": map[string]any{"note": "hi there"}},
			fleet.VerdictOK, "PUT multipart/form-data note=hi+there", 2},
		{"json PATCH", map[string]any{"url": echo, "method": "PATCH", "enctype": "json", "json": `{"bio":"<b>"}`},
			fleet.VerdictOK, `PATCH application/json {"bio":"<b>"}`, 3},
		{"invalid json", map[string]any{"url": echo, "enctype": "json", "json": `{"bio":`},
			fleet.VerdictError, "not a valid JSON value", 3},
		{"json with fields", map[string]any{"url": echo, "enctype": "json", "json": `{}`, "fields": map[string]any{"a": "1"}},
			fleet.VerdictError, "not fields", 3},
		{"form with json", map[string]any{"url": echo, "json": `{}`},
			fleet.VerdictError, "a form sends fields", 3},
		{"off the list", map[string]any{"url": "http://127.0.0.1:1/echo", "fields": map[string]any{"a": "1"}},
			fleet.VerdictError, "not on the fetch allowlist", 3},
		{"GET refused by the schema", map[string]any{"url": echo, "method": "GET"},
			fleet.VerdictInvalid, `"method"`, 3},
		{"DELETE of what the run did not create", map[string]any{"url": h.web.URL + "/items/7", "method": "DELETE"},
			fleet.VerdictError, "only of what this run's qa_submit POSTs created", 3},
		{"redirected off the list (307 keeps the body)",
			map[string]any{"url": h.web.URL + "/redirect307?to=" + url.QueryEscape("http://169.254.169.254/"), "fields": map[string]any{"a": "1"}},
			fleet.VerdictError, "not on the fetch allowlist", 4},
		{"redirected on the list", map[string]any{"url": h.web.URL + "/redirect307?to=" + url.QueryEscape(echo), "fields": map[string]any{"a": "2"}},
			fleet.VerdictOK, "POST application/x-www-form-urlencoded a=2", 5},
		{"a POST that creates", map[string]any{"url": h.web.URL + "/items", "fields": map[string]any{"a": "3"}},
			fleet.VerdictOK, "", 6},
		{"DELETE with a body", map[string]any{"url": h.web.URL + "/items/7", "method": "DELETE", "fields": map[string]any{"a": "1"}},
			fleet.VerdictError, "sends no body", 6},
		{"DELETE of what it created", map[string]any{"url": h.web.URL + "/items/7", "method": "DELETE"},
			fleet.VerdictOK, "DELETE /items/7", 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := h.call(reg, "qa_submit", tc.args)
			if err != nil {
				t.Fatal(err)
			}
			got := str(out.Result["body"])
			if out.Verdict != fleet.VerdictOK {
				got = out.Result.Err()
			}
			if out.Verdict != tc.verdict || !strings.Contains(got, tc.want) {
				t.Errorf("qa_submit %v: %s %q, want %s containing %q", tc.args, out.Verdict, got, tc.verdict, tc.want)
			}
			if used := run.Meter.Used(fleet.ResWrites); used != tc.spent {
				t.Errorf("writes used %d, want %d", used, tc.spent)
			}
			if out.Verdict == fleet.VerdictOK && out.Result["writes_left"] != uint64(7-tc.spent) {
				t.Errorf("writes_left %v, want %d", out.Result["writes_left"], 7-tc.spent)
			}
			if tc.name == "a POST that creates" && out.Result["created"] != h.web.URL+"/items/7" {
				t.Errorf("created %v, want the Location", out.Result["created"])
			}
		})
	}
	// The budget is spent: the next write ends the run, nothing is sent.
	if _, err := h.call(reg, "qa_submit", map[string]any{"url": echo, "fields": map[string]any{"a": "1"}}); err == nil {
		t.Error("a qa_submit past the write budget did not end the run")
	}
	h.setDial(fleet.Observe)
	out, err := h.call(reg, "qa_submit", map[string]any{"url": echo})
	if err != nil || out.Verdict != fleet.VerdictRefused {
		t.Errorf("qa_submit at observe: %s %v %v, want refused", out.Verdict, out.Result, err)
	}
}
