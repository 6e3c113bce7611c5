// Package controls holds the negative controls of the fuzzing evaluation:
// the same parsers at versions with the known crashers fixed, fuzzed from
// the same seeds, so a crash any engine reports here would be a false
// positive (or a new bug, to be checked by hand). htmlfixed is
// golang.org/x/net/html at a current release. Its own module, like
// evaltarget/parsers, so the main module never depends on it.
package controls
