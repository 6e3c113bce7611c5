// Package compiler is the testbed's compiler for TinyLang (.tl), a tiny
// dynamically typed language, into a small deterministic bytecode. It is a
// self-contained, standard-library-only package so that fleetd's fix stage can
// treat it as a repository to repair.
//
// THIS PACKAGE IS DELIBERATELY FLAWED. It is part of fleetd's testbed, a
// sample platform in the spirit of OWASP Juice Shop, and carries planted bugs
// for the fleet's fuzz and perf specialists to find (testbed/README.md lists
// them): a panic, a hang and super-linear compile time. Do not use it for
// anything else.
//
// # Language
//
//	program = { stmt } .
//	stmt    = "let" ident "=" expr ";"            (declare in the current block)
//	        | ident "=" expr ";"                  (assign a declared variable)
//	        | "fn" ident "(" [ idents ] ")" block (top level only; hoisted)
//	        | "enum" ident "{" [ idents [ "," ] ] "}" (top level only; hoisted)
//	        | "print" expr ";"
//	        | "if" expr block [ "else" ( block | if-stmt ) ]
//	        | "while" expr block
//	        | "return" [ expr ] ";" | "break" ";" | "continue" ";"
//	        | block | expr ";" .
//	block   = "{" { stmt } "}" .
//	expr    = unary { binop unary } .        (precedence: || && == != < <= > >= + - * / %)
//	unary   = ( "-" | "!" ) unary | primary .
//	primary = int | string | "true" | "false" | ident | ident "(" [ exprs ] ")"
//	        | ident "." ident | "(" expr ")" .
//
// Integers are 64-bit and wrap; strings are double-quoted with the escapes
// \n \t \r \\ \" and may not span lines; `//` starts a comment. An enum's
// variants are the integers 0, 1, ... and are written E.Variant.
//
// # Output
//
// Compile returns a module: the magic "\x00tlb", a little-endian uint32
// version (1), then sections, each a one-byte id, a uvarint payload length and
// the payload: 1 constants, 2 enums, 3 functions, 4 globals, 5 code. Integers
// inside sections are (zig-zag) varints as in WebAssembly. The same source
// always yields the same bytes.
//
// # Errors
//
// A source the language rejects yields a *Error whose message starts with
// "line:col: ". Any other outcome (a panic, a compile that does not end) is a
// bug in this package.
package compiler
