// Package fixer is fleetd's fix stage (DESIGN.md §10, issue 10): it takes a
// ranked work item from triage, reproduces it, writes a regression test in
// the repository's own framework, asks a model for a focused patch,
// verifies it, and opens a pull request that a human merges. After the
// merge it re-checks the repro on the new base and posts kind=resolution to
// the feedback log.
//
// # The pipeline
//
// A Job runs through small Stage values (Pipeline): Reproduce, Regression,
// Patch (which verifies every attempt) and Publish. Every stage is timed
// into Job.Timings (reproduce, regression, patch, verify, forge).
//
//   - Reproduce replays the finding's repro through a Reproducer: package
//     pipeline's runs the tool in a fresh sandbox run with the same tools
//     and fences as a probe. A repro that does not reproduce gets one
//     kind=needs-repro ref=<fp> record on the log (once per fingerprint
//     until the cluster gets a newer entry) and the job stops. A replay
//     that erred fails the job and stays in it (Job.Repro: the call's
//     error, result and what it left on the platform).
//   - Regression writes the repro's input as a regression test: when the
//     replay returned a standalone reproducer test (Reproduction.Test: a
//     generated fuzz harness's crash), that file, run by its one TestXxx
//     (ReproducerRegression); for a Go fuzz target a corpus file testdata/fuzz/<Target>/fleetd-<fp> in the
//     native "go test fuzz v1" format (the target's argument type, []byte or
//     string, is read from its source); otherwise a file by the configured
//     layout (fleet.Regression). It commits it on top of the base branch in
//     a git worktree inside the job's jail and runs just that test: it must
//     fail (fail-before). The stack frames in its output that point into
//     the repository are the grounded set.
//   - Patch, with a model configured, asks for a unified diff through the
//     existing function-calling path: one tool, propose_patch, declared to
//     the model; SDK types stay in fleet/gemini and fleet/openai. The diff
//     is refused if it touches a file outside the grounded set, a test file,
//     test data or CI configuration (CheckDiff, before git ever sees it,
//     and again on what git applied). It is applied in the worktree and
//     verified: the regression test passes (fail-to-pass) and the
//     repository's test command passes (pass-to-pass). Up to Attempts tries,
//     each shown the previous failure; tokens and the deadline come from the
//     job's budget (fleet.Meter), as for probes.
//   - Publish force-pushes fleetd/fix-<fp> and opens or updates the one PR
//     of that fingerprint through a Forge: ready when verified, draft with
//     only the failing regression test and the evidence otherwise, labels
//     fleetd and the severity, within MaxOpenPRs and MaxPRsPerHour, never
//     within Cooldown of a PR a human closed unmerged, only at dial propose.
//
// Poll is the after-merge half: it refreshes every open PR from the forge;
// a merged one gets the regression test run on the new base and, when it
// passes, one kind=resolution ref=<fp> record; when it still fails, a
// comment on the PR and the cluster stays open.
//
// # Trust
//
// Finding text (titles, repro arguments, sources) comes from a
// permissionless log and is untrusted data: it reaches the model only
// inside a quoted, labelled block, and what a patch may touch is decided by
// the test's own stack frames and fixed rules, never by the text. In PR
// titles, bodies and comments it is rendered inert (Inline, Block): no
// live @-mentions, no raw HTML, no links fleetd did not write.
//
// # No merge
//
// The Forge interface has no merge method, by design (DESIGN.md §3's
// never-list); TestForgeCannotMerge checks the interface and both backends
// (fixer/github, fixer/gitlocal).
//
// # State
//
// <data_dir>/fixer holds prs.json (one Record per fingerprint, written
// atomically; a file that does not parse is an error naming it and is
// never overwritten), repo.git (a bare clone of the repository, fetched
// before every job), jobs/<fp>/<job>.json (each job's stages, timings,
// attempts and logs) and lock (one job at a time across processes).
package fixer
