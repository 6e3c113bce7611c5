package console

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/trajectory"
)

const testToken = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// xss is a summary a hostile sender could post.
const xss = `<img src=x onerror=alert(1)>`

// fakeSource serves entries from a map and a fixed fleet.
type fakeSource struct {
	mu      sync.Mutex
	entries map[uint64]Entry
	fleet   Fleet
	err     error
}

func (f *fakeSource) Entries(_ context.Context, idx []uint64) ([]Entry, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	var out []Entry
	for _, i := range idx {
		if e, ok := f.entries[i]; ok {
			out = append(out, e)
		}
	}
	return out, nil
}

func (f *fakeSource) Fleet(context.Context) (Fleet, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fleet, nil
}

// fakeControls records what it was asked.
type fakeControls struct {
	mu    sync.Mutex
	calls []string
}

func (f *fakeControls) record(s string) {
	f.mu.Lock()
	f.calls = append(f.calls, s)
	f.mu.Unlock()
}

func (f *fakeControls) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakeControls) RunNow(_ context.Context, name, user string) ([]string, error) {
	var ahead []string
	switch name {
	case "smoke":
	case "fuzz":
		ahead = []string{"perf", "ux"} // their starts wait for a slot
	case "busy":
		return nil, fmt.Errorf("%w: busy: already running", ErrNotStarted)
	default:
		return nil, fmt.Errorf("%w: no specialist %q", ErrBadRequest, name)
	}
	f.record("run " + name + " by " + user)
	return ahead, nil
}

func (f *fakeControls) TriageNow(_ context.Context, user string) error {
	f.record("triage by " + user)
	return nil
}

func (f *fakeControls) Mark(_ context.Context, req MarkRequest, user string) (MarkResult, error) {
	index, what := req.Ref, req.What
	if (strings.Trim(index, "0123456789") != "" || index == "") && !(what == "unmerge" && len(index) == 16) {
		return MarkResult{}, fmt.Errorf("%w: mark: index %q: not an entry index", ErrBadRequest, index)
	}
	if req.Reason != "" {
		what += " (" + req.Reason + ")"
	}
	if req.Until != "" {
		what += " until " + req.Until
	}
	f.record("mark " + index + " " + what + " by " + user)
	return MarkResult{Index: 99, Tx: "0xabc", Text: "qa/v1 ..."}, nil
}

// fixture is a data dir with a report, its history and one run record,
// and a Console over it.
type fixture struct {
	dir      string
	c        *Console
	src      *fakeSource
	controls *fakeControls
	control  *fleet.Control
	report   fleet.Report
	runID    string
}

func testReport(now time.Time) fleet.Report {
	corr := uint64(7)
	return fleet.Report{
		Schema: 1, GeneratedAt: now, Head: 12, Block: 40,
		Totals: fleet.ReportTotals{Entries: 12, Findings: 10, Clusters: 3, Open: 2, Resolved: 1, Untrusted: 1},
		Clusters: []fleet.Cluster{
			{Rank: 1, ID: "aaaa1111", Score: 48, Severity: fleet.SeverityCritical, Surface: fleet.SurfaceCompiler, Title: "compile panic on enum E{}", State: fleet.ClusterOpen, Trusted: true, Count: 3, Runs: 2, Sources: []string{"qa-fuzz"}, FirstSeen: now.Add(-time.Hour), LastSeen: now.Add(-time.Minute), Repro: &fleet.Repro{Tool: "qa_compile", Args: json.RawMessage(`{"source":"enum E{}"}`)}, Entries: []uint64{1, 4},
				Cause: &fleet.Cause{Entry: 9, Commit: "3f2a9c1d0e8b7a6f5e4d3c2b1a0f9e8d7c6b5a49", Subject: "simplify <b>enum</b> lowering", Date: now.Add(-48 * time.Hour), Span: 12}},
			{Rank: 2, ID: "bbbb2222", Score: 2, Severity: fleet.SeverityHigh, Surface: fleet.SurfaceFace, Title: xss, State: fleet.ClusterOpen, Trusted: false, Count: 1, Runs: 1, Sources: []string{"0x00000000000000000000000000000000000000bb"}, FirstSeen: now, LastSeen: now, Entries: []uint64{5}},
			{Rank: 3, ID: "cccc3333", Score: 1, Severity: fleet.SeverityLow, Surface: fleet.SurfaceDocs, Title: "dead link in llms.txt", State: fleet.ClusterResolved, Trusted: true, Count: 1, Runs: 1, Sources: []string{"qa-ux"}, FirstSeen: now, LastSeen: now, Entries: []uint64{6}, Correction: &corr},
		},
	}
}

func writeJSONFile(tb testing.TB, path string, v any) {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		tb.Fatal(err)
	}
}

