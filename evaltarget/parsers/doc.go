// Package parsers holds fuzzing evaluation targets that are not the
// testbed: real-world parsers pinned at old versions with known public
// crashers, each packaged twice, as a command that parses one file (a
// compiler-style argv for the built-in engine and AFL++) and as a Go
// package with a native fuzz target (for the coverage-guided engine).
//
//   - htmlparse: golang.org/x/net/html at 3673e40ba225 (2018-07-24), before
//     the fixes of golang/go#27016 (`<template><object>` and similar
//     nestings: a nil pointer dereference in (*parser).parseCurrentToken).
//   - mdparse: github.com/russross/blackfriday/v2 v2.1.0 (its last
//     release), with the index-out-of-range in scanLinkRef of
//     russross/blackfriday#695 (`[0000000]:<`).
//
// This is its own module so the main module never depends on these old
// versions; `go test ./...` and `go vet ./...` at the repository root skip
// it. The evaluation that fuzzes them is fuzzing/eval_test.go (build tag
// fuzzeval; see BENCHMARKS.md for the command).
package parsers
