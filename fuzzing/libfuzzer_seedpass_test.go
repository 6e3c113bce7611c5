package fuzzing

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSplitSeedPass: the first batch is the smallest inputs within both
// bounds, the rest is moved aside, smallest first, and the largest size
// is the largest of all.
func TestSplitSeedPass(t *testing.T) {
	dir, deferred := t.TempDir(), filepath.Join(t.TempDir(), "deferred")
	// 300 inputs of 1..300 bytes, and 3 of 100 KiB: the count bound cuts
	// the small ones at firstPassInputs, the big ones wait.
	for i := 1; i <= 300; i++ {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("s%03d", i)), bytes.Repeat([]byte{'x'}, i), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("big%d", i)), make([]byte, 100<<10+i), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	rest, largest, err := splitSeedPass(dir, deferred)
	if err != nil {
		t.Fatal(err)
	}
	if n := countFiles(dir); n != firstPassInputs {
		t.Errorf("first batch: %d inputs, want %d", n, firstPassInputs)
	}
	if len(rest) != 303-firstPassInputs || countFiles(deferred) != len(rest) {
		t.Fatalf("deferred %d (%d files), want %d", len(rest), countFiles(deferred), 303-firstPassInputs)
	}
	for i := 1; i < len(rest); i++ {
		if rest[i].size < rest[i-1].size {
			t.Fatalf("deferred not smallest first: %v before %v", rest[i-1], rest[i])
		}
	}
	if rest[0].name != fmt.Sprintf("s%03d", firstPassInputs+1) || largest != 100<<10+2 {
		t.Errorf("first deferred %v, largest %d", rest[0], largest)
	}

	// The byte bound: three inputs of 40% of it: two fit, the third
	// waits.
	dir2 := t.TempDir()
	for i := range 3 {
		if err := os.WriteFile(filepath.Join(dir2, fmt.Sprintf("b%d", i)), make([]byte, firstPassBytes*2/5), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	rest, _, err = splitSeedPass(dir2, filepath.Join(t.TempDir(), "d"))
	if err != nil || len(rest) != 1 || countFiles(dir2) != 2 {
		t.Errorf("byte bound: %d deferred, %d first, err %v", len(rest), countFiles(dir2), err)
	}
	// One input larger than the bound still runs first.
	dir3 := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir3, "huge"), make([]byte, firstPassBytes+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if rest, _, err = splitSeedPass(dir3, filepath.Join(t.TempDir(), "d")); err != nil || len(rest) != 0 || countFiles(dir3) != 1 {
		t.Errorf("one huge input: %d deferred, err %v", len(rest), err)
	}
}

// newTestFeeder stages n small inputs (in000, in001, ...) in a deferred
// directory and returns a feeder of them into an empty corpus directory.
func newTestFeeder(t *testing.T, n int) (f *feeder, from, to string) {
	t.Helper()
	from, to = t.TempDir(), t.TempDir()
	var queue []stagedInput
	for i := range n {
		name := fmt.Sprintf("in%03d", i)
		if err := os.WriteFile(filepath.Join(from, name), []byte(name), 0o600); err != nil {
			t.Fatal(err)
		}
		queue = append(queue, stagedInput{name, int64(len(name))})
	}
	return &feeder{from: from, to: to, queue: queue, fed: map[string]bool{}}, from, to
}

// TestFeederBatches: a batch is fed when libFuzzer has read the last one
// (its access time moved), not by the clock; it doubles when read at
// once, halves when read late and then waits as long again; it is dated
// ahead so libFuzzer's next
// reread lists it; the queue empties in order.
func TestFeederBatches(t *testing.T) {
	f, from, to := newTestFeeder(t, 300)
	before := time.Now()
	if err := f.feed(); err != nil {
		t.Fatal(err)
	}
	first := feedMinInputs * 4
	if countFiles(to) != first || f.left() != 300-first || !f.fed["in000"] || f.fed["in299"] {
		t.Fatalf("first batch: %d in the corpus, %d left, fed %d", countFiles(to), f.left(), len(f.fed))
	}
	for _, p := range []string{to, filepath.Join(to, "in000")} {
		info, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if !info.ModTime().After(before.Add(500 * time.Millisecond)) {
			t.Errorf("%s dated %s, not ahead of %s", p, info.ModTime(), before)
		}
	}
	if f.taken(time.Now()) {
		t.Fatal("a batch nobody read counts as taken")
	}
	read := func(name string) {
		if _, err := os.ReadFile(filepath.Join(to, name)); err != nil {
			t.Fatal(err)
		}
	}
	read(fmt.Sprintf("in%03d", first-1)) // libFuzzer reads every file of a reread before it runs one
	if !f.taken(time.Now()) || f.n != 2*first {
		t.Fatalf("read at once: taken %v, next batch %d, want %d", f.taken(time.Now()), f.n, 2*first)
	}
	if err := f.feed(); err != nil {
		t.Fatal(err)
	}
	if countFiles(to) != 3*first {
		t.Fatalf("second batch: %d in the corpus, want %d", countFiles(to), 3*first)
	}
	read(fmt.Sprintf("in%03d", 3*first-1))
	lateAt := f.lastAt.Add(3 * time.Second)
	if f.taken(lateAt) || f.n != first {
		t.Fatalf("read late: fed at once, or next batch %d, want %d", f.n, first)
	}
	// Read 3 s after it was fed: 1.5 s of that was the batch before it
	// running, owed to mutation before the next.
	if f.taken(lateAt.Add(time.Second)) || !f.taken(lateAt.Add(1600*time.Millisecond)) {
		t.Fatal("after a late read, the next batch not held for the mutation owed")
	}
	// Never read (a file system without access times): fed anyway after
	// feedWait.
	if err := f.feed(); err != nil {
		t.Fatal(err)
	}
	if f.taken(f.lastAt.Add(feedWait / 2)) {
		t.Fatal("an unread batch taken before feedWait")
	}
	if !f.taken(f.lastAt.Add(feedWait + time.Second)) {
		t.Fatal("an unread batch still waited on after feedWait")
	}
	for f.left() > 0 {
		if err := f.feed(); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.feed(); err != nil { // nothing left: no error
		t.Fatal(err)
	}
	if countFiles(to) != 300 || countFiles(from) != 0 || f.left() != 0 || len(f.fed) != 300 {
		t.Errorf("after the queue: %d in the corpus, %d deferred, %d left", countFiles(to), countFiles(from), f.left())
	}

	// run stops when told, with batches still queued.
	from2, to2 := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(from2, "x"), []byte("x"), 0o600)
	f2 := &feeder{from: from2, to: to2, queue: []stagedInput{{"x", 1}}, fed: map[string]bool{}}
	stop := make(chan struct{})
	done := f2.run(stop)
	close(stop)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the feeder did not stop")
	}
}

