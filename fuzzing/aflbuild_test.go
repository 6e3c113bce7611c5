package fuzzing

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// needAFLClang skips a test without afl-clang-fast, and fails it under CI
// (.ci/run installs Debian's afl++).
func needAFLClang(t *testing.T) {
	t.Helper()
	if AFLPath() == "" || AFLClangFast() == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("afl-fuzz or afl-clang-fast not installed: .ci/run installs Debian's afl++")
		}
		t.Skip("afl-fuzz or afl-clang-fast not installed")
	}
}

// cmagicSeed is a benign record for testdata/cmagic.
var cmagicSeed = []byte("R\x05\x00hello")

// runCMagic builds testdata/cmagic (with the harness when persistent) and
// fuzzes it for up to 30 s, stopping at the first crash.
func runCMagic(t *testing.T, persistent bool) (*Tally, *AFLBinaries) {
	t.Helper()
	dir := t.TempDir()
	b := AFLBuild{Dir: "testdata/cmagic", Work: dir, CacheDir: filepath.Join(dir, "bin"),
		Build: []string{"sh", "-c", "$CC $CFLAGS -o {out} main.c parse.c"}}
	if persistent {
		b.Harness = "harness.c"
		b.Build = []string{"sh", "-c", "$CC $CFLAGS $LIB_FUZZING_ENGINE -o {out} {harness} parse.c"}
	}
	bins, err := BuildAFL(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	if bins.Persistent != persistent {
		t.Fatalf("persistent=%v, want %v", bins.Persistent, persistent)
	}
	again, err := BuildAFL(context.Background(), b)
	if err != nil || again.Bin != bins.Bin {
		t.Fatalf("second build not from the cache: %v %+v", err, again)
	}
	tg := Target{Argv: []string{bins.Bin, "{src}"}, Dir: dir, Timeout: time.Second}
	rep, err := RunAFL(context.Background(), tg, Session{Seeds: [][]byte{cmagicSeed}, Duration: 30 * time.Second, StopAtFirst: true},
		AFLOptions{Instrumented: bins})
	if err != nil {
		t.Fatal(err)
	}
	return rep, bins
}

// TestAFLInstrumented: the record parser builds instrumented, in
// persistent and file mode, afl-fuzz runs it without -n, the report says
// which mode ran, and the abort behind the 4-byte magic is found within
// 30 s. The magic is compared a byte at a time, which CmpLog does not log
// and laf-intel has nothing to split: the build's dictionary (the
// source's byte-array literal) is what finds it (BENCHMARKS.md: none in 6
// sessions of 30 s without it, under a second with it).
func TestAFLInstrumented(t *testing.T) {
	needAFLClang(t)
	if testing.Short() {
		t.Skip("builds and fuzzes for up to a minute")
	}
	for _, persistent := range []bool{true, false} {
		rep, bins := runCMagic(t, persistent)
		want := AFLModeInstrument
		if persistent {
			want = AFLModePersistent
		}
		t.Logf("%s: first crash %v after %d execs, %d ms CPU (%s)", rep.Mode, rep.FirstCrash, rep.Execs, rep.CPU.Milliseconds(), rep.Note)
		if rep.Mode != want || !bins.CmpLog || !strings.Contains(rep.Note, "cmplog on (-c 0)") {
			t.Errorf("mode %q note %q (cmplog %v: %s)", rep.Mode, rep.Note, bins.CmpLog, bins.CmpLogNote)
		}
		if !slices.Contains(bins.Dict, "\xe1\xc2\x3f\x7a") || rep.DictEntries < len(bins.Dict) {
			t.Errorf("the build's dictionary %q (%d entries used) lacks the source's magic", bins.Dict, rep.DictEntries)
		}
		if rep.Execs == 0 || rep.CPU <= 0 {
			t.Errorf("%s: %d execs, CPU %v", rep.Mode, rep.Execs, rep.CPU)
		}
		if len(rep.Crashers) == 0 {
			t.Errorf("%s: no crash in %d execs", rep.Mode, rep.Execs)
			continue
		}
		if c := rep.Crashers[0]; c.Outcome != Crashed || c.Signal == "" || !strings.Contains(c.State, "abort") {
			t.Errorf("crasher %+v", c)
		}
	}
}

// TestAFLCmpLog: a 32-bit comparison with a constant no dictionary holds
// is solved by CmpLog's input-to-state stage within 30 s, with no
// dictionary at all. (With a separate CmpLog binary for -c, Debian's afl++
// 4.04c solved it in none of 8 sessions: BuildAFL builds one binary for
// -c 0.)
func TestAFLCmpLog(t *testing.T) {
	needAFLClang(t)
	if testing.Short() {
		t.Skip("builds and fuzzes for up to 30 s")
	}
	dir := t.TempDir()
	bins, err := BuildAFL(context.Background(), AFLBuild{Dir: "testdata/cword", Work: dir, CacheDir: filepath.Join(dir, "bin"), Harness: "harness.c",
		Build: []string{"sh", "-c", "$CC $CFLAGS $LIB_FUZZING_ENGINE -o {out} {harness}"}})
	if err != nil {
		t.Fatal(err)
	}
	if !bins.CmpLog || !bins.Persistent {
		t.Fatalf("build %+v", bins)
	}
	bins.Dict = nil // CmpLog alone
	tg := Target{Argv: []string{bins.Bin, "{src}"}, Dir: dir, Timeout: time.Second}
	rep, err := RunAFL(context.Background(), tg, Session{Seeds: [][]byte{[]byte("W\x05\x00hello")}, Duration: 30 * time.Second, StopAtFirst: true},
		AFLOptions{Instrumented: bins})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: first crash %v after %d execs (%s)", rep.Mode, rep.FirstCrash, rep.Execs, rep.Note)
	if rep.DictEntries != 0 || len(rep.Crashers) == 0 || rep.Crashers[0].Outcome != Crashed {
		t.Fatalf("%d dictionary entries, crashers %+v in %d execs", rep.DictEntries, rep.Crashers, rep.Execs)
	}
}

// TestBuildPlain: the harness builds without AFL++ (clang and a
// file-reading main as $LIB_FUZZING_ENGINE), the binary aborts on the
// magic and not on the seed, and afl-fuzz runs it non-instrumented with
// the reason it was given.
func TestBuildPlain(t *testing.T) {
	needAFLClang(t)
	dir := t.TempDir()
	bin, err := BuildPlain(context.Background(), AFLBuild{Dir: "testdata/cmagic", Work: dir, Harness: "harness.c",
		Build: []string{"sh", "-c", "$CC $CFLAGS $LIB_FUZZING_ENGINE -o {out} {harness} parse.c"}})
	if err != nil {
		t.Fatal(err)
	}
	tg := Target{Argv: []string{bin, "{src}"}, Dir: dir, Timeout: time.Second}
	for input, want := range map[string]string{"R\x05\x00\xe1\xc2\x3f\x7a0": Crashed, string(cmagicSeed): "passed"} {
		c, err := Describe(context.Background(), tg, []byte(input))
		if err != nil || (c.Outcome == Crashed) != (want == Crashed) {
			t.Errorf("%q: %s %q (%v), want %s", input, c.Outcome, c.State, err, want)
		}
	}
	rep, err := RunAFL(context.Background(), tg, Session{Seeds: [][]byte{cmagicSeed}, Duration: 2 * time.Second}, AFLOptions{Why: "the afl-clang-fast build failed"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Mode != AFLModeBlind || rep.ModeWhy != "the afl-clang-fast build failed" || rep.Execs == 0 {
		t.Errorf("mode %q why %q, %d execs", rep.Mode, rep.ModeWhy, rep.Execs)
	}
	if _, err := BuildPlain(context.Background(), AFLBuild{Dir: "testdata/cmagic", Work: dir, Build: []string{"true"}}); err == nil {
		t.Error("a plain build without a harness did not fail")
	}
}

// TestAFLBuildFails: a build that fails says why, naming the command.
func TestAFLBuildFails(t *testing.T) {
	needAFLClang(t)
	dir := t.TempDir()
	_, err := BuildAFL(context.Background(), AFLBuild{Dir: "testdata/cmagic", Work: dir, CacheDir: filepath.Join(dir, "bin"),
		Build: []string{"sh", "-c", "$CC -o {out} missing.c"}})
	if err == nil || !strings.Contains(err.Error(), "missing.c") || !strings.Contains(err.Error(), "exited") {
		t.Fatalf("err = %v", err)
	}
}

// TestAFLTmin: afl-tmin shrinks a padded crashing input on the
// instrumented build, persistent and file mode alike, to one that still
// aborts; on SIGINT at its budget it still writes what it has.
func TestAFLTmin(t *testing.T) {
	needAFLClang(t)
	crash := append([]byte("R\x05\x00\xe1\xc2\x3f\x7a"), bytes.Repeat([]byte("z"), 60)...)
	for _, persistent := range []bool{true, false} {
		dir := t.TempDir()
		b := AFLBuild{Dir: "testdata/cmagic", Work: dir, CacheDir: filepath.Join(dir, "bin"),
			Build: []string{"sh", "-c", "$CC $CFLAGS -o {out} main.c parse.c"}}
		argv := []string{"", "@@"}
		if persistent {
			b.Harness = "harness.c"
			b.Build = []string{"sh", "-c", "$CC $CFLAGS $LIB_FUZZING_ENGINE -o {out} {harness} parse.c"}
			argv = []string{""}
		}
		bins, err := BuildAFL(context.Background(), b)
		if err != nil {
			t.Fatal(err)
		}
		argv[0] = bins.Bin
		env := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + dir, "AFL_SKIP_CPUFREQ=1", "AFL_NO_AFFINITY=1"}
		small, note := aflTmin(context.Background(), dir, argv, env, time.Second, crash, 30*time.Second)
		if small == nil || len(small) >= len(crash) {
			t.Fatalf("persistent=%v: afl-tmin gave %q (%s)", persistent, small, note)
		}
		c, err := Describe(context.Background(), Target{Argv: []string{bins.Bin, "{src}"}, Dir: dir, Timeout: time.Second}, small)
		if err != nil || c.Outcome != Crashed || c.Signal == "" {
			t.Errorf("persistent=%v: the minimized %q replays as %s %q (%v)", persistent, small, c.Outcome, c.State, err)
		}
		t.Logf("persistent=%v: %d bytes to %d: %q", persistent, len(crash), len(small), small)
	}
}
