package specialists

// The evaluation of the tricks learned from the target (issue 23, item 5)
// on fixtures/tricks ("Quarry"): identity names that only its docs give,
// and a form whose field it reflects. The security playbook runs through
// the real loop at exercise with the test-local HTTP tools, no browser and
// no chain. The flawed platform must yield one finding per planted flaw;
// its correct twin nothing at high or above:
//
//	go test -run 'TestEvalTricks' -v ./specialists  (Rendered: with Chromium)

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/qafleet/fleetd/fixtures/tricks"
	"github.com/qafleet/fleetd/fixtures/twin"
	"github.com/qafleet/fleetd/fleet"
)

// tricksFlaws are the flaws fixtures/tricks/README.md lists.
var tricksFlaws = []plantedFlaw{
	{"spoofed identity: a header named only in the docs", []string{"call"}, []string{"identity header", "X-Quarry-Principal: admin", "learned from", "/help/agents.md"}, fleet.SeverityHigh},
	// Refused (ignored) with admin or 1: only the owner's address the
	// snippet's page shows makes the difference (issue 33).
	{"spoofed identity: a header accepted only with the platform's own identity", []string{"call"}, []string{"identity header", "X-Quarry-Account: " + tricks.Owners["ember"], "the platform itself uses", "/s/ember"}, fleet.SeverityHigh},
	{"spoofed identity: a body field named only in the docs", []string{"call"}, []string{"request body field", `"on_behalf_of"`, "learned from", "/help/agents.md"}, fleet.SeverityHigh},
	{"spoofed identity: a query parameter named only in a response", []string{"web"}, []string{"/api/drafts", "query parameter", "member=admin", "learned from a JSON field"}, fleet.SeverityHigh},
	// Medium, not high: every page carries a CSP without 'unsafe-inline',
	// which limits the impact (the finding says so).
	{"reflected XSS through a form field", []string{"web"}, []string{"/lookup", "shelf", "CWE-79"}, fleet.SeverityMedium},
	{"reflected XSS through a POST form (multipart)", []string{"web"}, []string{"through the form POST", "/suggest", `field "title"`, "CWE-79"}, fleet.SeverityMedium},
}

func runTricks(t *testing.T, mode twin.Mode, render bool) []map[string]any {
	t.Helper()
	app := tricks.Serve(mode)
	t.Cleanup(app.Close)
	tg := app.Target()
	client := &http.Client{Timeout: 5 * time.Second}
	var count writeCount
	tools := httpToolsCounted(tg, client, client, evalWrites, &count)

	opts := Options{}
	if render {
		b, err := evalBrowser(mustChromium(t), tg, fleet.Exercise, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		opts.Renderer = b
	}
	res, got := runLoop(t, "security", fleet.Exercise, tg, tools, opts)
	// The POST form was submitted over HTTP, with or without a browser:
	// no note names it as left out.
	if strings.Contains(res.Summary, "not submitted") {
		t.Errorf("the summary names a form as not submitted:\n%s", res.Summary)
	}
	// Writes: one submission with canaries, one payload per place the
	// title landed, one replay of the finding's repro; within the budget.
	t.Logf("%s (rendering %v): qa_submit sent %d request(s) of a budget of %d: %v; %d tool calls in all",
		mode, render, count.writes, evalWrites, count.urls, res.Totals.ToolCalls)
	if count.writes == 0 || count.writes > 2+refLandingsMax {
		t.Errorf("qa_submit sent %d requests, want 1 to %d", count.writes, 2+refLandingsMax)
	}
	for _, u := range count.urls {
		if u != "POST "+app.URL()+"/suggest" {
			t.Errorf("qa_submit sent %s, want only the form's action", u)
		}
	}
	return got
}

// refLandingsMax is inject's bound on the places a field's payloads try.
const refLandingsMax = 3

func TestEvalTricks(t *testing.T) { evalTricks(t, false) }

// TestEvalTricksRendered is the same with the rendering crawl on
// (Chromium): the same recall, nothing at high or above on the twin.
func TestEvalTricksRendered(t *testing.T) { evalTricks(t, true) }

func evalTricks(t *testing.T, render bool) {
	if testing.Short() {
		t.Skip("runs the security playbook against two platforms")
	}
	var table strings.Builder
	fmt.Fprintf(&table, "\n| class | planted | found | severity |\n| --- | --- | --- | --- |\n")
	flawed := runTricks(t, twin.Flawed, render)
	used := make([]bool, len(flawed))
	found := 0
	for _, fl := range tricksFlaws {
		i := slices.IndexFunc(flawed, func(f map[string]any) bool { return matches(f, fl) })
		sev := "—"
		if i >= 0 {
			used[i], found = true, found+1
			sev = fmt.Sprint(flawed[i]["severity"])
			if fleet.Severity(sev).Rank() < fl.minSev.Rank() {
				t.Errorf("%s found at %s, want at least %s", fl.class, sev, fl.minSev)
			}
		} else {
			t.Errorf("missed: %s (%v %v)", fl.class, fl.surfaces, fl.words)
		}
		fmt.Fprintf(&table, "| %s | 1 | %d | %s |\n", fl.class, map[bool]int{true: 1, false: 0}[i >= 0], sev)
	}
	var extra []map[string]any
	for i, f := range flawed {
		if !used[i] {
			extra = append(extra, f)
		}
	}
	correct := runTricks(t, twin.Correct, render)
	high := func(fs []map[string]any) int {
		n := 0
		for _, f := range fs {
			if fleet.Severity(fmt.Sprint(f["severity"])).Rank() >= fleet.SeverityHigh.Rank() {
				n++
			}
		}
		return n
	}
	fmt.Fprintf(&table, "\nrecall %d/%d; findings not matching a planted flaw on the flawed platform: %d (%d at high or above); findings on the correct twin: %d (%d at high or above)\n",
		found, len(tricksFlaws), len(extra), high(extra), len(correct), high(correct))
	t.Log(table.String())
	if high(extra) > 0 {
		t.Errorf("findings at high or above on the flawed platform that match no planted flaw:%s", summaries(extra))
	}
	if high(correct) > 0 {
		t.Errorf("findings at high or above on the correct twin (false positives):%s", summaries(correct))
	}
}

// TestPostFormsWithinWriteBudget: with a write budget of 2, the form
// submission over HTTP sends one request (it keeps one write spare, so
// the budget is reached, never crossed: a write past it would end the run,
// which runLoop fails), tries no payload, and the run ends done.
func TestPostFormsWithinWriteBudget(t *testing.T) {
	app := tricks.Serve(twin.Flawed)
	t.Cleanup(app.Close)
	tg := app.Target()
	client := &http.Client{Timeout: 5 * time.Second}
	var count writeCount
	_, got := runLoop(t, "security", fleet.Exercise, tg, httpToolsCounted(tg, client, client, 2, &count), Options{})
	if count.writes != 1 {
		t.Errorf("qa_submit sent %d requests under a budget of 2, want 1: %v", count.writes, count.urls)
	}
	if f := findReport(got, "through the form POST"); f != nil {
		t.Errorf("a payload was tried past the spare write: %v", f["summary"])
	}
}
