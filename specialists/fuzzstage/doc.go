// Package fuzzstage is the fuzz playbook's program (Run) and its stages:
// the call-endpoint grammar (malformed requests, one finding per distinct
// behaviour), compiler fuzzing (seeds, one structure-aware mutation at a
// time, engine sessions through qa_fuzz, stacked random mutations until the
// cap), crashes and hangs minimized by delta debugging (Minimize), and the
// Go fuzz target of the target's repository. The stages are described in
// package specialists (fuzz).
package fuzzstage