func newFixture(tb testing.TB) *fixture {
	tb.Helper()
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	f := &fixture{dir: tb.TempDir(), controls: &fakeControls{}, runID: "r-20261124-0001"}
	f.report = testReport(now)
	writeJSONFile(tb, filepath.Join(f.dir, "reports", latestJSON), f.report)
	for i := range 3 {
		h := testReport(now.Add(time.Duration(i-3) * time.Hour))
		h.Clusters[0].Count = i + 1
		h.Totals.Open = 2
		writeJSONFile(tb, filepath.Join(f.dir, "reports", historyDir, h.GeneratedAt.Format(historyLayout)+".json"), h)
	}
	w, err := trajectory.Create(f.dir, f.runID, trajectory.Header{RunID: f.runID, Specialist: "fuzz", Goal: "fuzz the compiler", Dial: "observe", StartedAt: now})
	if err != nil {
		tb.Fatal(err)
	}
	if err := w.WriteTurn(trajectory.Turn{Index: 0, ProposedAction: &trajectory.Action{Tool: "qa_compile", Args: json.RawMessage(`{"source":"` + strings.ReplaceAll(xss, `"`, `'`) + `"}`)},
		ExecutedAction: &trajectory.Action{Tool: "qa_compile"}, Validation: trajectory.Validation{Result: "ok"}, Result: map[string]any{"ok": true, "outcome": "crashed"}, StartedAt: now}); err != nil {
		tb.Fatal(err)
	}
	if err := w.WriteTurn(trajectory.Turn{Index: 1, ProposedAction: &trajectory.Action{Tool: "qa_publish", Args: json.RawMessage(`{}`)},
		Validation: trajectory.Validation{Result: "refused", Reason: "refused: needs dial exercise, dial is observe"}, StartedAt: now}); err != nil {
		tb.Fatal(err)
	}
	if err := w.Close(trajectory.Footer{Outcome: trajectory.OutcomeDone, FinalSummary: "one crash", Totals: trajectory.Totals{Turns: 2, Findings: 1}, EndedAt: now.Add(time.Second)}); err != nil {
		tb.Fatal(err)
	}
	fleetKey := "0x00000000000000000000000000000000000000aa"
	f.src = &fakeSource{entries: map[uint64]Entry{
		1: {Index: 1, Sender: fleetKey, Trusted: true, Time: now, Text: "qa/v1 source=qa-fuzz sev=critical surface=compiler run=" + f.runID + "\ncompile panic on enum E{}", Tx: "0x" + strings.Repeat("1", 64), Block: 10},
		4: {Index: 4, Sender: fleetKey, Trusted: true, Time: now, Text: "qa/v1 source=qa-fuzz sev=critical surface=compiler run=r-gone\ncompile panic on enum E{}"},
		5: {Index: 5, Sender: "0x00000000000000000000000000000000000000bb", Time: now, Text: "qa/v1 source=evil sev=high surface=face\n" + xss},
		7: {Index: 7, Sender: fleetKey, Trusted: true, Time: now, Text: "qa/v1 source=qa-operator sev=info surface=fleet kind=resolution ref=6"},
	}, fleet: Fleet{Specialists: []Specialist{{Name: "fuzz", Trigger: "continuous"}, {Name: "smoke", Trigger: "every 20s"}}, Triage: true,
		Chain: ChainHealth{RPC: "http://127.0.0.1:1", OK: true, Head: 40}}}
	f.control = fleet.NewControl(f.dir)
	c, err := New(Config{ReportsDir: filepath.Join(f.dir, "reports"), RunsDir: filepath.Join(f.dir, trajectory.RunsDir),
		Control: f.control, Source: f.src, Controls: f.controls, Token: testToken, Loopback: true, Heartbeat: time.Hour,
		Now: func() time.Time { return now.Add(2 * time.Minute) }})
	if err != nil {
		tb.Fatal(err)
	}
	f.c = c
	tb.Cleanup(c.Close)
	return f
}

// do serves one request in memory.
func (f *fixture) do(method, target, body string, hdr map[string]string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, target, strings.NewReader(body))
	r.Host = "127.0.0.1:8787"
	r.RemoteAddr = "127.0.0.1:40000"
	if body != "" {
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	f.c.ServeHTTP(w, r)
	return w
}

// login logs in and returns the session cookie and its CSRF token.
func (f *fixture) login(tb testing.TB) (cookie, csrf string) {
	tb.Helper()
	w := f.do("POST", "/login", url.Values{"token": {testToken}, "name": {"alice"}, "back": {"/fleet"}}.Encode(), map[string]string{"Sec-Fetch-Site": "same-origin"})
	if w.Code != http.StatusSeeOther {
		tb.Fatalf("login: %d %s", w.Code, w.Body)
	}
	for _, c := range w.Result().Cookies() {
		if c.Name == sessionCookie {
			cookie = c.Name + "=" + c.Value
		}
	}
	page := f.do("GET", "/fleet", "", map[string]string{"Cookie": cookie}).Body.String()
	i := strings.Index(page, `name="csrf" value="`)
	if cookie == "" || i < 0 {
		tb.Fatalf("no session cookie or csrf field after login")
	}
	rest := page[i+len(`name="csrf" value="`):]
	return cookie, rest[:strings.IndexByte(rest, '"')]
}
