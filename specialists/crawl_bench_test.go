package specialists

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/qafleet/fleetd/fleet"
)

// crawlWorld is a synthetic platform of many linked pages: an index
// linking 60 pages, each linking five others, a docs page with claims.
func crawlWorld() *world {
	return &world{dial: fleet.Observe, handlers: map[string]func(map[string]any) fleet.Result{
		"qa_fetch": func(a map[string]any) fleet.Result {
			u := a["url"].(string)
			var b strings.Builder
			b.WriteString("<!doctype html><html><body>")
			for i := range 60 {
				// Distinct templates: letters, not numbers.
				fmt.Fprintf(&b, `<a href="/section-%c%c/page">p</a> `, 'a'+i/26, 'a'+i%26)
			}
			b.WriteString(strings.Repeat("<p>Lorem ipsum dolor sit amet, consectetur adipiscing elit.</p>", 40))
			b.WriteString("</body></html>")
			if strings.HasSuffix(u, "llms.txt") {
				return fetchOK("# Docs\n\n- `GET /api/items` returns JSON with fields `items` and `next`.\n- [Guide](/guide.md)\n", map[string]any{"content-type": "text/plain"})
			}
			return fetchOK(b.String(), map[string]any{"content-type": "text/html", "content-security-policy": "default-src 'self'",
				"x-content-type-options": "nosniff", "x-frame-options": "DENY"})
		},
	}}
}

// BenchmarkUXReplay measures one Next of the ux playbook at the end of a
// run that crawled 40 pages: the program replays from the start over the
// whole history (every body's links and claims come from the memo).
func BenchmarkUXReplay(b *testing.B) {
	m, err := New("ux", Options{})
	if err != nil {
		b.Fatal(err)
	}
	w := crawlWorld()
	st := fleet.State{RunID: "r-bench", Target: testTarget(), Tools: toolList("qa_fetch", "qa_report")}
	ctx := context.Background()
	for range 200 {
		step, err := m.Next(ctx, &st)
		if err != nil {
			b.Fatal(err)
		}
		if step.Done {
			break
		}
		st.History = append(st.History, w.answer(*step.Call))
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Next(ctx, &st); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(st.History)), "calls")
}
