// Package docclaims reads what API and agent docs promise about endpoints:
// the method and URL, and what the answer will be (content type, a success
// status, top-level response fields), each with the doc line that says so,
// so that a playbook can check every promise against the live endpoint and
// quote the line a broken one came from.
//
// It reads the styles docs are written in, not one phrasing: "METHOD
// /path" in code blocks, code spans, bullets and prose ("send a GET request
// to /x", "the `/x` endpoint returns ..."), table rows with method and path
// cells (and typed columns: returns, content type, status, fields), curl
// examples (-X, -d/--data/-F imply POST, -I HEAD) with their output, JSON
// response examples after a response cue or a "Response:" label, response
// field tables, and HTML docs through their rendered text. Request bodies
// are never taken for promises about the answer.
//
// Like crawl, it is pure and fetches nothing; it is a leaf (stdlib and
// crawl only) so it is fuzzed and benchmarked on its own.
package docclaims
