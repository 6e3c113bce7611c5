package qatools

import (
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/qafleet/fleetd/fleet"
)

// TestFetchMethodsAndOrigin covers qa_fetch's optional method and origin:
// the safe methods go out as asked, an Origin (and, for OPTIONS, a
// preflight's request headers) arrives, and every fence of TestFetchFences
// still holds for them: the allowlist, special addresses and redirects
// re-checked hop by hop, even when a 307 keeps the method.
func TestFetchMethodsAndOrigin(t *testing.T) {
	h := newHarness(t, fleet.Observe)
	_, reg := h.newRun("r-fetch-methods", fleet.Budget{})
	evil := "https://evil.example"
	type want struct {
		Verdict fleet.Verdict
		Status  any
		Headers map[string]string // a subset of the result's headers
		Body    string
		Err     string // substring of the error
	}
	for _, tc := range []struct {
		name string
		args map[string]any
		want want
	}{
		{"default GET", map[string]any{"url": h.web.URL + "/cors"},
			want{Verdict: fleet.VerdictOK, Status: 200, Body: "method GET"}},
		{"credentialed GET with origin", map[string]any{"url": h.web.URL + "/cors", "origin": evil},
			want{Verdict: fleet.VerdictOK, Status: 200, Body: "method GET",
				Headers: map[string]string{"access-control-allow-origin": evil, "access-control-allow-credentials": "true", "vary": "Origin"}}},
		{"HEAD", map[string]any{"url": h.web.URL + "/cors", "method": "HEAD"},
			want{Verdict: fleet.VerdictOK, Status: 200}},
		{"OPTIONS preflight", map[string]any{"url": h.web.URL + "/cors", "method": "OPTIONS", "origin": evil},
			want{Verdict: fleet.VerdictOK, Status: 204,
				Headers: map[string]string{"access-control-allow-origin": evil, "access-control-allow-methods": "POST", "access-control-allow-headers": "content-type"}}},
		{"null origin", map[string]any{"url": h.web.URL + "/cors", "origin": "null"},
			want{Verdict: fleet.VerdictOK, Status: 200, Body: "method GET", Headers: map[string]string{"access-control-allow-origin": "null"}}},
		{"POST refused by the schema", map[string]any{"url": h.web.URL + "/cors", "method": "POST"},
			want{Verdict: fleet.VerdictInvalid, Err: `"method"`}},
		{"DELETE refused by the schema", map[string]any{"url": h.web.URL + "/cors", "method": "DELETE"},
			want{Verdict: fleet.VerdictInvalid, Err: `"method"`}},
		{"origin with a path", map[string]any{"url": h.web.URL + "/cors", "origin": "https://evil.example/x"},
			want{Verdict: fleet.VerdictError, Err: "want scheme://host[:port]"}},
		{"origin with a header injection", map[string]any{"url": h.web.URL + "/cors", "origin": "https://evil.example\r\nX-Admin: 1"},
			want{Verdict: fleet.VerdictError, Err: "origin"}},
		{"origin of another scheme", map[string]any{"url": h.web.URL + "/cors", "origin": "file://x"},
			want{Verdict: fleet.VerdictError, Err: "origin"}},
		{"OPTIONS off the list", map[string]any{"url": "http://127.0.0.1:1/", "method": "OPTIONS", "origin": evil},
			want{Verdict: fleet.VerdictError, Err: "not on the fetch allowlist"}},
		{"HEAD to metadata", map[string]any{"url": "http://169.254.169.254/latest/meta-data/", "method": "HEAD"},
			want{Verdict: fleet.VerdictError, Err: "not on the fetch allowlist"}},
		{"OPTIONS redirected off the list (307 keeps the method)",
			map[string]any{"url": h.web.URL + "/redirect307?to=" + url.QueryEscape("http://169.254.169.254/"), "method": "OPTIONS", "origin": evil},
			want{Verdict: fleet.VerdictError, Err: "not on the fetch allowlist"}},
		{"HEAD redirected off the list", map[string]any{"url": h.web.URL + "/redirect?to=" + url.QueryEscape("http://127.0.0.1:1/"), "method": "HEAD"},
			want{Verdict: fleet.VerdictError, Err: "not on the fetch allowlist"}},
		{"OPTIONS redirected on the list", map[string]any{"url": h.web.URL + "/redirect307?to=" + url.QueryEscape(h.web.URL+"/cors"), "method": "OPTIONS", "origin": evil},
			want{Verdict: fleet.VerdictOK, Status: 204, Headers: map[string]string{"access-control-allow-origin": evil}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := h.call(reg, "qa_fetch", tc.args)
			if err != nil {
				t.Fatal(err)
			}
			got := want{Verdict: out.Verdict, Status: out.Result["status"], Body: str(out.Result["body"])}
			if tc.want.Err != "" {
				if !strings.Contains(out.Result.Err(), tc.want.Err) {
					t.Errorf("error %q, want it to contain %q", out.Result.Err(), tc.want.Err)
				}
				got.Err = tc.want.Err
			}
			if tc.want.Headers != nil {
				hd, _ := out.Result["headers"].(map[string]any)
				got.Headers = map[string]string{}
				for k := range tc.want.Headers {
					got.Headers[k] = str(hd[k])
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("qa_fetch %v (-want +got):\n%s\nresult: %v", tc.args, diff, out.Result)
			}
		})
	}
}

// TestCallRawBodyAndContentType covers qa_call's empty raw body and its
// content_type argument.
func TestCallRawBodyAndContentType(t *testing.T) {
	h := newHarness(t, fleet.Exercise)
	_, reg := h.newRun("r-call-ct", fleet.Budget{})
	for _, tc := range []struct {
		name   string
		args   map[string]any
		status int
		hint   string
	}{
		{"JSON by default", map[string]any{"target": "alice", "message": "hi"}, 200, "ok"},
		{"empty raw body", map[string]any{"target": "alice", "message": "", "raw_body": ""}, 500, "server_error_with_trace"},
		{"text/plain", map[string]any{"target": "alice", "message": "hi", "content_type": "text/plain"}, 415, "client_error"},
		{"form content type with a JSON body", map[string]any{"target": "alice", "message": "hi", "content_type": "application/x-www-form-urlencoded"}, 415, "client_error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := h.call(reg, "qa_call", tc.args)
			if err != nil {
				t.Fatal(err)
			}
			if out.Verdict != fleet.VerdictOK || out.Result["status"] != tc.status || out.Result["hint"] != tc.hint {
				t.Errorf("qa_call %v: %s %v, want HTTP %d hint %s", tc.args, out.Verdict, out.Result, tc.status, tc.hint)
			}
		})
	}
	out, _ := h.call(reg, "qa_call", map[string]any{"target": "a", "message": "b", "content_type": "text/plain\r\nX-Admin: 1"})
	if out.Verdict != fleet.VerdictError || !strings.Contains(out.Result.Err(), "content_type") {
		t.Errorf("content_type with CRLF: %s %v", out.Verdict, out.Result)
	}
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// TestReportFlaky: a finding marked flaky (its repro did not reproduce
// when replayed) is posted at most low, with flaky=true in its header.
func TestReportFlaky(t *testing.T) {
	h := newHarness(t, fleet.Observe)
	_, reg := h.newRun("r-flaky", fleet.Budget{})
	out, err := h.call(reg, "qa_report", map[string]any{"severity": "high", "surface": "call", "summary": "the endpoint answered 500 once", "flaky": true,
		"repro": map[string]any{"tool": "qa_call", "args": map[string]any{"target": "alice", "message": ""}}})
	if err != nil || out.Verdict != fleet.VerdictOK || out.Result["status"] != "posted" {
		t.Fatalf("qa_report: %v %s %v", err, out.Verdict, out.Result)
	}
	id, _ := out.Result["entry_id"].(uint64)
	e, err := h.env.Log.At(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	f, err := fleet.Parse(e.Text)
	if err != nil {
		t.Fatalf("parse %q: %v", e.Text, err)
	}
	if f.Severity != fleet.SeverityLow || !slices.Contains(f.Extra, fleet.Field{Key: "flaky", Value: "true"}) {
		t.Errorf("flaky finding posted as %q:\n%s", f.Severity, e.Text)
	}
}
