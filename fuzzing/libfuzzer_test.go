package fuzzing

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// MustLibFuzzer returns the clang that links libFuzzer. Without one the
// test fails when CI is set (CI installs clang: a skip there would hide a
// broken engine) and is skipped otherwise.
func MustLibFuzzer(tb testing.TB) string {
	tb.Helper()
	clang, err := LibFuzzerClang(context.Background())
	if err != nil {
		if os.Getenv("CI") != "" {
			tb.Fatalf("CI is set and the libfuzzer engine cannot build here: %v", err)
		}
		tb.Skipf("libFuzzer unavailable: %v", err)
	}
	return clang
}

// mustGoTarget copies a module from testdata into a temporary jail and
// returns its GoTarget, with the machine's build cache (the instrumented
// standard library is built once per machine, not once per test run).
func mustGoTarget(tb testing.TB, module, pkg, fn string) GoTarget {
	tb.Helper()
	goCmd, err := GoCommand()
	if err != nil {
		tb.Skip(err)
	}
	work := tb.TempDir()
	src := filepath.Join(work, "repo")
	mod, err := filepath.Abs(filepath.Join("testdata", module))
	if err != nil {
		tb.Fatal(err)
	}
	if err := CheckoutRepo(context.Background(), mod, src); err != nil {
		tb.Fatal(err)
	}
	cache, err := exec.Command(goCmd, "env", "GOCACHE").Output()
	if err != nil {
		tb.Skip(err)
	}
	env := GoEnv(goCmd, work, filepath.Join(work, "go"), 1<<30)
	for i, kv := range env {
		if strings.HasPrefix(kv, "GOCACHE=") {
			env[i] = "GOCACHE=" + strings.TrimSpace(string(cache))
		}
	}
	return GoTarget{Dir: src, Package: pkg, Func: fn, Go: goCmd, Env: env, CacheDir: filepath.Join(work, "gocache")}
}

