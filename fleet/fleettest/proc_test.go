package fleettest

import (
	"os"
	"strings"
	"testing"
	"time"
)

// TestProcessCPU: a process's CPU time grows as it computes; a process
// that does not exist and a malformed stat line are errors naming why.
func TestProcessCPU(t *testing.T) {
	before, err := ProcessCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	var after time.Duration
	for x := 0; after <= before; x++ { // compute until a tick is counted
		for i := range 1_000_000 {
			x ^= i
		}
		if after, err = ProcessCPU(os.Getpid()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ProcessCPU(1 << 30); err == nil {
		t.Error("no error for a process that does not exist")
	}
	for line, want := range map[string]string{
		"1 (a b) S":                            "fields after the command name",
		"1 a b S 1":                            "no command name",
		"1 (x) S 0 0 0 0 0 0 0 0 0 0 -5 7 0 0": "utime",
		"1 (x)) S 0 0 0 0 0 0 0 0 0 0 5 z 0 0": "stime",
	} {
		if _, err := statCPU([]byte(line)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("statCPU(%q) = %v, want an error naming %q", line, err, want)
		}
	}
	if got, err := statCPU([]byte("42 (gi) ta) S 1 2 3 4 5 6 7 8 9 10 150 50 0 0")); err != nil || got != 2*time.Second {
		t.Errorf("statCPU = %s, %v; want 2s", got, err)
	}
}

// FuzzStatCPU: any stat line is parsed or refused, never a panic or a
// negative time.
func FuzzStatCPU(f *testing.F) {
	f.Add([]byte("42 (gitea) S 1 2 3 4 5 6 7 8 9 10 150 50 0 0 20 0 11 0 100 0 0"))
	f.Add([]byte("1 (a) b) R 0 0 0 0 0 0 0 0 0 0 1 1"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if d, err := statCPU(b); err == nil && d < 0 {
			t.Fatalf("statCPU(%q) = %s", b, d)
		}
	})
}

// TestStartWait: within Wall the wait goes on; past it, it goes on for a
// process that has had little CPU and ends for one that has had its CPU
// budget, one that is gone, and any past Starved; the phrase says why.
func TestStartWait(t *testing.T) {
	self := os.Getpid()
	long := time.Now().Add(-time.Minute)
	if over, _ := (StartWait{Wall: time.Hour, Starved: time.Hour, CPU: 0}).Over(1<<30, long); over {
		t.Error("a wait within Wall ended")
	}
	if over, why := (StartWait{Wall: time.Second, Starved: time.Hour, CPU: time.Hour}).Over(self, long); over {
		t.Errorf("a starved process's wait ended: %s", why)
	}
	for name, c := range map[string]struct {
		w   StartWait
		pid int
		why string
	}{
		"had its CPU":  {StartWait{Wall: time.Second, Starved: time.Hour, CPU: 0}, self, "of CPU time"},
		"gone":         {StartWait{Wall: time.Second, Starved: time.Hour, CPU: time.Hour}, 1 << 30, "/proc/"},
		"past Starved": {StartWait{Wall: time.Second, Starved: 2 * time.Second, CPU: time.Hour}, self, "within 1m0s"},
	} {
		if over, why := c.w.Over(c.pid, long); !over || !strings.Contains(why, c.why) {
			t.Errorf("%s: Over = %v, %q; want true naming %q", name, over, why, c.why)
		}
	}
	// Counted from cpu0, the CPU this process has had is under a budget
	// it had already spent in all.
	var cpu time.Duration
	for x := 0; cpu == 0; x++ { // compute until a tick is counted
		for i := range 1_000_000 {
			x ^= i
		}
		var err error
		if cpu, err = ProcessCPU(self); err != nil {
			t.Fatal(err)
		}
	}
	spent := StartWait{Wall: time.Second, Starved: time.Hour, CPU: cpu}
	if over, _ := spent.Over(self, long); !over {
		t.Error("Over: a process that had its CPU budget is waited for")
	}
	if over, why := spent.OverFrom(self, long, cpu); over {
		t.Errorf("OverFrom: a process with no CPU since cpu0 is not waited for: %s", why)
	}
}

// TestStartWaitUntil: a condition that holds ends the wait at once; one
// that never holds ends it past Wall for a process that had its CPU (this
// one, computing) or is gone, with the phrase saying why; and the wait goes
// on past Wall while the process has had under CPU since the wait began,
// however much it had used before.
func TestStartWaitUntil(t *testing.T) {
	self := os.Getpid()
	if err := (StartWait{Wall: 0, Starved: 0, CPU: 0}).Until(self, func() bool { return true }); err != nil {
		t.Errorf("a condition that holds: %v", err)
	}
	busy := func() bool { // burns CPU until a tick is counted, never holds
		cpu, _ := ProcessCPU(self)
		for x := 0; ; x++ {
			for i := range 1_000_000 {
				x ^= i
			}
			if now, _ := ProcessCPU(self); now > cpu {
				return false
			}
		}
	}
	err := (StartWait{Wall: 100 * time.Millisecond, Starved: time.Hour, CPU: 10 * time.Millisecond}).Until(self, busy)
	if err == nil || !strings.Contains(err.Error(), "of CPU time") {
		t.Errorf("a process that had its CPU without the condition: %v, want an error naming its CPU time", err)
	}
	err = (StartWait{Wall: 100 * time.Millisecond, Starved: time.Hour, CPU: time.Hour}).Until(1<<30, func() bool { return false })
	if err == nil || !strings.Contains(err.Error(), "/proc/") {
		t.Errorf("a process that is gone: %v, want an error naming /proc", err)
	}
	// Idle (sleeping between polls) past Wall, having used twice the CPU
	// budget before the wait: still waited for, until the condition holds.
	// (Idle, the process is charged a 10 ms tick now and then, not five.)
	for spent, _ := ProcessCPU(self); spent < 100*time.Millisecond; spent, _ = ProcessCPU(self) {
		busy()
	}
	start := time.Now()
	polls := 0
	err = (StartWait{Wall: 100 * time.Millisecond, Starved: time.Hour, CPU: 50 * time.Millisecond}).Until(self, func() bool {
		polls++
		return time.Since(start) > 400*time.Millisecond
	})
	if err != nil || polls < 3 {
		t.Errorf("an idle process past Wall: %v after %d polls, want waited for until the condition held", err, polls)
	}
}
