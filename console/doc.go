// Package console is the operator's web console on the daemon's HTTP
// address (daemon.http_addr): server-rendered pages for the ranked health
// report, the runs, the fleet and a live feed, the JSON endpoints behind
// them, Server-Sent Events, and the controls (dial, kill switch, run now,
// triage now, mark a finding), plus the self-contained HTML report file
// (`fleetd report --format html`).
//
// # What it reads
//
// The console is a door of the feature layer: it imports fleet and
// trajectory only, never triage or triggers (its siblings). It reads
//   - the report files triage writes (<data_dir>/reports/latest.json and the
//     dated copies in reports/history) as fleet.Report, the type triage
//     itself makes (schema fleet.ReportSchema: snake_case, fields only ever
//     added), so a field triage adds is one the console decodes;
//   - the run records (<data_dir>/runs/*.jsonl) through trajectory;
//   - the dial and kill switch through fleet.Control;
//   - everything else (log entries with their transactions, the fleet's
//     schedules, budget, outbox and chain health, the controls that need
//     the chain or the runner) through the Source and Controls interfaces
//     that cmd/fleetd fills.
//
// # Untrusted text
//
// Every string that came from the feedback log or a run record is untrusted.
// Pages are html/template with contextual escaping and no template.HTML
// anywhere; charts are SVG built from numbers; the live-update script
// (static/console.js, served as a file: no inline script) writes text with
// textContent only. Every response carries a strict Content-Security-Policy
// (script-src 'self', no inline script or style, no framing),
// X-Content-Type-Options: nosniff and Referrer-Policy: same-origin (no
// referrer leaves the console; under no-referrer browsers send Origin: null). The
// HTML report file has no script at all and a CSP meta tag that allows only
// its own inline stylesheet, by hash.
//
// # Controls and authentication
//
// Pages and GET endpoints are read-only and need no credentials. Every
// state change is a POST and needs the daemon's bearer token (the one in
// <data_dir>/keys/http.token):
//   - programs send "Authorization: Bearer TOKEN"; a browser cannot attach
//     that header to a cross-site request without a CORS preflight, which
//     the console never grants, so bearer requests need no CSRF token;
//   - browsers log in once: POST /login with the token (and an optional
//     name for the audit log) sets an HttpOnly, SameSite=Strict session
//     cookie holding a random session id (never the token). Each session
//     has its own CSRF token, embedded in every form and checked on every
//     cookie-authenticated POST (synchronizer token), and cross-site
//     requests are refused outright by Sec-Fetch-Site and Origin. Sessions
//     live in memory for 12 hours; a restart logs everyone out.
//
// When the daemon listens on a loopback address, requests whose Host is
// not a loopback name are refused (421), so a DNS-rebinding page cannot
// read the console either. Every control is recorded in audit.jsonl with
// who did it ("name via console from 127.0.0.1").
//
// # Live updates
//
// A Hub fans events out to SSE subscribers (/api/events): runs starting and
// finishing, turns, findings as the fleet's own runs post them, and
// clusters triage found new, regressed or resolved. Publishing never
// blocks: events go to a ring buffer and subscribers are woken to read
// what they have not seen; one that falls more than the ring behind gets a
// "resync" event. A client that reconnects with Last-Event-ID misses
// nothing still in the ring.
package console
