package fuzzing

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// tagParser is a target written as a shell script: it crashes like a Go
// program when a <b> element directly holds an <i> (a nesting no seed
// has), hangs on <spin>, and rejects input without a tag.
const tagParser = `#!/bin/sh
src="$1"
if grep -q '<b><i>' "$src"; then printf 'panic: runtime error: invalid memory address or nil pointer dereference\n\ngoroutine 1 [running]:\nexample.com/tags.(*parser).nest(0xc000010000)\n\t/src/tags/parse.go:40 +0x1d\nexample.com/tags.Parse(0x1)\n\t/src/tags/parse.go:12 +0x9\nmain.main()\n\t/src/main.go:9\n' >&2; exit 2; fi
if grep -q '<spin>' "$src"; then while :; do :; done; fi
if ! grep -q '<' "$src"; then echo "1:1: expected a tag" >&2; exit 1; fi
if grep -q '</' "$src"; then echo "closing tag seen" >&2; fi
exit 0
`

// MustScriptTarget writes script into a temp dir and returns a Target
// running it on {src}.
func MustScriptTarget(tb testing.TB, script string) Target {
	tb.Helper()
	dir := tb.TempDir()
	p := filepath.Join(dir, "target.sh")
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		tb.Fatal(err)
	}
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o700); err != nil {
		tb.Fatal(err)
	}
	// Generous: the machine running the tests may be loaded, and a slow
	// run read as a hang would make the results meaningless.
	return Target{Argv: []string{"/bin/sh", p, "{src}"}, Dir: work, Timeout: 3 * time.Second}
}

var tagSeeds = [][]byte{[]byte("<p><b>bold</b> text</p>"), []byte("<ul><li><i>x</i></li></ul>")}

