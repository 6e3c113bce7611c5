package qatools

import (
	"fmt"

	"github.com/qafleet/fleetd/crawl"
	"github.com/qafleet/fleetd/fleet"
)

// What qa_submit's POST created, and its DELETE. A POST that creates a
// resource commonly names it: a Location header (RFC 9110 §15.3.2, 201
// Created), or the new object's own URL or id in a JSON answer. qa_submit
// reports that URL as "created" and keeps it for the run; a DELETE is sent
// only to a URL the run's own POSTs created, so a probe can remove what it
// left and nothing else (a platform's other resources are not its to
// delete).

// CreatedURL returns the URL of the resource a POST to postURL created, as
// its answer res names it, "" when it names none: crawl.CreatedURL over
// res's status, final_url, location header and body. Only a URL on the
// POST's own origin counts. It never panics on any answer (fuzzed).
func CreatedURL(postURL string, res fleet.Result) string {
	status, _ := res["status"].(int)
	final, _ := res["final_url"].(string)
	var loc string
	if h, ok := res["headers"].(map[string]any); ok {
		loc, _ = h["location"].(string)
	}
	body, _ := res["body"].(string)
	return crawl.CreatedURL(postURL, final, status, loc, body)
}

// remember keeps what a POST created, for the run's DELETE, and reserves
// the write that DELETE will spend (sandbox.Meter.Reserve): pages' own
// writes cannot take it.
func (t *tools) remember(u string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.created == nil {
		t.created = map[string]bool{}
	}
	if !t.created[u] { // new, or created again after its DELETE
		t.run.Meter.Reserve(fleet.ResWrites, 1)
	}
	t.created[u] = true
}

// undone marks u's DELETE as done (removed, or gone already): its reserved
// write is released. A second DELETE of u is still let through.
func (t *tools) undone(u string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.created[u] {
		t.created[u] = false
		t.run.Meter.Release(fleet.ResWrites, 1)
	}
}

// createdHere reports whether a POST of this run created u: one of
// qa_submit's, or a page write the run's PageWrites gate let through.
func (t *tools) createdHere(u string) bool {
	t.mu.Lock()
	_, own := t.created[u]
	t.mu.Unlock()
	return own || t.run != nil && t.run.PageWrites.createdHere(u)
}

// errNotCreated refuses a DELETE of what the run did not create.
func errNotCreated(u string) error {
	return fmt.Errorf("DELETE only of what this run's qa_submit POSTs created (their result's created URL) or its pages' allowed writes named created: %s is not one", u)
}