// TestFeederStampsMoveOn: libFuzzer's reread lists the corpus directory
// only when its modification second is past the one the last reread
// recorded. A batch fed within a second of the last, or one whose
// directory libFuzzer's own write dated back to the present, was passed
// over until something else moved the directory on (up to feedWait: the
// seed pass took 34 s instead of 7 on TestLibFuzzerSeedPass's target).
func TestFeederStampsMoveOn(t *testing.T) {
	f, _, to := newTestFeeder(t, 100)
	dirSecond := func() int64 {
		info, err := os.Stat(to)
		if err != nil {
			t.Fatal(err)
		}
		return info.ModTime().Unix()
	}
	if err := f.feed(); err != nil {
		t.Fatal(err)
	}
	first := dirSecond() // what libFuzzer's reread records
	if err := f.feed(); err != nil {
		t.Fatal(err)
	}
	if second := dirSecond(); second <= first {
		t.Fatalf("a batch fed at once dated to second %d, not past the last reread's %d", second, first)
	}
	// libFuzzer writes an input of its own: the directory is dated now,
	// behind the stamp its reread recorded.
	recorded := dirSecond()
	now := time.Now()
	if err := os.Chtimes(to, now, now); err != nil {
		t.Fatal(err)
	}
	if f.taken(f.lastAt.Add(restampAfter / 2)) {
		t.Fatal("an unread batch taken")
	}
	if dirSecond() > recorded {
		t.Fatal("dated again before restampAfter")
	}
	if f.taken(f.lastAt.Add(restampAfter + 100*time.Millisecond)) {
		t.Fatal("an unread batch taken")
	}
	if got := dirSecond(); got <= recorded {
		t.Errorf("an unread batch's directory left at second %d, not past the recorded %d", got, recorded)
	}
}

// TestLibFuzzerSeedPass: a target with 601 seeds whose bug only the
// largest (400,001 bytes) reaches. Before the bounded seed pass that seed
// was dropped (over 64 KiB) and the rest ran twice (merge, then fuzz);
// now the workers start on the smallest 64, the others are fed in while
// they fuzz, the largest whole (-max_len), and the session finds the bug.
func TestLibFuzzerSeedPass(t *testing.T) {
	clang := MustLibFuzzer(t)
	if testing.Short() {
		t.Skip("builds an instrumented binary and fuzzes for up to 3 min")
	}
	g := mustGoTarget(t, "magicmod", "./seedpass", "FuzzCheck")
	lt := LibFuzzerTarget{Go: g, Clang: clang, CacheDir: t.TempDir()}
	// 7 s at low load; StopAtFirst ends it then, and the rest is headroom
	// for a loaded CI machine.
	rep, err := RunLibFuzzer(context.Background(), lt, Session{Duration: 3 * time.Minute, StopAtFirst: true}, LibFuzzerOptions{Minimize: -1})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Crashers) == 0 || !strings.Contains(rep.Crashers[0].State, "the largest seed ran whole") {
		t.Fatalf("the largest seed's bug not found: crashers %+v, note %q", rep.Crashers, rep.Note)
	}
	if !strings.Contains(rep.Note, "seed pass: the workers started on the 64 smallest of 601 staged inputs; the other 537 are fed") {
		t.Errorf("note %q does not describe the seed pass", rep.Note)
	}
	if strings.Contains(rep.Note, "merge") {
		t.Errorf("a session with nothing kept merged: %q", rep.Note)
	}
	if c := rep.Crashers[0]; len(c.Raw) != 400001 {
		t.Errorf("the crasher is %d bytes, want the whole 400,001-byte seed", len(c.Raw))
	}
	t.Logf("found at %s after %d execs, started from %d: %s", rep.Crashers[0].At, rep.Execs, rep.StartedFrom, rep.Note)
}

