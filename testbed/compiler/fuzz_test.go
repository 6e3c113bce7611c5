package compiler

import (
	"bytes"
	"errors"
	"os"
	"regexp"
	"runtime/debug"
	"testing"
	"time"
)

// fuzzTimeout is how long one Compile may take before the fuzz target calls
// it a hang. Fuzz inputs are small; a correct compile takes microseconds.
const fuzzTimeout = 5 * time.Second

// errorRE is the shape of every compile error.
var errorRE = regexp.MustCompile(`^[1-9][0-9]*:[1-9][0-9]*: \S`)

type result struct {
	out   []byte
	err   error
	panic any
	stack []byte
}

// compileBounded runs Compile in a goroutine so a hang is reported instead
// of stalling the fuzzer. A hung goroutine is abandoned; the test fails and
// its process ends soon after.
func compileBounded(src []byte) (result, bool) {
	done := make(chan result, 1)
	go func() {
		var r result
		defer func() {
			if p := recover(); p != nil {
				r.panic, r.stack = p, debug.Stack()
			}
			done <- r
		}()
		r.out, r.err = Compile(src)
	}()
	select {
	case r := <-done:
		return r, true
	case <-time.After(fuzzTimeout):
		return result{}, false
	}
}

// FuzzCompile checks that Compile, on any input, returns (no panic) within
// fuzzTimeout, deterministically, with either a module or a *Error carrying a
// line:col inside the source. The committed corpus under
// testdata/fuzz/FuzzCompile holds only inputs that pass; a crasher found by
// `go test -fuzz=FuzzCompile` is a bug to fix before it may be committed.
func FuzzCompile(f *testing.F) {
	for _, file := range corpusFiles(f) {
		src, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(src)
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		r, ok := compileBounded(src)
		if !ok {
			t.Fatalf("Compile did not return within %v on %q", fuzzTimeout, src)
		}
		if r.panic != nil {
			t.Fatalf("Compile panicked on %q: %v\n%s", src, r.panic, r.stack)
		}
		again, ok := compileBounded(src)
		if !ok || again.panic != nil {
			t.Fatalf("second Compile of %q hung or panicked", src)
		}
		if !bytes.Equal(r.out, again.out) || (r.err == nil) != (again.err == nil) ||
			(r.err != nil && r.err.Error() != again.err.Error()) {
			t.Fatalf("Compile of %q is not deterministic: (%x, %v) then (%x, %v)", src, r.out, r.err, again.out, again.err)
		}
		if r.err != nil {
			var e *Error
			if !errors.As(r.err, &e) || !errorRE.MatchString(r.err.Error()) {
				t.Fatalf("Compile of %q: error %q is not a line:col *Error", src, r.err)
			}
			if lines := bytes.Count(src, []byte("\n")) + 1; e.Pos.Line > lines {
				t.Fatalf("Compile of %q: error at line %d, source has %d lines", src, e.Pos.Line, lines)
			}
			return
		}
		if _, err := decode(r.out); err != nil {
			t.Fatalf("Compile of %q: output does not decode: %v", src, err)
		}
	})
}