// TestBuiltinDictionaryFindsNesting: the dictionary engine builds the
// unseen nesting <b><i> from the seeds' tags; the crasher carries the
// target's crash state.
func TestBuiltinDictionaryFindsNesting(t *testing.T) {
	tg := MustScriptTarget(t, tagParser)
	rep, err := RunBuiltin(context.Background(), tg, Session{Seeds: tagSeeds, Duration: 60 * time.Second, MaxExecs: 3000, Seed: 1, StopAtFirst: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Crashers) == 0 {
		t.Fatalf("no crash in %d execs", rep.Execs)
	}
	c := rep.Crashers[0]
	if c.Outcome != Crashed || c.State != "panic: runtime error: invalid memory address or nil pointer dereference @ tags.(*parser).nest < tags.Parse < main.main" || !strings.Contains(string(c.Input), "<b><i>") {
		t.Errorf("crasher %+v input %q", c, c.Input)
	}
	if rep.FirstCrash <= 0 || rep.DictEntries == 0 || rep.Engine != EngineBuiltin || rep.CPU <= 0 {
		t.Errorf("report %+v", rep)
	}
	t.Logf("first crash after %d execs, %s, %s CPU", c.Execs, rep.FirstCrash, rep.CPU)
}

// TestBuiltinHangAndCorpus: a hang is one Crasher (timeout), and the
// interesting inputs persist: a second session loads them and adds only
// behaviours the first did not record.
func TestBuiltinHangAndCorpus(t *testing.T) {
	tg := MustScriptTarget(t, tagParser)
	tg.Timeout = time.Second
	dir := filepath.Join(t.TempDir(), "fuzz", TargetKey("compiler", tg.Argv...))
	c1, err := OpenCorpus(dir)
	if err != nil {
		t.Fatal(err)
	}
	seeds := append([][]byte{[]byte("<spin>")}, tagSeeds...)
	rep, err := RunBuiltin(context.Background(), tg, Session{Seeds: seeds, Corpus: c1, MaxExecs: 150, Duration: time.Minute, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	hangs := 0
	for _, c := range rep.Crashers {
		if c.Outcome == TimedOut {
			hangs++
			if c.State != "hang: <spin>" {
				t.Errorf("hang state %q", c.State)
			}
		}
	}
	if hangs != 1 || rep.Timeouts < 1 {
		t.Errorf("hangs: %d crashers, %d timeouts", hangs, rep.Timeouts)
	}
	if rep.NewInputs == 0 || c1.Signatures() != rep.NewInputs {
		t.Fatalf("new inputs %d, signatures %d", rep.NewInputs, c1.Signatures())
	}
	c2, err := OpenCorpus(dir)
	if err != nil {
		t.Fatal(err)
	}
	if c2.Signatures() != c1.Signatures() {
		t.Errorf("reopened corpus has %d signatures, want %d", c2.Signatures(), c1.Signatures())
	}
	q, err := c2.Load(100)
	if err != nil || len(q) != rep.NewInputs {
		t.Fatalf("loaded %d inputs (%v), want %d", len(q), err, rep.NewInputs)
	}
	// Only the seeds and the loaded queue run: every behaviour is known.
	rep2, err := RunBuiltin(context.Background(), tg, Session{Seeds: tagSeeds, Corpus: c2, MaxExecs: len(tagSeeds) + len(q), Duration: time.Minute, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if rep2.NewInputs != 0 {
		t.Errorf("second session re-added %d known behaviours", rep2.NewInputs)
	}
	crashes, _ := os.ReadDir(filepath.Join(dir, "crashes"))
	if len(crashes) == 0 {
		t.Error("the hang was not kept in crashes/")
	}
}

// TestBlindMutatorStaysByteLevel: without a dictionary no harvested token
// is inserted; with one, mutants contain tags from the seeds.
func TestMutatorDictionary(t *testing.T) {
	d := Harvest(tagSeeds)
	for _, want := range []string{"<b>", "<i>", "</li>", "<ul>"} {
		if !containsStr(d.Tags, want) {
			t.Errorf("dictionary tags %v lack %s", d.Tags, want)
		}
	}
	if !containsStr(d.Words, "bold") || !containsStr(d.Frags, "<b>bold</b>") {
		t.Errorf("words %v frags %v", d.Words, d.Frags)
	}
}

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestParseGoCorpus(t *testing.T) {
	good := "go test fuzz v1\n[]byte(\"<template><object>\")\nstring(\"a\\x00b\")\nint(-5)\nuint8(255)\nbool(true)\nrune('x')\nfloat64(-1.5)\nfloat32(math.Inf(1))\n"
	vs, err := ParseGoCorpus([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 8 || string(vs[0].Bytes) != "<template><object>" || string(vs[1].Bytes) != "a\x00b" || vs[2].Text != "-5" {
		t.Errorf("values %+v", vs)
	}
	if back, err := ParseGoCorpus(FormatGoCorpus(vs[0], vs[1])); err != nil || string(back[1].Bytes) != "a\x00b" {
		t.Errorf("round trip: %+v %v", back, err)
	}
	for _, bad := range []struct{ in, want string }{
		{"go test fuzz v2\nint(1)\n", "line 1"},
		{"go test fuzz v1\n", "no values"},
		{"go test fuzz v1\nint(1) + 2\n", "line 2: want T(value)"},
		{"go test fuzz v1\nuint8(256)\n", "line 2: uint8 out of range"},
		{"go test fuzz v1\n[]byte(5)\n", "[]byte wants a quoted string"},
		{"go test fuzz v1\nstruct{}(1)\n", "unsupported type"},
		{"go test fuzz v1\nstring(\"unterminated)\n", "line 2: not a Go expression"},
	} {
		if _, err := ParseGoCorpus([]byte(bad.in)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: error %v, want %q", bad.in, err, bad.want)
		}
	}
}

func FuzzParseGoCorpus(f *testing.F) {
	f.Add([]byte("go test fuzz v1\n[]byte(\"<p>\")\n"))
	f.Add([]byte("go test fuzz v1\nint(-1)\nfloat64(math.NaN())\nrune('\\n')\n"))
	f.Add([]byte("go test fuzz v1\nstring(`raw`)\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		vs, err := ParseGoCorpus(b)
		if err != nil {
			return
		}
		if _, err := ParseGoCorpus(FormatGoCorpus(vs...)); err != nil {
			t.Fatalf("a parsed corpus does not parse again after formatting: %v", err)
		}
	})
}
