package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fixtures/testbed"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/sandbox"
	"github.com/qafleet/fleetd/trajectory"
)

// TestMain lets the test binary act as the fleetd binary for tests that need
// a real process to kill: FLEETD_TEST_MAIN=1 runs Main with the arguments.
func TestMain(m *testing.M) {
	if os.Getenv("FLEETD_TEST_MAIN") == "1" {
		if os.Getenv(leakPerRunEnv) == "1" {
			testHookRunEnded = func() { go func() { select {} }() } // one goroutine per run, never to end
		}
		ctx, cancel := context.WithCancel(context.Background())
		sig := make(chan os.Signal, 1)
		signalNotify(sig)
		go func() { <-sig; cancel() }()
		os.Exit(Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	code := m.Run()
	printFaultTally(os.Stdout)
	os.Exit(code)
}

// fleetFixture is a dev chain and the testbed living in the test process, and
// a demo-style config pointing a daemon at them.
type fleetFixture struct {
	dataDir string
	config  string
	dn      *testbed.Devnet
	tb      *testbed.Testbed
}

func newFleetFixture(t testing.TB, dial fleet.Dial, fast map[string]fleet.Trigger) *fleetFixture {
	t.Helper()
	f := &fleetFixture{dataDir: t.TempDir()}
	ctx := context.Background()
	var err error
	if f.dn, err = testbed.StartDevnet(ctx, f.dataDir, "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.dn.Close)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The testbed's compiler is this test binary acting as fleetd.
	wrapper := filepath.Join(t.TempDir(), "tlc")
	os.WriteFile(wrapper, []byte(fmt.Sprintf("#!/bin/sh\nFLEETD_TEST_MAIN=1 exec %q testbed compile \"$@\"\n", self)), 0o755)
	if f.tb, err = testbed.Serve(ctx, testbed.Config{RPC: f.dn.Info.RPC, Sponsor: f.dn.Sponsor, Compiler: []string{wrapper, "{src}"},
		CorpusDir: filepath.Join(f.dataDir, "testbed", "corpus")}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.tb.Close() })
	small := map[string]fleet.Budget{"fuzz": {MaxTurns: 40}, "perf": {MaxTurns: 30}}
	if f.config, err = writeDemoConfig(f.dataDir, f.dn.Info, f.tb, fast, small); err != nil {
		t.Fatal(err)
	}
	if _, err := fleet.NewControl(f.dataDir).SetDial(dial, "test", "test"); err != nil {
		t.Fatal(err)
	}
	return f
}

// checkInvariants verifies what must hold whenever no daemon runs: every run
// record has its header first and footer last, no name a run minted is still
// registered, no throwaway key holds more than dust, and every finding a
// run record acknowledged is on chain.
func (f *fleetFixture) checkInvariants(t *testing.T) (runs, findings int) {
	t.Helper()
	ctx := context.Background()
	cl, err := chain.Dial(ctx, f.dn.Info.RPC, chain.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	reg := cl.Registry(mustParseAddr(t, f.tb.Registry()))

	onChain := map[string]bool{}
	fleetKey, _ := chain.LoadKey(f.dn.Info.FleetKeyFile)
	if _, err := cl.FeedbackLog(mustParseAddr(t, f.dn.Info.FeedbackLog)).Scan(ctx, 0, func(p []chain.Entry) error {
		for _, e := range p {
			if e.Sender != fleetKey.Address() {
				continue
			}
			if fd, err := fleet.Parse(e.Text); err == nil {
				onChain[fd.Fingerprint] = true
				findings++
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	files, _ := filepath.Glob(filepath.Join(f.dataDir, trajectory.RunsDir, "*.jsonl"))
	for _, file := range files {
		run, err := trajectory.ReadAll(file)
		if err != nil {
			t.Errorf("%s: %v", filepath.Base(file), err)
			continue
		}
		runs++
		if run.Footer == nil {
			t.Errorf("%s: no footer", filepath.Base(file))
		}
		for _, turn := range run.Turns() {
			if turn.ProposedAction == nil || turn.ProposedAction.Tool != "qa_report" || turn.ExecutedAction == nil {
				continue
			}
			var res struct {
				OK     bool   `json:"ok"`
				Status string `json:"status"`
				FP     string `json:"fp"`
			}
			raw, _ := turn.Result.(json.RawMessage)
			json.Unmarshal(raw, &res)
			if res.OK && (res.Status == "posted" || res.Status == "queued") && !onChain[res.FP] {
				t.Errorf("%s turn %d: finding %s was acknowledged (%s) but is not on chain", filepath.Base(file), turn.Index, res.FP, res.Status)
			}
		}
	}

	dust := big.NewInt(21_000 * 20_000_000_000)
	dirs, _ := filepath.Glob(filepath.Join(f.dataDir, "qa-sandbox", "r-*"))
	for _, dir := range dirs {
		if _, err := os.Stat(filepath.Join(dir, "closed")); err != nil {
			t.Errorf("%s: sandbox not closed", filepath.Base(dir))
		}
		b, _ := os.ReadFile(filepath.Join(dir, "ledger.json"))
		var ledger []sandbox.LedgerEntry
		json.Unmarshal(b, &ledger)
		for _, e := range ledger {
			if owner, err := reg.OwnerOf(ctx, e.Name); err != nil || !owner.IsZero() {
				t.Errorf("%s still registered to %s (%v)", e.Name, owner, err)
			}
		}
		keys, _ := filepath.Glob(filepath.Join(dir, "keys", "*.key"))
		for _, kf := range keys {
			k, err := chain.LoadKey(kf)
			if err != nil {
				t.Error(err)
				continue
			}
			if bal, _ := cl.Balance(ctx, k.Address()); bal.Cmp(dust) > 0 {
				t.Errorf("throwaway key %s still holds %s wei", k.Address(), bal)
			}
		}
	}
	return runs, findings
}

func mustParseAddr(t *testing.T, s string) fleet.Address {
	t.Helper()
	a, err := fleet.ParseAddress(s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestDaemonEndToEnd runs the real daemon in-process against the dev chain
// and the testbed for a bounded time at the exercise rung.
func TestDaemonEndToEnd(t *testing.T) {
	t.Parallel() // its own chain and data dir; long, mostly waiting: overlaps the others
	if testing.Short() {
		t.Skip("runs the daemon for ~25s")
	}
	f := newFleetFixture(t, fleet.Exercise, map[string]fleet.Trigger{
		"smoke": {Every: 3 * time.Second}, "ux": {Every: 4 * time.Second}, "security": {Every: 5 * time.Second},
		"perf": {Every: 6 * time.Second}, "fuzz": {Every: 7 * time.Second},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	var out, errb syncBuffer
	code := Main(ctx, []string{"run", "--config", f.config}, strings.NewReader(""), &out, &errb)
	if code != 0 {
		t.Fatalf("fleetd run exited %d:\n%s", code, tail(errb.String(), 30))
	}
	if !strings.Contains(out.String(), `"http":"http://127.0.0.1:`) {
		t.Errorf("no http line: %q", out.String())
	}
	runs, findings := f.checkInvariants(t)
	if runs < 3 || findings == 0 {
		t.Errorf("%d runs and %d findings in 25s; logs:\n%s", runs, findings, tail(errb.String(), 30))
	}
	t.Logf("%d runs, %d findings on chain", runs, findings)
}

// TestCrashSafety kills the daemon process with SIGKILL at random points,
// restarts it, and checks the invariants after every restart.
func TestCrashSafety(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts the daemon 20 times")
	}
	// Runs start within a second of a daemon start, so kills land mid-run,
	// often mid-mint (qa_create is the smoke playbook's first call).
	f := newFleetFixture(t, fleet.Exercise, map[string]fleet.Trigger{
		"smoke": {Every: time.Second}, "security": {Every: 1500 * time.Millisecond}, "ux": {Every: 2 * time.Second},
		"fuzz": {Every: 2 * time.Second}, "perf": {Every: time.Hour},
	})
	self, _ := os.Executable()
	rng := rand.New(rand.NewPCG(1, 2))
	start := func() (*exec.Cmd, *bufio.Reader) {
		cmd := exec.Command(self, "run", "--config", f.config, "--log-level", "warn")
		cmd.Env = append(os.Environ(), "FLEETD_TEST_MAIN=1")
		stdout, _ := cmd.StdoutPipe()
		cmd.Stderr = io.Discard
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd, bufio.NewReader(stdout)
	}
	waitUp := func(r *bufio.Reader) {
		line, err := r.ReadString('\n')
		if err != nil || !strings.Contains(line, "http") {
			t.Fatalf("daemon did not come up: %q %v", line, err)
		}
	}
	kills := 0
	for i := range 20 {
		cmd, r := start()
		waitUp(r)
		time.Sleep(time.Duration(1000+rng.IntN(5000)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		kills++
		// Restart: reconciliation and the outbox flush happen at start; then
		// stop it gracefully before it starts anything new worth killing.
		cmd, r = start()
		waitUp(r)
		cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("cycle %d: graceful stop after restart: %v", i, err)
		}
		f.checkInvariants(t)
		if t.Failed() {
			t.Fatalf("invariants broken after kill %d", kills)
		}
	}
	runs, findings := f.checkInvariants(t)
	recovered := 0
	files, _ := filepath.Glob(filepath.Join(f.dataDir, trajectory.RunsDir, "*.jsonl"))
	for _, file := range files {
		if s, err := trajectory.Summary(file); err == nil && s.Outcome == trajectory.OutcomeHarnessError {
			recovered++
		}
	}
	t.Logf("%d SIGKILLs; %d runs recorded (%d killed mid-run and recovered at restart), %d findings on chain", kills, runs, recovered, findings)
	if recovered < 5 || runs < 20 {
		t.Errorf("the kills interrupted %d runs of %d; the test did not exercise crash recovery", recovered, runs)
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func signalNotify(c chan os.Signal) { signal.Notify(c, os.Interrupt, syscall.SIGTERM) }

// runningDaemon is `fleetd run` started in-process by startTestDaemon.
type runningDaemon struct {
	base      string        // the console's URL, from the daemon's http line
	done      <-chan int    // its exit status, once it has stopped
	out, errb *syncBuffer   // its stdout and stderr
	reload    chan struct{} // a SIGHUP
}

// startTestDaemon starts `fleetd run --config config` in this process until
// ctx ends and waits (at most 60 s) for its http line; it fails the test
// when the daemon exits before it.
func startTestDaemon(t *testing.T, ctx context.Context, config string) *runningDaemon {
	t.Helper()
	done := make(chan int, 1)
	d := &runningDaemon{done: done, out: &syncBuffer{}, errb: &syncBuffer{}, reload: make(chan struct{}, 1)}
	go func() {
		done <- mainWithReload(ctx, []string{"run", "--config", config}, strings.NewReader(""), d.out, d.errb, d.reload)
	}()
	waitFor(t, 60*time.Second, "the daemon's http line", func() bool {
		select {
		case code := <-done:
			t.Fatalf("fleetd run exited %d before it served:\n%s", code, tail(d.errb.String(), 20))
		default:
		}
		var line struct{ HTTP string }
		if json.Unmarshal([]byte(d.out.String()), &line) == nil && line.HTTP != "" {
			d.base = line.HTTP
			return true
		}
		return false
	})
	return d
}
