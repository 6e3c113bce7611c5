// Package inject holds security's injection checks. Stored judges the
// values existing names store on the pages that show them and, with the
// exercise rung, writes a canary to each metadata field of a fresh name,
// finds every place it lands (element text, attribute, URL, event handler,
// script, style, ...) and writes a payload for each place (CWE-79).
// Reflected does the same for the query and path parameters of every
// discovered URL, and tries open redirects (CWE-601), header injection
// (CWE-113) and path traversal (CWE-22).
//
// Pages are read with the x/net/html tokenizer, as a browser would, plus a
// port of its attribute scanner (which the tokenizer does not expose) and a
// small JavaScript lexer for canaries inside scripts and handlers; both are
// fuzzed (testdata/fuzz). The rules are described in package specialists
// (security) and in docs/architecture.md (Security's active probes).
package inject
