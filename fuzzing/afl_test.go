package fuzzing

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestAFL runs AFL++ (when installed) on a script that aborts on any input
// holding a Q: the crash AFL++ saves is run again, described with its
// crash state, and kept in the persistent corpus.
func TestAFL(t *testing.T) {
	if AFLPath() == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("afl-fuzz not installed: .ci/run installs Debian's afl++")
		}
		t.Skip("afl-fuzz not installed")
	}
	if testing.Short() {
		t.Skip("runs afl-fuzz for up to 30 s")
	}
	tg := MustScriptTarget(t, `#!/bin/sh
if grep -q Q "$1"; then printf 'panic: found a Q\n\ngoroutine 1 [running]:\nmain.q()\n\t/q.go:1\n' >&2; kill -ABRT $$; fi
exit 0
`)
	c, err := OpenCorpus(filepath.Join(t.TempDir(), "corpus"))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := RunAFL(context.Background(), tg, Session{Seeds: [][]byte{[]byte("hello world")}, Corpus: c, Duration: 30 * time.Second, StopAtFirst: true}, AFLOptions{Dictionary: Harvest([][]byte{[]byte("hello world")})})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Crashers) == 0 {
		t.Fatalf("no crash in %d execs (%s)", rep.Execs, rep.Note)
	}
	if got := rep.Crashers[0]; got.Outcome != Crashed || got.State != "panic: found a Q @ main.q" || rep.Engine != EngineAFL || rep.FirstCrash <= 0 {
		t.Errorf("crasher %+v, report %+v", got, rep)
	}
}
