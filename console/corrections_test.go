package console

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/qafleet/fleetd/fleet"
)

// withPlacesAndCorrections rewrites the fixture's report: its first row a
// behaviour folded from three places with a correction history, its third
// an accepted risk.
func withPlacesAndCorrections(t *testing.T, f *fixture) {
	t.Helper()
	now := f.report.GeneratedAt
	until := now.Add(48 * time.Hour)
	r := f.report
	r.Clusters[0].Places = []fleet.Place{
		{Place: "alice", Cluster: "aaaa1111", Count: 2, LastSeen: now},
		{Place: "bobby", Cluster: "0123456789abcdef", Count: 1, LastSeen: now},
		{Place: "carol", Cluster: "fedcba9876543210", Count: 4, LastSeen: now},
	}
	r.Clusters[0].Corrections = []fleet.CorrectionNote{
		{Entry: 8, Kind: fleet.KindUnmerge, Time: now, Ref: "2", Of: "aaaa1111", Reason: "the expiry path is <b>another</b> bug"},
	}
	r.Clusters[2].State, r.Clusters[2].StateReason = fleet.ClusterAcceptedRisk, "risk accepted at entry 7 until "+until.Format(time.RFC3339)+": admin network only"
	r.Clusters[2].Corrections = []fleet.CorrectionNote{{Entry: 7, Kind: fleet.KindAcceptedRisk, Time: now, Ref: "6", Until: &until, Reason: "admin network only"}}
	r.Totals.Resolved, r.Totals.AcceptedRisk = 0, 1
	writeJSONFile(t, filepath.Join(f.dir, "reports", latestJSON), r)
}

func TestPlacesAndCorrectionsShown(t *testing.T) {
	f := newFixture(t)
	withPlacesAndCorrections(t, f)
	home := f.do("GET", "/", "", nil).Body.String()
	for _, s := range []string{"3 places:", "alice", "×4", "accepted-risk", "admin network only"} {
		if !strings.Contains(home, s) {
			t.Errorf("the report page lacks %q", s)
		}
	}
	page := f.do("GET", "/clusters/aaaa1111", "", nil).Body.String()
	for _, s := range []string{"<h2>Places</h2>", "bobby", "<code>fedcba9876543210</code>", "<h2>Corrections</h2>", "unmerge",
		"the expiry path is &lt;b&gt;another&lt;/b&gt; bug"} {
		if !strings.Contains(page, s) {
			t.Errorf("the cluster page lacks %q", s)
		}
	}
	if strings.Contains(page, `action="/api/findings/0123456789abcdef/mark"`) {
		t.Error("an unmerge control is shown without a session")
	}
	page = f.do("GET", "/clusters/cccc3333", "", nil).Body.String()
	for _, s := range []string{"risk accepted at entry 7 until", "accepted-risk"} {
		if !strings.Contains(page, s) {
			t.Errorf("the accepted risk's page lacks %q", s)
		}
	}
	cookie, _ := f.login(t)
	page = f.do("GET", "/clusters/aaaa1111", "", map[string]string{"Cookie": cookie}).Body.String()
	for _, s := range []string{`action="/api/findings/0123456789abcdef/mark"`, `name="until"`, `name="reason"`, `value="accepted-risk"`} {
		if !strings.Contains(page, s) {
			t.Errorf("the logged-in cluster page lacks %q", s)
		}
	}
	if w := f.do("GET", "/?state=accepted-risk", "", nil); w.Code != 200 || !strings.Contains(w.Body.String(), "dead link") {
		t.Errorf("the accepted-risk filter: %d", w.Code)
	}
}

func TestMarkCorrections(t *testing.T) {
	f := newFixture(t)
	bearer := map[string]string{"Authorization": "Bearer " + testToken, "Content-Type": "application/json"}
	for _, tc := range []struct {
		path, body string
		code       int
		msg        string
	}{
		{"/api/findings/3/mark", `{"what":"accepted-risk"}`, 400, "accepted-risk needs a reason"},
		{"/api/findings/3/mark", `{"what":"false-positive","until":"720h"}`, 400, "until is only for accepted-risk"},
		{"/api/findings/3/mark", `{"what":"accepted-risk","reason":"admin only","until":"720h"}`, 200, "entry 3 marked accepted-risk until 720h"},
		{"/api/findings/0123456789abcdef/mark", `{"what":"unmerge","reason":"another bug"}`, 200, "cluster 0123456789abcdef marked unmerge"},
		{"/api/findings/4/mark", `{"what":"unmerge"}`, 200, "entry 4 marked unmerge"},
	} {
		w := f.do("POST", tc.path, tc.body, bearer)
		var m struct {
			Message string `json:"message"`
			Error   string `json:"error"`
		}
		json.Unmarshal(w.Body.Bytes(), &m)
		if w.Code != tc.code || !strings.Contains(m.Message+m.Error, tc.msg) {
			t.Errorf("%s %s: %d %s, want %d with %q", tc.path, tc.body, w.Code, w.Body, tc.code, tc.msg)
		}
	}
	want := []string{
		"mark 3 accepted-risk (admin only) until 720h by bearer token via API from 127.0.0.1",
		"mark 0123456789abcdef unmerge (another bug) by bearer token via API from 127.0.0.1",
		"mark 4 unmerge by bearer token via API from 127.0.0.1",
	}
	if got := f.controls.Calls(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("controls got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