// TestLibFuzzerEngine builds the fixture's native fuzz target as a
// libFuzzer binary and fuzzes it from its f.Add seeds: the planted crash
// (a 32-bit magic behind a length check, which comparison feedback finds)
// is found within 60 s, minimized, and described with the crash state the
// go engine gives the same input; the crasher replays through both
// engines; a second session starts from the first one's kept corpus.
func TestLibFuzzerEngine(t *testing.T) {
	clang := MustLibFuzzer(t)
	if testing.Short() {
		t.Skip("builds an instrumented binary and fuzzes for up to 60 s")
	}
	g := mustGoTarget(t, "magicmod", "./record", "FuzzParse")
	cache, kept := t.TempDir(), t.TempDir()
	lt := LibFuzzerTarget{Go: g, Clang: clang, CacheDir: cache}
	ctx := context.Background()
	rep, err := RunLibFuzzer(ctx, lt, Session{Duration: 60 * time.Second, StopAtFirst: true}, LibFuzzerOptions{Kept: kept})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Crashers) == 0 {
		t.Fatalf("no crash in %d execs (%d/s, cov %d, ft %d): %s", rep.Execs, rep.ExecsPerSec, rep.Coverage, rep.Features, rep.Note)
	}
	c := rep.Crashers[0]
	want := "panic: assignment to entry in nil map @ record.Parse < record.FuzzParse.funcN"
	if c.Outcome != Crashed || c.State != want || rep.Engine != EngineLibFuzzer || rep.FirstCrash <= 0 {
		t.Errorf("crasher %s %q (want %q), report %+v", c.Outcome, c.State, want, rep)
	}
	if len(c.Raw) > 12 {
		t.Errorf("crasher not minimized: %d bytes %q", len(c.Raw), c.Raw)
	}
	if rep.StartedFrom == 0 || rep.Execs == 0 || rep.Coverage == 0 || rep.DictEntries == 0 {
		t.Errorf("statistics: started from %d, execs %d, cov %d, dictionary %d", rep.StartedFrom, rep.Execs, rep.Coverage, rep.DictEntries)
	}
	t.Logf("found after %s, %d execs (%d/s), cov %d ft %d, started from %d, input %q", c.At, c.Execs, rep.ExecsPerSec, rep.Coverage, rep.Features, rep.StartedFrom, c.Input)

	// The same input through both engines: one crash state.
	lr, err := ReplayLibFuzzer(ctx, LibFuzzerTarget{Go: g, Clang: clang, CacheDir: cache}, c.Input, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	gr, err := ReplayGo(ctx, g, c.Input, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{Crashed, want, Crashed, want}, []string{lr.Outcome, lr.State, gr.Outcome, gr.State}); diff != "" {
		t.Errorf("replays (-want +got):\n%s\nlibfuzzer: %s\ngo: %s", diff, lr.Stderr, gr.Stderr)
	}
	pass, err := ReplayLibFuzzer(ctx, LibFuzzerTarget{Go: g, Clang: clang, CacheDir: cache}, []byte("go test fuzz v1\n[]byte(\"\\x08abcdefgh\")\n"), time.Minute)
	if err != nil || pass.Outcome != Compiled {
		t.Errorf("a passing input replayed as %s (%v): %s", pass.Outcome, err, pass.Stderr)
	}

	// A second session starts from the kept corpus; the repository's own
	// dictionary has a line libFuzzer would refuse: it is skipped, named,
	// and the session runs.
	n := countFiles(kept)
	if n == 0 {
		t.Fatal("nothing kept")
	}
	g2 := mustGoTarget(t, "magicmod", "./record", "FuzzParse")
	if err := os.WriteFile(filepath.Join(g2.pkgDir(), "FuzzParse.dict"), []byte("\"FLTD\"\nnot a token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rep2, err := RunLibFuzzer(ctx, LibFuzzerTarget{Go: g2, Clang: clang, CacheDir: cache}, Session{Duration: 3 * time.Second}, LibFuzzerOptions{Kept: kept, Minimize: -1})
	if err != nil {
		t.Fatal(err)
	}
	if rep2.StartedFrom < min(n, 3) {
		t.Errorf("second session started from %d inputs, %d kept", rep2.StartedFrom, n)
	}
	if !strings.Contains(rep2.Note, "dictionary record/FuzzParse.dict line 2 skipped: no quoted value") || rep2.Execs == 0 {
		t.Errorf("a bad dictionary line: note %q, %d execs", rep2.Note, rep2.Execs)
	}
}

// TestLibFuzzerSharesCorpus: a session merges the other engines' inputs
// in (the shared queue, the go engine's cache corpus), skips inputs over
// the size limit with a note, keeps its corpus, and hands its new inputs
// back to the queue and, as `go test fuzz v1` files go test accepts, to
// the go engine's cache.
func TestLibFuzzerSharesCorpus(t *testing.T) {
	clang := MustLibFuzzer(t)
	if testing.Short() {
		t.Skip("builds an instrumented binary")
	}
	g := mustGoTarget(t, "magicmod", "./record", "FuzzFields")
	root := t.TempDir()
	c, err := OpenCorpus(filepath.Join(root, "queue"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Add([]byte("\x04\x00\x00\x00FLTD\xfe\xff\x01"), "aflpp|x"); err != nil {
		t.Fatal(err)
	}
	kept, goCache := filepath.Join(root, "kept"), filepath.Join(root, "gocache")
	if err := os.MkdirAll(kept, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(kept, "huge"), make([]byte, maxKeptInput+1), 0o600); err != nil {
		t.Fatal(err)
	}
	lt := LibFuzzerTarget{Go: g, Clang: clang, CacheDir: filepath.Join(root, "bin"), Work: t.TempDir()}
	rep, err := RunLibFuzzer(context.Background(), lt, Session{Duration: 4 * time.Second, Corpus: c}, LibFuzzerOptions{Kept: kept, GoCacheDir: goCache, Minimize: -1})
	if err != nil {
		t.Fatal(err)
	}
	// The working corpus was in a RAM scratch (where there is one), which
	// the session removed.
	if ram, release := RAMScratch(0); ram != "" {
		release()
		if _, err := os.Stat(filepath.Join(lt.Work, "corpus")); err == nil {
			t.Error("the working corpus was on disk with a RAM scratch available")
		}
	}
	if left, _ := filepath.Glob(filepath.Join(ramRoot, ramPrefix+strconv.Itoa(os.Getpid())+"-*")); len(left) > 0 {
		t.Errorf("the session left its scratch: %v", left)
	}
	if !strings.Contains(rep.Note, "1 corpus inputs over 1048576 bytes skipped") {
		t.Errorf("note %q", rep.Note)
	}
	if rep.StartedFrom < 2 || rep.NewInputs == 0 {
		t.Fatalf("started from %d, %d new inputs", rep.StartedFrom, rep.NewInputs)
	}
	if _, err := os.Stat(filepath.Join(kept, "huge")); err == nil {
		t.Error("the oversized input is still kept")
	}
	if q, _ := c.Load(maxQueue); len(q) < 1+min(rep.NewInputs, maxShared) {
		t.Errorf("queue holds %d inputs after %d new", len(q), rep.NewInputs)
	}
	files, _ := filepath.Glob(filepath.Join(goCache, "FuzzFields", "libfuzzer-*"))
	if len(files) == 0 {
		t.Fatal("nothing handed to the go engine")
	}
	in, _ := os.ReadFile(files[0])
	if vs, err := ParseGoCorpus(in); err != nil || len(vs) != 5 {
		t.Fatalf("go cache file %q: %v", in, err)
	}
	if r, err := ReplayGo(context.Background(), g, in, time.Minute); err != nil || r.Outcome != Compiled {
		t.Errorf("go test does not take the handed-over input %q: %s %v %s", in, r.Outcome, err, r.Stderr)
	}
}

// TestLibFuzzerMinimize: a crash of a new state is minimized with
// -minimize_crash=1 before it is returned, and its state is the original
// input's; a crash of a state already found is not minimized again.
func TestLibFuzzerMinimize(t *testing.T) {
	clang := MustLibFuzzer(t)
	if testing.Short() {
		t.Skip("builds an instrumented binary")
	}
	g := mustGoTarget(t, "magicmod", "./record", "FuzzParse")
	lt := LibFuzzerTarget{Go: g, Clang: clang, CacheDir: t.TempDir()}
	ctx := context.Background()
	b, err := lt.build(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := copyFile(b.bin, filepath.Join(lt.work(), "fuzzer"), 0o700); err != nil {
		t.Fatal(err)
	}
	raw := []byte("\x14abcdFLTDpadding padding ") // 25 bytes; its first 9 crash
	art := filepath.Join(lt.work(), "crash-padded")
	if err := os.WriteFile(art, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	want := "panic: assignment to entry in nil map @ record.Parse < record.FuzzParse.funcN"
	never := func(Crasher) bool { return false }
	// Minimization has 20 s of wall time, which is what it is given on a
	// machine that runs it. Under load (3 of 6 failed at load 30-46) its
	// libFuzzer processes had a fraction of that in CPU time: an attempt
	// that ends above 12 bytes having had under half its budget in CPU
	// time was starved, not beaten, and is tried again from the original
	// input (a fresh corpus, so no kept result is replayed) with twice the
	// time. One that had its CPU and still ends above 12 bytes fails.
	var (
		c    Crasher
		kept *Corpus
	)
	for budget := 20 * time.Second; ; budget *= 2 {
		if kept, err = OpenCorpus(t.TempDir()); err != nil {
			t.Fatal(err)
		}
		cpu0, start := childrenCPU(t), time.Now()
		var ok bool
		c, ok, err = lt.crasher(ctx, b, art, nil, budget, time.Minute, never, kept)
		if err != nil || !ok {
			t.Fatalf("crasher: %v %v", ok, err)
		}
		if c.Outcome != Crashed || c.State != want {
			t.Fatalf("minimized to another crash: %s %q, %d bytes %q (from %d)", c.Outcome, c.State, len(c.Raw), c.Raw, len(raw))
		}
		cpu, wall := childrenCPU(t)-cpu0, time.Since(start)
		if len(c.Raw) <= 12 {
			break
		}
		if starved := cpu < 10*time.Second && cpu < wall/2; !starved || budget >= 160*time.Second {
			t.Fatalf("minimized to %d bytes %q (from %d) with a budget of %s, in %s having had %s of CPU time; want 12 or fewer",
				len(c.Raw), c.Raw, len(raw), budget, wall.Round(time.Millisecond), cpu)
		}
		t.Logf("starved: %d bytes with a budget of %s, in %s having had %s of CPU time; trying again", len(c.Raw), budget, wall.Round(time.Millisecond), cpu)
	}
	again, _, err := lt.crasher(ctx, b, art, nil, 20*time.Second, time.Minute, func(Crasher) bool { return true }, kept)
	if err != nil || len(again.Raw) != len(raw) || again.State != want {
		t.Errorf("a known state minimized again: %d bytes, %q, %v", len(again.Raw), again.State, err)
	}
	// A later session, with no time to minimize: the kept minimized input,
	// replayed; without a kept one, the original.
	later, _, err := lt.crasher(ctx, b, art, nil, time.Nanosecond, time.Minute, never, kept)
	if err != nil || later.State != want || !bytes.Equal(later.Raw, c.Raw) {
		t.Errorf("a later session: %q (%d bytes), want the kept %q; %v", later.State, len(later.Raw), c.Raw, err)
	}
	fresh, _, err := lt.crasher(ctx, b, art, nil, time.Nanosecond, time.Minute, never, nil)
	if err != nil || len(fresh.Raw) != len(raw) {
		t.Errorf("no kept input, no time: %d bytes, want the original %d; %v", len(fresh.Raw), len(raw), err)
	}
}

// TestLibFuzzerWorkers: with two workers two libFuzzer processes fuzz one
// corpus; the first to crash stops the other (SIGINT: it still prints its
// statistics), the crash is one crasher, and the session ends long before
// its time.
func TestLibFuzzerWorkers(t *testing.T) {
	clang := MustLibFuzzer(t)
	if testing.Short() {
		t.Skip("builds an instrumented binary and fuzzes")
	}
	if runtime.NumCPU() < 2 {
		t.Skip("one CPU: two workers would be one")
	}
	g := mustGoTarget(t, "magicmod", "./record", "FuzzParse")
	lt := LibFuzzerTarget{Go: g, Clang: clang, CacheDir: t.TempDir(), Workers: 2}
	rep, err := RunLibFuzzer(context.Background(), lt, Session{Duration: 60 * time.Second, StopAtFirst: true}, LibFuzzerOptions{Minimize: -1})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Crashers) != 1 || rep.Crashers[0].State != "panic: assignment to entry in nil map @ record.Parse < record.FuzzParse.funcN" || rep.Execs == 0 {
		t.Errorf("two workers: %d execs, crashers %+v", rep.Execs, rep.Crashers)
	}
	if rep.Elapsed > 45*time.Second {
		t.Errorf("the crash did not stop the other worker: the session took %s of its 60 s", rep.Elapsed)
	}
	if rep.CPU <= 0 {
		t.Errorf("no CPU time measured for %d execs", rep.Execs)
	}
}

// TestPruneDue: a kept corpus is pruned when it never was, when its stamp
// is unreadable or from the future, and when the last prune is PruneEvery
// old; 0 prunes every session.
func TestPruneDue(t *testing.T) {
	kept := t.TempDir()
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	stamp := func(s string) {
		if err := os.WriteFile(filepath.Join(kept, prunedStamp), []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		stamp string
		every time.Duration
		want  bool
	}{
		{"", 24 * time.Hour, true}, // no stamp written
		{now.Add(-time.Hour).Format(time.RFC3339), 24 * time.Hour, false},
		{now.Add(-time.Hour).Format(time.RFC3339), 0, true},
		{now.Add(-25 * time.Hour).Format(time.RFC3339), 24 * time.Hour, true},
		{now.Add(time.Hour).Format(time.RFC3339), 24 * time.Hour, true},
		{"yesterday", 24 * time.Hour, true},
		// By size: twice what the last prune kept, within [2,048, 3,072].
		{now.Add(-time.Hour).Format(time.RFC3339) + " 3", 24 * time.Hour, false},
	} {
		os.Remove(filepath.Join(kept, prunedStamp))
		if tt.stamp != "" {
			stamp(tt.stamp)
		}
		if got := pruneDue(kept, tt.every, now); got != tt.want {
			t.Errorf("stamp %q every %s: due=%v, want %v", tt.stamp, tt.every, got, tt.want)
		}
	}
	// By size, on a recent stamp: due once the kept corpus holds twice what
	// the last prune kept, at least 2,048 and at most 3,072 inputs.
	files := 0
	fill := func(n int) {
		for ; files < n; files++ {
			if err := os.WriteFile(filepath.Join(kept, fmt.Sprintf("in-%05d", files)), []byte{1}, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	recent := now.Add(-time.Hour).Format(time.RFC3339)
	for _, tt := range []struct {
		last, threshold int
	}{{100, 2048}, {1500, 3000}, {2000, 3072}} {
		stamp(fmt.Sprintf("%s %d\n", recent, tt.last))
		fill(tt.threshold - 1)
		if pruneDue(kept, 24*time.Hour, now) {
			t.Errorf("last prune kept %d: due at %d inputs, want not before %d", tt.last, files, tt.threshold)
		}
		fill(tt.threshold)
		if !pruneDue(kept, 24*time.Hour, now) {
			t.Errorf("last prune kept %d: not due at %d inputs", tt.last, files)
		}
	}
}

// TestLibFuzzerPruneSchedule: the first session prunes the kept corpus
// (inputs that add no coverage go) and stamps it; a session before the
// next prune is due starts from every kept input and drops none; once the
// stamp is old, the next session prunes again.
func TestLibFuzzerPruneSchedule(t *testing.T) {
	clang := MustLibFuzzer(t)
	if testing.Short() {
		t.Skip("builds an instrumented binary and fuzzes three times")
	}
	g := mustGoTarget(t, "magicmod", "./record", "FuzzParse")
	kept := t.TempDir()
	lt := LibFuzzerTarget{Go: g, Clang: clang, CacheDir: t.TempDir(), Workers: 1}
	// Twenty inputs a length check rejects the same way: one adds coverage.
	redundant := func() {
		for i := range 20 {
			if err := os.WriteFile(filepath.Join(kept, fmt.Sprintf("dup-%02d", i)), []byte{0xff, byte('a' + i)}, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	var others [][]byte // the other engines' inputs, staged with the kept corpus
	session := func() *Tally {
		t.Helper()
		rep, err := RunLibFuzzer(context.Background(), lt, Session{Duration: 2 * time.Second}, LibFuzzerOptions{Kept: kept, Minimize: -1, PruneEvery: 24 * time.Hour, Others: others})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	dups := func() int {
		m, _ := filepath.Glob(filepath.Join(kept, "dup-*"))
		n := 0
		for _, f := range m {
			if b, _ := os.ReadFile(f); len(b) == 2 && b[0] == 0xff {
				n++
			}
		}
		return n
	}
	redundant()
	rep := session()
	if rep.Pruned < 19 || dups() > 1 || !strings.Contains(rep.Note, "corpus pruned") {
		t.Fatalf("first session: pruned %d, %d redundant inputs left, note %q", rep.Pruned, dups(), rep.Note)
	}
	if b, err := os.ReadFile(filepath.Join(kept, prunedStamp)); err != nil {
		t.Fatalf("no prune stamp: %v", err)
	} else if f := strings.Fields(string(b)); len(f) != 2 || f[1] != strconv.Itoa(rep.StartedFrom) {
		t.Errorf("stamp %q: want the %d inputs the merge kept", b, rep.StartedFrom)
	}
	redundant()
	for i := range 30 {
		others = append(others, fmt.Appendf(nil, "other engine's input %02d", i))
	}
	before := countFiles(kept)
	rep = session()
	// (The two f.Add seeds are kept already: staging counts them once.)
	// Every staged input is in the session: the workers start on the
	// first batch and the rest are fed to them (a 2 s session ends before
	// the first feed: the note says how many were staged).
	staged := rep.StartedFrom
	if m := regexp.MustCompile(`the workers started on the \d+ smallest of (\d+) staged inputs`).FindStringSubmatch(rep.Note); m != nil {
		staged, _ = strconv.Atoi(m[1])
	}
	if rep.Pruned != 0 || dups() != 20 || staged < before-2+len(others) {
		t.Errorf("between prunes: pruned %d, %d of 20 redundant inputs kept, staged %d of %d kept and %d others (note %q)", rep.Pruned, dups(), staged, before, len(others), rep.Note)
	}
	// Between prunes the kept corpus gains only the session's own finds:
	// the others' inputs are staged again next time, not kept.
	for _, in := range others {
		if _, err := os.Stat(filepath.Join(kept, sha1Name(in))); err == nil {
			t.Fatalf("between prunes another engine's input %q joined the kept corpus", in)
		}
	}
	others = nil
	if err := os.WriteFile(filepath.Join(kept, prunedStamp), []byte(time.Now().Add(-25*time.Hour).UTC().Format(time.RFC3339)), 0o600); err != nil {
		t.Fatal(err)
	}
	rep = session()
	if rep.Pruned < 19 || dups() > 1 {
		t.Errorf("prune due again: pruned %d, %d redundant inputs left", rep.Pruned, dups())
	}
}

// TestLibFuzzerCrashesOnEverySeed: a target that crashes on every input
// (its seeds included) is one crasher, found at once, with a note that it
// failed in the seed pass; the session ends without an error.
func TestLibFuzzerCrashesOnEverySeed(t *testing.T) {
	clang := MustLibFuzzer(t)
	if testing.Short() {
		t.Skip("builds an instrumented binary")
	}
	g := mustGoTarget(t, "magicmod", "./record", "FuzzAlways")
	lt := LibFuzzerTarget{Go: g, Clang: clang, CacheDir: t.TempDir(), Workers: 2}
	rep, err := RunLibFuzzer(context.Background(), lt, Session{Duration: 20 * time.Second}, LibFuzzerOptions{Minimize: -1, Kept: t.TempDir()})
	if err != nil {
		t.Fatalf("a target broken on every input is a finding, not an error: %v", err)
	}
	if len(rep.Crashers) != 1 || !strings.HasPrefix(rep.Crashers[0].State, "panic: broken on every input") {
		t.Errorf("crashers %+v", rep.Crashers)
	}
	// Nothing kept yet, so no merge: the workers' own seed pass fails.
	if !strings.Contains(rep.Note, "the target failed in the seed pass, before any mutation (on its seeds or corpus: 1 inputs)") {
		t.Errorf("note %q does not say the target fails on its seeds", rep.Note)
	}
	t.Logf("%d crashers in %s: %s", len(rep.Crashers), rep.Elapsed, rep.Note)
}

// TestLibFuzzerPlainPackagesAreStandard: every package the libfuzzer build
// leaves uninstrumented is a standard library package that exists (a
// misspelt -gcflags pattern matches nothing and instruments it after all;
// a non-standard one would blind libFuzzer to target code).
func TestLibFuzzerPlainPackagesAreStandard(t *testing.T) {
	goCmd, err := GoCommand()
	if err != nil {
		t.Skip(err)
	}
	patterns := append(append([]string(nil), uninstrumented...), plainStd...)
	out, err := exec.Command(goCmd, append([]string{"list", "-e", "-f", "{{.ImportPath}} {{.Standard}}"}, patterns...)...).Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	std := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, isStd, _ := strings.Cut(line, " ")
		if isStd != "true" {
			t.Errorf("%s is not a standard library package", path)
		}
		std[path] = true
	}
	for _, p := range patterns {
		found := std[p]
		if prefix, ok := strings.CutSuffix(p, "/..."); ok {
			for path := range std {
				found = found || strings.HasPrefix(path, prefix+"/")
			}
		}
		if !found {
			t.Errorf("-gcflags=%s= matches no standard library package", p)
		}
	}
}

// TestLibFuzzerPassesOverKnownCrashes: once a session has a crash, its
// next round passes over a panic at the same site and goes on to the bug
// behind it, instead of stopping at the first one again.
func TestLibFuzzerPassesOverKnownCrashes(t *testing.T) {
	clang := MustLibFuzzer(t)
	if testing.Short() {
		t.Skip("builds an instrumented binary")
	}
	g := mustGoTarget(t, "magicmod", "./twobugs", "FuzzCheck")
	lt := LibFuzzerTarget{Go: g, Clang: clang, CacheDir: filepath.Join(t.TempDir(), "bin")}
	rep, err := RunLibFuzzer(context.Background(), lt, Session{Duration: 25 * time.Second}, LibFuzzerOptions{Minimize: -1})
	if err != nil {
		t.Fatal(err)
	}
	var states []string
	for _, c := range rep.Crashers {
		states = append(states, c.State)
		if c.site == "" || !strings.Contains(c.site, "twobugs.go:") {
			t.Errorf("crasher %q: site %q", c.State, c.site)
		}
		if strings.Contains(c.Stderr, "fleetd-") {
			t.Errorf("the harness's own line in the report: %s", c.Stderr)
		}
	}
	joined := strings.Join(states, "\n")
	if len(rep.Crashers) != 2 || !strings.Contains(joined, "index out of range") || !strings.Contains(joined, "nil map") {
		t.Fatalf("crash states %q, want the index panic and the nil map write (note %q)", joined, rep.Note)
	}
	if !strings.Contains(rep.Note, "passed over") {
		t.Errorf("note %q does not say a known crash was passed over", rep.Note)
	}
}

// TestLibFuzzerMergeTimeout: a prune whose merge does not finish in its
// time starts the session from everything staged (libFuzzer writes a
// merge's output only at its end), keeps the kept corpus whole and leaves
// the prune to the next session.
func TestLibFuzzerMergeTimeout(t *testing.T) {
	clang := MustLibFuzzer(t)
	if testing.Short() {
		t.Skip("builds an instrumented binary")
	}
	g := mustGoTarget(t, "magicmod", "./record", "FuzzParse")
	kept := t.TempDir()
	for i := range 30 {
		if err := os.WriteFile(filepath.Join(kept, fmt.Sprintf("in-%02d", i)), []byte{byte(i), 'a', 'b'}, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	lt := LibFuzzerTarget{Go: g, Clang: clang, CacheDir: t.TempDir(), Workers: 1}
	if _, err := lt.build(context.Background()); err != nil { // before the merge's clock
		t.Fatal(err)
	}
	old := mergeBudget
	mergeBudget = func(time.Duration) time.Duration { return time.Millisecond }
	t.Cleanup(func() { mergeBudget = old })
	rep, err := RunLibFuzzer(context.Background(), lt, Session{Duration: 2 * time.Second}, LibFuzzerOptions{Kept: kept, Minimize: -1, PruneEvery: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rep.Note, "merge did not finish") || rep.StartedFrom < 30 {
		t.Fatalf("started from %d; note %q", rep.StartedFrom, rep.Note)
	}
	if n := countFiles(kept); n < 30 {
		t.Errorf("the kept corpus lost inputs: %d of 30", n)
	}
	if _, err := os.Stat(filepath.Join(kept, prunedStamp)); err == nil {
		t.Error("an unfinished merge stamped the corpus as pruned")
	}
}

// childrenCPU is the CPU time (user and system) this process's ended,
// waited-for children (and theirs) have used: what the libFuzzer processes
// a call ran had, as no other test runs beside a test that is not parallel.
func childrenCPU(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
