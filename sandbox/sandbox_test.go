package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/qafleet/fleetd/fleet"
)

func mustOpen(t *testing.T) (*Sandbox, string) {
	t.Helper()
	base := t.TempDir()
	s, err := Open(base, "r-test-1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Abandon)
	return s, base
}

// TestJailEscapes tries every way out of the jail named in the issue.
func TestJailEscapes(t *testing.T) {
	s, base := mustOpen(t)
	outside := filepath.Join(base, "outside.txt")
	if err := os.WriteFile(outside, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	jail := s.JailDir()
	if err := os.Symlink(outside, filepath.Join(jail, "abs-link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../outside.txt", filepath.Join(jail, "rel-link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(base, filepath.Join(jail, "dir-link")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{
		"../outside.txt", "../../outside.txt", "a/../../outside.txt", outside, "/etc/passwd",
		"abs-link", "rel-link", "dir-link/outside.txt", "../ledger.json", "../keys/x",
	} {
		t.Run("read "+name, func(t *testing.T) {
			if b, err := s.ReadFile(name); err == nil {
				t.Fatalf("read %q escaped the jail: %q", name, b)
			}
		})
		t.Run("write "+name, func(t *testing.T) {
			if err := s.WriteFile(name, []byte("pwned")); err == nil {
				t.Fatalf("write %q escaped the jail", name)
			}
		})
	}
	if b, _ := os.ReadFile(outside); string(b) != "secret" {
		t.Errorf("outside file changed to %q", b)
	}
	// Inside works.
	if err := s.WriteFile("src/a.tl", []byte("ok")); err != nil {
		t.Fatal(err)
	}
	if b, err := s.ReadFile("src/../src/a.tl"); err != nil || string(b) != "ok" {
		t.Errorf("inside read = %q, %v", b, err)
	}
	if err := s.WriteFile("big", make([]byte, MaxFileBytes+1)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("oversize write = %v", err)
	}
}

// TestJailSymlinkSwap swaps a checked in-jail file for a symlink to the
// outside while reads race against the swap: no read may ever see the
// outside file.
func TestJailSymlinkSwap(t *testing.T) {
	s, base := mustOpen(t)
	outside := filepath.Join(base, "outside.txt")
	os.WriteFile(outside, []byte("secret"), 0o600)
	target := filepath.Join(s.JailDir(), "f")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			os.Remove(target)
			os.WriteFile(target, []byte("inside"), 0o600)
			os.Remove(target)
			os.Symlink(outside, target)
		}
	}()
	for range 2000 {
		if b, err := s.ReadFile("f"); err == nil && string(b) == "secret" {
			close(stop)
			wg.Wait()
			t.Fatal("a read followed a swapped symlink out of the jail")
		}
		s.WriteFile("f", []byte("x")) // may fail or land inside; never outside
	}
	close(stop)
	wg.Wait()
	if b, _ := os.ReadFile(outside); string(b) != "secret" {
		t.Errorf("outside file changed to %q", b)
	}
}

func TestLedger(t *testing.T) {
	s, base := mustOpen(t)
	n0, err := s.Reserve("0xaa", "k0")
	if err != nil {
		t.Fatal(err)
	}
	if n0 != "qa-r-test-1-0" {
		t.Errorf("first name %q", n0)
	}
	// The reservation is on disk before Reserve returns.
	b, _ := os.ReadFile(filepath.Join(s.Dir(), "ledger.json"))
	if !strings.Contains(string(b), n0) || !strings.Contains(string(b), StateMinting) {
		t.Errorf("ledger on disk lacks the reservation: %s", b)
	}
	if _, err := s.Owned(n0); err != nil {
		t.Errorf("own name refused: %v", err)
	}
	// Names this run did not mint, including look-alikes.
	other, _ := Open(base, "r-test-10")
	defer other.Abandon()
	otherName, _ := other.Reserve("0xbb", "k")
	for _, name := range []string{"alice", "qa-r-test-1-7", otherName, "qa-r-test-1", "QA-r-test-1-0", "qa-r-test-1-0 ", "qa-r-test-1-"} {
		if _, err := s.Owned(name); !errors.Is(err, ErrNotOwned) {
			t.Errorf("Owned(%q) = %v, want ErrNotOwned", name, err)
		}
	}
	if err := s.SetState(n0, StateReleased); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Owned(n0); !errors.Is(err, ErrNotOwned) {
		t.Errorf("released name still owned: %v", err)
	}
	if err := s.SetState("alice", StateReleased); !errors.Is(err, ErrNotOwned) {
		t.Errorf("SetState on a foreign name = %v", err)
	}
	n1, _ := s.Reserve("0xcc", "k1")
	if got := s.Unreleased(); len(got) != 1 || got[0].Name != n1 {
		t.Errorf("Unreleased = %+v", got)
	}
}

func TestCrashedAndClose(t *testing.T) {
	base := t.TempDir()
	live, _ := Open(base, "r-live") // still running: never reported
	defer live.Abandon()
	if !Live(base, "r-live") || Live(base, "r-nope") {
		t.Error("Live misreports")
	}
	crashed, _ := Open(base, "r-crash")
	name, _ := crashed.Reserve("0xaa", "k0")
	os.WriteFile(filepath.Join(crashed.KeysDir(), "k0"), []byte("x"), 0o600)
	crashed.Abandon()
	clean, _ := Open(base, "r-clean")
	if err := clean.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(base, "r-clean"); err == nil {
		t.Error("reopened an existing run dir")
	}
	got, err := FindCrashed(base)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].RunID != "r-crash" || len(got[0].Names) != 1 || got[0].Names[0].Name != name || len(got[0].KeyFiles) != 1 {
		t.Fatalf("FindCrashed = %+v", got)
	}
	// A second reconciler does not get the same run while the first holds it.
	if again, _ := FindCrashed(base); len(again) != 0 {
		t.Errorf("a locked crashed run was reported twice: %+v", again)
	}
	if err := MarkClosed(got[0].Dir); err != nil {
		t.Fatal(err)
	}
	got[0].Release()
	if got, _ := FindCrashed(base); len(got) != 0 {
		t.Errorf("after MarkClosed: %+v", got)
	}
	// Modes: the run dir and keys dir are private.
	for _, d := range []string{filepath.Join(base, "r-crash"), filepath.Join(base, "r-crash", "keys")} {
		if fi, _ := os.Stat(d); fi.Mode().Perm() != 0o700 {
			t.Errorf("%s mode %04o", d, fi.Mode().Perm())
		}
	}
	if _, err := Open(base, "../escape"); err == nil {
		t.Error("run id with a path accepted")
	}
	if id := NewRunID(time.Now()); !ValidRunID(id) {
		t.Errorf("NewRunID produced invalid %q", id)
	}
}

// TestMeterNeverExceeds tries to spend past each budget.
func TestMeterNeverExceeds(t *testing.T) {
	m := NewMeter(fleet.Budget{MaxWrites: 3, MaxTurns: 5, MaxTokens: 1000, MaxWei: 500})
	for _, tc := range []struct {
		r     fleet.Resource
		step  uint64
		limit uint64
	}{{fleet.ResWrites, 1, 3}, {fleet.ResTurns, 2, 5}, {fleet.ResTokens, 300, 1000}, {fleet.ResWei, 200, 500}} {
		var spent uint64
		for range 10 {
			if err := m.Spend(tc.r, tc.step); err != nil {
				var be *fleet.BudgetError
				if !errors.Is(err, fleet.ErrBudget) || !errors.As(err, &be) || be.Resource != tc.r {
					t.Fatalf("%s: refusal %v", tc.r, err)
				}
				continue
			}
			spent += tc.step
		}
		if spent > tc.limit || m.Used(tc.r) != spent {
			t.Errorf("%s: spent %d (meter says %d), limit %d", tc.r, spent, m.Used(tc.r), tc.limit)
		}
	}
	m.Refund(fleet.ResWrites, 1)
	if err := m.Spend(fleet.ResWrites, 1); err != nil {
		t.Errorf("spend after refund: %v", err)
	}
	// Concurrent spenders cannot overshoot either.
	m2 := NewMeter(fleet.Budget{MaxWrites: 50})
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if m2.Spend(fleet.ResWrites, 1) == nil {
				mu.Lock()
				ok++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if ok != 50 {
		t.Errorf("%d concurrent spends succeeded, want exactly 50", ok)
	}
	// Deadline.
	m3 := NewMeter(fleet.Budget{Deadline: time.Minute})
	m3.now = func() time.Time { return m3.start.Add(2 * time.Minute) }
	if err := m3.Spend(fleet.ResTurns, 1); !errors.Is(err, fleet.ErrBudget) {
		t.Errorf("spend after the deadline = %v", err)
	}
	if err := m3.Deadline(); !errors.Is(err, fleet.ErrBudget) {
		t.Errorf("Deadline() = %v", err)
	}
}

func TestExec(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	t.Run("exit code and output", func(t *testing.T) {
		r, err := Exec(ctx, ExecSpec{Argv: []string{"sh", "-c", "echo out; echo err >&2; exit 3"}, Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		if r.ExitCode != 3 || string(r.Stdout) != "out\n" || string(r.Stderr) != "err\n" || r.TimedOut {
			t.Errorf("%+v stdout=%q stderr=%q", r, r.Stdout, r.Stderr)
		}
	})
	t.Run("scrubbed environment", func(t *testing.T) {
		t.Setenv("FLEETD_SECRET_FOR_TEST", "hunter2")
		r, _ := Exec(ctx, ExecSpec{Argv: []string{"sh", "-c", "env"}, Dir: dir})
		if strings.Contains(string(r.Stdout), "hunter2") || !strings.Contains(string(r.Stdout), "HOME="+dir) {
			t.Errorf("environment not scrubbed:\n%s", r.Stdout)
		}
	})
	t.Run("output cap", func(t *testing.T) {
		r, _ := Exec(ctx, ExecSpec{Argv: []string{"sh", "-c", "head -c 100000 /dev/zero"}, Dir: dir, OutputCap: 1000})
		if len(r.Stdout) != 1000 || !r.Truncated {
			t.Errorf("kept %d bytes, truncated=%v", len(r.Stdout), r.Truncated)
		}
	})
	t.Run("signal", func(t *testing.T) {
		r, _ := Exec(ctx, ExecSpec{Argv: []string{"sh", "-c", "kill -SEGV $$"}, Dir: dir})
		if r.Signal != "segmentation fault" {
			t.Errorf("signal %q exit %d", r.Signal, r.ExitCode)
		}
	})
	t.Run("CPU rlimit is told apart from a crash", func(t *testing.T) {
		// A spinning program ends by SIGXCPU at the soft limit; one that
		// ignores SIGXCPU (as the Go runtime does) by SIGKILL at the hard
		// limit. Neither is a timeout, and neither may read as a crash.
		// The wall-clock timeout is far above the 2 CPU-seconds the hard
		// limit allows: at load 45 on 2 cores, 20 s of wall time gave the
		// loop only 1.8 s of CPU and the timeout won.
		for _, script := range []string{"while :; do :; done", `trap "" XCPU; while :; do :; done`} {
			r, err := Exec(ctx, ExecSpec{Argv: []string{"sh", "-c", script}, Dir: dir, Timeout: 3 * time.Minute, CPUSeconds: 1})
			if err != nil {
				t.Fatal(err)
			}
			if !r.CPULimited || r.TimedOut || r.CPUTime < 500*time.Millisecond {
				t.Errorf("%q: cpu_limited=%v timed_out=%v signal=%q cpu=%s", script, r.CPULimited, r.TimedOut, r.Signal, r.CPUTime)
			}
		}
		r, _ := Exec(ctx, ExecSpec{Argv: []string{"sh", "-c", "kill -KILL $$"}, Dir: dir, CPUSeconds: 1})
		if r.CPULimited || r.Signal != "killed" {
			t.Errorf("an instant SIGKILL read as the CPU limit: %+v", r)
		}
	})
	t.Run("stop interrupts, then kills", func(t *testing.T) {
		// A program that handles SIGINT ends on its own terms (exit 7 here);
		// one that ignores it is killed after the grace period.
		stop := make(chan struct{})
		time.AfterFunc(200*time.Millisecond, func() { close(stop) })
		r, err := Exec(ctx, ExecSpec{Argv: []string{"sh", "-c", `trap "echo bye; exit 7" INT; while :; do sleep 0.05; done`}, Dir: dir, Timeout: 20 * time.Second, Stop: stop})
		if err != nil {
			t.Fatal(err)
		}
		if !r.Stopped || r.TimedOut || r.ExitCode != 7 || !strings.Contains(string(r.Stdout), "bye") {
			t.Errorf("handled SIGINT: stopped=%v timed_out=%v exit=%d stdout=%q", r.Stopped, r.TimedOut, r.ExitCode, r.Stdout)
		}
		stop2 := make(chan struct{})
		time.AfterFunc(200*time.Millisecond, func() { close(stop2) }) // after the trap is set
		start := time.Now()
		r, err = Exec(ctx, ExecSpec{Argv: []string{"sh", "-c", `trap "" INT; while :; do sleep 0.05; done`}, Dir: dir, Timeout: 20 * time.Second, Stop: stop2, StopGrace: 300 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if !r.Stopped || r.Signal != "killed" || time.Since(start) > 10*time.Second {
			t.Errorf("ignored SIGINT: stopped=%v signal=%q after %s", r.Stopped, r.Signal, time.Since(start))
		}
	})
	t.Run("forked child dies with the timeout", func(t *testing.T) {
		pidFile := filepath.Join(dir, "child.pid")
		start := time.Now()
		r, err := Exec(ctx, ExecSpec{
			Argv:    []string{"sh", "-c", fmt.Sprintf("sleep 300 & echo $! > %s; wait", pidFile)},
			Dir:     dir,
			Timeout: 300 * time.Millisecond,
		})
		if err != nil {
			t.Fatal(err)
		}
		if !r.TimedOut || time.Since(start) > 5*time.Second {
			t.Fatalf("timed out=%v after %s", r.TimedOut, time.Since(start))
		}
		b, err := os.ReadFile(pidFile)
		if err != nil {
			t.Fatal(err)
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		deadline := time.Now().Add(3 * time.Second)
		for alive(pid) {
			if time.Now().After(deadline) {
				syscall.Kill(pid, syscall.SIGKILL)
				t.Fatalf("child %d outlived the timeout", pid)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	t.Run("non-UTF-8 output", func(t *testing.T) {
		r, _ := Exec(ctx, ExecSpec{Argv: []string{"sh", "-c", `printf 'bad \377\376 bytes' >&2`}, Dir: dir})
		s, _ := Text(r.Stderr, 100)
		if s != "bad \uFFFD bytes" && s != "bad \uFFFD\uFFFD bytes" {
			t.Errorf("Text = %q", s)
		}
	})
	t.Run("missing program", func(t *testing.T) {
		if _, err := Exec(ctx, ExecSpec{Argv: []string{"/nonexistent/compiler"}, Dir: dir}); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("missing program: %v", err)
		}
	})
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(b))
	return len(fields) > 2 && fields[2] != "Z"
}

func TestText(t *testing.T) {
	s, tr := Text([]byte("héllo world"), 5)
	if !tr || s != "world" {
		t.Errorf("Text tail = %q %v", s, tr)
	}
	s, tr = Text([]byte("aé"), 1) // cut inside é: the partial rune is dropped
	if !tr || s != "" {
		t.Errorf("Text partial rune = %q", s)
	}
}

// TestLedgerNotesAFailedRelease: a cleanup that could not release a name
// records why and how often it tried; the name stays minted (reconcile
// releases it), and a crashed run's ledger reads the note back.
func TestLedgerNotesAFailedRelease(t *testing.T) {
	s, base := mustOpen(t)
	name, err := s.Reserve("0xaa", "k0.key")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetState(name, StateMinted); err != nil {
		t.Fatal(err)
	}
	if err := s.NoteRelease(name, 4, "estimate gas: unexpected EOF"); err != nil {
		t.Fatal(err)
	}
	if err := s.NoteRelease("qa-r-test-1-9", 1, "x"); !errors.Is(err, ErrNotOwned) {
		t.Errorf("note on a name not in the ledger: %v, want ErrNotOwned", err)
	}
	s.Abandon()
	crashed, err := FindCrashed(base)
	if err != nil || len(crashed) != 1 {
		t.Fatalf("FindCrashed = %d, %v", len(crashed), err)
	}
	defer crashed[0].Release()
	l, err := crashed[0].Ledger()
	if err != nil {
		t.Fatal(err)
	}
	e := l.Entries()[0]
	if e.State != StateMinted || e.ReleaseAttempts != 4 || e.ReleaseError != "estimate gas: unexpected EOF" {
		t.Errorf("entry after a failed release: %+v", e)
	}
	if len(l.Unreleased()) != 1 {
		t.Error("a name whose release failed is not listed as unreleased")
	}
}

// TestClosed: a sandbox is closed once Close wrote its marker, not while
// open, not when abandoned, and an invalid or missing run id is not.
func TestClosed(t *testing.T) {
	base := t.TempDir()
	for _, id := range []string{"r-test-1", "r-test-2"} {
		s, err := Open(base, id)
		if err != nil {
			t.Fatal(err)
		}
		if Closed(base, id) {
			t.Errorf("%s: closed while open", id)
		}
		if id == "r-test-1" {
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		} else {
			s.Abandon()
		}
	}
	if !Closed(base, "r-test-1") {
		t.Error("r-test-1: not closed after Close")
	}
	if Closed(base, "r-test-2") {
		t.Error("r-test-2: closed after Abandon")
	}
	if Closed(base, "r-missing") || Closed(base, "../r-test-1") {
		t.Error("a missing or invalid run id reads as closed")
	}
}

// TestDiscard: a discarded sandbox (its run never started) is gone, so
// no reconcile finds it crashed, and its lock is free.
func TestDiscard(t *testing.T) {
	base := t.TempDir()
	s, err := Open(base, "r-test-1")
	if err != nil {
		t.Fatal(err)
	}
	s.Discard()
	if _, err := os.Stat(filepath.Join(base, "r-test-1")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the discarded sandbox is still there: %v", err)
	}
	if c, err := FindCrashed(base); err != nil || len(c) != 0 {
		t.Errorf("FindCrashed after Discard: %+v, %v; want none", c, err)
	}
	if Live(base, "r-test-1") {
		t.Error("a discarded sandbox reads as live")
	}
}

// TestOpenIsLockedOnceVisible: a reconciler looking for crashed runs
// (FindCrashed, in another process: a probe's recovery at its start or
// its stop) while a run opens its sandbox never takes the new sandbox for
// a crashed one. Before, Open made the run's directory and locked it
// after: a FindCrashed in between locked it first, and the run failed
// ("sandbox r-…: cannot lock: <nil>", ci33's TestFaultHarness, a probe
// exiting 2), or had its fresh sandbox reconciled; and a run that closed
// between FindCrashed's look at its marker and its lock was taken for a
// crashed one.
func TestOpenIsLockedOnceVisible(t *testing.T) {
	base := t.TempDir()
	stop := make(chan struct{})
	found := make(chan []string, 1)
	go func() {
		var ids []string
		for {
			select {
			case <-stop:
				found <- ids
				return
			default:
			}
			cs, _ := FindCrashed(base)
			for _, c := range cs {
				ids = append(ids, c.RunID)
				c.Release()
			}
		}
	}()
	var errs []error
	for i := range 1000 {
		s, err := Open(base, fmt.Sprintf("r-test-%d", i))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := s.Close(); err != nil {
			errs = append(errs, err)
		}
		// Out of the reconciler's sight at once, then gone: keeps its look
		// short, so it looks often.
		gone := filepath.Join(base, ".gone-"+s.RunID)
		if err := os.Rename(s.Dir(), gone); err == nil {
			os.RemoveAll(gone)
		}
	}
	close(stop)
	if ids := <-found; len(ids) > 0 {
		t.Errorf("FindCrashed took %d opening sandboxes for crashed runs, the first %s", len(ids), ids[0])
	}
	if len(errs) > 0 {
		t.Errorf("%d of 1000 opens failed beside a reconciler, the first: %v", len(errs), errs[0])
	}
}
