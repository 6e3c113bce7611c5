// Package harness fuzzes Go repositories that ship no fuzz target: it
// lists the exported functions and methods an engine can drive, ranks
// them by how likely they parse outside input, writes native Go fuzz
// targets for them into a scratch copy of the module, keeps the ones that
// compile, and judges the crashes the engines find: a library bug or a
// misuse the harness made.
//
// Entry points (Discover). With go/packages and go/types every exported
// function and method of the module's non-main packages is considered. One
// is drivable when each parameter is a leaf (string, []byte, io.Reader,
// bool, a sized integer or float, or a named type over one of those), a
// slice of leaves (variadic included), a struct (or pointer to one) whose
// exported fields are leaves, or a value a constructor of the module makes
// from leaves (a function returning that type, with or without an error).
// A method's receiver always comes from such a constructor; when the type
// has none its zero value is used and the entry is marked ZeroRecv (a nil
// dereference in it is then the harness's misuse, not a bug). A method
// whose name parses, on a type with a constructor, also gets a chained
// entry (construct, configure, parse; Entry.Chain): up to two of the
// type's configuring methods (pointer receiver, a Set, Enable, Disable,
// Use or Allow name, one or two leaf arguments, no result or an error)
// are called on the receiver first, from fuzz arguments of their own. go-fuzz style
// `func Fuzz(data []byte) int` functions (the gofuzz build constraint
// dropped in the scratch copy) and existing `FuzzXxx(*testing.F)` targets
// are entries too. Names that reach outside the process (File, Dir, FS,
// Path, Open, Exec, Remove, Dial, Listen, Serve, URL, Env) are left out,
// and so are functions and constructors with a parameter named as a file,
// an address or a command line (configFile, dir, fsys, url, addr, host,
// cmd): their input goes to the file system, the network or another
// program, not to a parser. The rank (Entry.Score, reasons in Entry.Why): names that
// parse (Parse, Unmarshal, Decode, Read, Load, Unescape, Lex, Scan,
// Compile, Get, Validate, ...FromBytes), a string/[]byte/io.Reader
// parameter, how many of the module's functions it reaches (a static call
// graph over the syntax) and whether the package's tests call it.
//
// Harnesses (Generate). One package per target package under
// fleetdharness/<name>/ in the module copy, holding harness_test.go with
// one FuzzXxx per entry. Each fuzz function takes one fuzz argument per
// leaf, so both engines see the same layout: go test -fuzz mutates each
// argument on its own; libFuzzer's harness (fuzzing/libfuzzer_harness.go)
// reads them from one input in order, a string or []byte as a 4-byte
// little-endian length and that many bytes (the last one takes the rest,
// so a one-argument target sees the raw input and the dictionary and
// comparison feedback apply unchanged), a bool as one byte, numbers as
// their size in little-endian bytes, missing bytes as zero. A slice of
// leaves is one []byte fuzz argument decoded with the same layout, element
// after element, at most MaxElems. A struct's exported leaf fields are one
// fuzz argument each, in field order. Seeds (f.Add) come from the
// package's tests: the constant arguments of calls to the entry, string
// literals, and the files under testdata/. Targets that do not compile are
// dropped with the compiler's message (Set.Dropped).
//
// Crashes (Judge). A crash is the library's when it reproduces and its
// innermost frame outside the runtime and the standard library lies in the
// target module, outside the harness; and it is not a misuse: a nil
// dereference in an entry whose receiver was a zero value (the constructor
// skipped) or whose argument is a struct literal leaving nil fields
// (ZeroArg), an explicit panic the entry's doc comment promises, or an
// explicit panic in an internal package the harness called directly. The
// rest are harness crashes: counted, and their entries dropped for later
// runs (Memory). A library crash carries a standalone _test.go
// (Reproducer): the harness's body with the input as literals, which
// fails on the buggy revision and passes once it is fixed.
//
// With a model (Authored): an Author (a model behind a function) writes
// a whole harness file for an entry; the file is checked (package, the
// target's import, no import that reaches outside the process, an f.Fuzz
// over types the engines feed) and compiled, and the refusal or the
// compiler's output goes back to the Author until it compiles or the
// attempts run out: the OSS-Fuzz-gen loop. A kept one is a KindModel
// entry whose crashes are judged by the same rules; its reproducer is the
// model's file run once on the input, *testing.F replaced by a stand-in
// whose Fuzz calls the fuzz function with the input's values.
//
// It imports fuzzing (the crash-state reader) and the standard library,
// and golang.org/x/tools/go/packages (the load of a module with types, the
// field's way to do it) and go/ast/astutil (the reproducer's rewrite).
package harness
