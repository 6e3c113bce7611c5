package specialists

import (
	"io"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/qafleet/fleetd/crawl"
	"github.com/qafleet/fleetd/fleet"
)

// alerts are the canary hook calls of stored markup (crawl.CanaryCall).
var alerts = regexp.MustCompile(`on(?:error|toggle)=self\.` + crawl.CanaryHook + `\?\.\('([^']*)'\)`)

// TestStoredDOMOnAName: on a chain platform (the end-to-end platform, whose
// faces the server writes with the face and bio fields unescaped and the
// title escaped), security's fresh name gets the markup canary in each
// metadata field inject.Stored wrote, and its face is rendered. A browser
// (a fake that runs the stored markup the page would run) that also puts
// the title into the page through innerHTML (flawed) must give one stored
// DOM XSS finding, for the title only: the face and bio markup the server
// itself writes is inject.Stored's finding, not a DOM-based one. With the
// title shown as text (the twin) there is no stored DOM XSS finding.
func TestStoredDOMOnAName(t *testing.T) {
	for _, flawed := range []bool{true, false} {
		pl := newPlatform(t)
		r := &fakeRenderer{fn: func(u string) (crawl.Rendered, error) {
			pu, _ := url.Parse(u)
			resp, err := pl.srv.Client().Get(pu.Scheme + "://" + pu.Host + pu.EscapedPath())
			if err != nil {
				return crawl.Rendered{}, err
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			out := crawl.Rendered{URL: u, FinalURL: u, Status: resp.StatusCode, HTML: string(b), Settled: true,
				Requests: []crawl.Request{{URL: u, Method: "GET", Type: "document", Status: resp.StatusCode}}}
			ran := string(b) // the markup the server wrote runs
			if name, ok := strings.CutPrefix(pu.Path, "/u/"); ok && flawed {
				pl.mu.Lock()
				ran += pl.meta[name]["title"] // the page's script: title.innerHTML = metadata.title
				pl.mu.Unlock()
			}
			for _, m := range alerts.FindAllStringSubmatch(ran, -1) {
				out.Dialogs = append(out.Dialogs, m[1])
			}
			return out, nil
		}}
		res, got := pl.run("security", fleet.Exercise, Options{Corpus: recipeCorpus, Renderer: r})
		if !strings.Contains(res.Summary, "the face as served holds it") {
			t.Errorf("flawed %v: no note on the server-written markup that ran:\n%s", flawed, res.Summary)
		}
		var stored []map[string]any
		for _, f := range got {
			if strings.Contains(f["summary"].(string), "Stored DOM-based XSS") {
				stored = append(stored, f)
			}
		}
		t.Logf("flawed %v: stored DOM XSS findings:%s", flawed, summaries(stored))
		switch {
		case flawed && (len(stored) != 1 || findReport(stored, `metadata field "title"`, "/u/NAME", "second write", "CWE-79") == nil || stored[0]["severity"] != "high" || stored[0]["surface"] != "dom"):
			t.Errorf("flawed: want one high stored DOM XSS finding on the title, got:%s", summaries(stored))
		case !flawed && len(stored) != 0:
			t.Errorf("twin: stored DOM XSS findings:%s", summaries(stored))
		}
		// The server-written stored XSS is still inject.Stored's.
		if findReport(got, "CWE-79", `field "bio"`, "element text") == nil {
			t.Errorf("the server-written stored XSS in bio is no longer reported:%s", summaries(got))
		}
		var published int
		for u, n := range r.count {
			if strings.Contains(u, "#qa-") {
				published += n
			}
		}
		if published == 0 || published > 2 {
			t.Errorf("flawed %v: %d renders of the fresh face after a write, want 1 or 2", flawed, published)
		}
	}
}