// TestLibFuzzerSeedHang: a target that hangs on one of its seeds (10,000
// '[', as jsonparser's FuzzDeleteNative does) reports that seed as the
// hang's input, confirmed by a replay that times out too, and a state
// that says how long the input is (a hang's Shape masks the bytes of a
// []byte input: it read as the empty input).
func TestLibFuzzerSeedHang(t *testing.T) {
	clang := MustLibFuzzer(t)
	if testing.Short() {
		t.Skip("builds an instrumented binary")
	}
	g := mustGoTarget(t, "magicmod", "./hangseed", "FuzzDepth")
	lt := LibFuzzerTarget{Go: g, Clang: clang, CacheDir: t.TempDir(), InputTimeout: 2 * time.Second}
	rep, err := RunLibFuzzer(context.Background(), lt, Session{Duration: 30 * time.Second, StopAtFirst: true}, LibFuzzerOptions{Minimize: -1})
	if err != nil {
		t.Fatal(err)
	}
	var hang *Crasher
	for i := range rep.Crashers {
		if rep.Crashers[i].Outcome == TimedOut {
			hang = &rep.Crashers[i]
		}
	}
	if hang == nil {
		t.Fatalf("no hang: crashers %+v, note %q", rep.Crashers, rep.Note)
	}
	want := bytes.Repeat([]byte("["), 10000)
	if !bytes.Equal(hang.Raw, want) {
		t.Errorf("the hang's input is %d bytes %.40q, want the 10,000-byte seed", len(hang.Raw), hang.Raw)
	}
	if want := "hang: go test fuzz v1 []byte(\"\") (10000 bytes)"; hang.State != want {
		t.Errorf("state %q, want %q", hang.State, want)
	}
	again, err := ReplayLibFuzzer(context.Background(), lt, hang.Input, 2*time.Second)
	if err != nil || again.Outcome != TimedOut {
		t.Errorf("the hang's input replayed as %s (%v)", again.Outcome, err)
	}
	short, err := ReplayLibFuzzer(context.Background(), lt, FormatGoCorpus(GoValue{Type: "[]byte", Bytes: want[:9999]}), 10*time.Second)
	if err != nil || short.Outcome != Compiled {
		t.Errorf("9,999 '[' replayed as %s (%v)", short.Outcome, err)
	}
}

// TestSeedPassRounds: sessions that each reach only part of the deferred
// inputs feed, across sessions, the ones not fed yet first, so the largest
// seeds run too; once all have run, a new round starts in size order.
func TestSeedPassRounds(t *testing.T) {
	kept := t.TempDir()
	names := []string{"a", "b", "c", "d", "e"}
	session := func() []string {
		t.Helper()
		from, to := t.TempDir(), t.TempDir()
		var rest []stagedInput
		for i, n := range names {
			if err := os.WriteFile(filepath.Join(from, n), bytes.Repeat([]byte(n), i+1), 0o600); err != nil {
				t.Fatal(err)
			}
			rest = append(rest, stagedInput{n, int64(i + 1)})
		}
		queue, before := fedLast(rest, readFedBefore(kept))
		f := &feeder{from: from, to: to, queue: queue, fed: map[string]bool{}, before: before}
		var got []string
		for range 2 { // the session's time reaches two batches of one
			batch := f.queue[:1]
			got = append(got, batch[0].name)
			f.queue = f.queue[1:]
			f.fed[batch[0].name] = true
		}
		if err := writeFedBefore(kept, f); err != nil {
			t.Fatal(err)
		}
		return got
	}
	var all []string
	for range 4 {
		all = append(all, strings.Join(session(), ""))
	}
	if got := strings.Join(all, " "); got != "ab cd ea ab" {
		t.Errorf("fed per session %q, want %q", got, "ab cd ea ab")
	}
}

// TestLibFuzzerSlowSetup: a target whose setup outlasts the describe
// run's bound fails the build with that said, not as "setup failed
// (signal killed)".
func TestLibFuzzerSlowSetup(t *testing.T) {
	clang := MustLibFuzzer(t)
	if testing.Short() {
		t.Skip("builds an instrumented binary")
	}
	old := describeTimeout
	describeTimeout = 3 * time.Second
	t.Cleanup(func() { describeTimeout = old })
	g := mustGoTarget(t, "magicmod", "./slowsetup", "FuzzSlow")
	lt := LibFuzzerTarget{Go: g, Clang: clang, CacheDir: t.TempDir()}
	_, err := lt.build(context.Background())
	if err == nil || !strings.Contains(err.Error(), "FuzzSlow setup (its body before f.Fuzz: the seeds it adds) did not finish in 3s") {
		t.Fatalf("build error %v", err)
	}
}
