package crawl

import "time"

// Rendered is what a browser saw when it opened one page: the DOM after
// the page's scripts ran, every request the page made and what the browser
// reported on the way. The rendering crawl (a browser adapter) fills it;
// the playbooks read it. It is plain data, so a recorded one reads the same
// on every replay.
type Rendered struct {
	URL      string // the URL opened
	FinalURL string // the document's URL after redirects ("" when nothing loaded)
	Status   int    // the document's HTTP status (0 when none arrived)
	HTML     string // the rendered DOM, serialized (outerHTML of the document), capped
	// Requests are every request the page made, in order, the document's
	// own first: subresources, fetch and XHR calls, WebSocket handshakes.
	Requests []Request
	// Exceptions are uncaught JavaScript exceptions, as the console shows
	// them (message and the first frame).
	Exceptions []string
	// ConsoleErrors are console.error calls and error entries the browser
	// logged itself (a failed resource, a refused script), deduplicated.
	ConsoleErrors []string
	// CSP are Content-Security-Policy violations the browser reported:
	// the directive and the blocked URL.
	CSP []string
	// MixedContent are insecure (http:) resources an https page asked for,
	// as the browser reported them.
	MixedContent []string
	// Dialogs are the messages of alert, confirm and prompt dialogs the page
	// opened; every one was dismissed.
	Dialogs []string
	// Settled reports whether the page went quiet (no request in flight and
	// no DOM change for the quiet time) within the page budget.
	Settled bool
	// Notes say what bounded or refused the render: a page that never
	// settled, a script that kept the page busy, requests refused by the
	// allowlist, a redirect off it.
	Notes []string
	// Elapsed is the page's time, from the navigation (once the tab is
	// open) to the result: what the page budget bounds.
	Elapsed time.Duration
	// Submitted reports that a form was found and submitted (a browser's
	// Submit): then FinalURL, Status, HTML and Dialogs are the page the
	// submission led to, and Requests include the submission's.
	Submitted bool
	// Created are what the platform's answers to the page's writes (ones
	// Config.Write let through: a form's POST, a script's) name as created,
	// by CreatedURL: the run may delete them again.
	Created []string `json:",omitempty"`
}

// FormFill says which form of a page a browser submits and what it types.
type FormFill struct {
	Action string // the form's action, absolute (as crawl.Links reports it)
	Method string // GET or POST
	// Text is typed into every text field (text, search, textarea, a field
	// without a type), "{field}" replaced by the field's name; email and
	// url fields get a valid placeholder, other fields keep their values.
	Text string
}

// Request is one request a rendered page made.
type Request struct {
	URL    string
	Method string
	// Type is the browser's resource type, lowercased: document, script,
	// stylesheet, image, font, fetch, xhr, websocket, ...
	Type   string
	Status int // the HTTP status (0: no answer)
	// Failed is the browser's error for a request that got no answer
	// (net::ERR_..., or "blocked: <reason>"); "" otherwise.
	Failed string
	// Blocked reports a request the allowlist or pacing refused: it never
	// left the browser.
	Blocked bool
}

// IsAPI reports whether r is a call a script made (fetch, XHR, WebSocket)
// rather than a resource the markup named.
func (r Request) IsAPI() bool {
	return r.Type == "fetch" || r.Type == "xhr" || r.Type == "websocket" || r.Type == "eventsource"
}
