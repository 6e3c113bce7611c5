package specialists

import (
	"github.com/qafleet/fleetd/crawl"
	"github.com/qafleet/fleetd/specialists/probe"
)

// leftBy lists what a form the browser submitted may have stored: the
// browser's submission is no qa_submit POST, so no DELETE of fleetd's may
// remove it (qa_submit deletes only what its own POSTs created).
func leftBy(p *probe.Probe, pf probe.PageForm, r crawl.Rendered, canary string) {
	if r.Status >= 200 && r.Status <= 299 {
		p.LeftOnPlatform("what the form %s %s on %s stored from a browser submission, if anything (its text fields held %s-FIELD; fleetd deletes only what qa_submit created)",
			pf.Form.Method, pf.Form.URL, pf.Page, canary)
	}
}
