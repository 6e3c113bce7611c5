// Package labelgen generates labelled feedback logs for evaluating triage,
// reads and writes them as JSON Lines, and scores a clustering and ranking
// against their labels (pairwise and B-cubed precision and recall, NDCG@k).
//
// The generator simulates a fleet of probes reporting a catalogue of bugs
// over weeks of scheduled runs, and makes it hard on purpose: the same bug
// is worded differently per probe and run (synonyms, word order, case,
// whitespace, punctuation), its repro JSON comes with keys in any order and
// fresh literals (sandbox names, numbers, hex, addresses), probes get stuck
// in loops and post hundreds of copies, humans post free-form noise and
// real bugs in their own words, an attacker floods a fake critical finding,
// copies real ones, forges corrections and tries to bridge clusters, and
// distinct bugs share most of their words (the same construct with another
// problem, the same problem on another construct or surface). Labels come
// from the simulation, not from triage; priorities apply the documented
// default weights to the true counts, so NDCG measures how far noise,
// spam, forgery and split or merged clusters pull the ranking away from it.
//
// The package imports triage (a subpackage may import its parent), so the
// evaluation and the million-entry benchmarks of triage live in its tests.
package labelgen
