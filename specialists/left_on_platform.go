package specialists

import (
	"github.com/qafleet/fleetd/crawl"
	"github.com/qafleet/fleetd/specialists/replay"
)

// leftBy lists what a form the browser submitted may have stored, when
// its answer named nothing created: what it named (r.Created, recorded by
// the run's page-write gate) the probe's UndoWrites deletes through
// qa_submit, which deletes only what the run created.
func leftBy(p *replay.Play, pf replay.PageForm, r crawl.Rendered, canary string) {
	if r.Status >= 200 && r.Status <= 299 && len(r.Created) == 0 {
		p.LeftOnPlatform("what the form %s %s on %s stored from a browser submission, if anything (its text fields held %s-FIELD; its answer named nothing to delete)",
			pf.Form.Method, pf.Form.URL, pf.Page, canary)
	}
}
