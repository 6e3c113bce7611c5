package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/faultnet"
	"github.com/qafleet/fleetd/fixtures/testbed"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/fleet/fleettest"
	"github.com/qafleet/fleetd/sandbox"
	"github.com/qafleet/fleetd/trajectory"
)

// faultTally is what the fault suite injected in this test process, per
// kind, over all its tests (network faults from the proxies, process
// faults counted by the tests). TestMain prints it after the run, so
// `go test -v -run 'Fault|UnderFaults|NodeRestart' ./cmd/fleetd/` ends with
// the suite's counts per kind.
var faultTally = struct {
	sync.Mutex
	m map[string]int
}{m: map[string]int{}}

// tallyFaults logs the faults one test injected and adds them to the
// suite's tally.
func tallyFaults(t *testing.T, net map[faultnet.Kind]int, process map[string]int) {
	t.Helper()
	all := map[string]int{}
	for k, n := range net {
		all[string(k)] += n
	}
	for k, n := range process {
		all[k] += n
	}
	t.Logf("faults injected: %s", formatTally(all))
	faultTally.Lock()
	for k, n := range all {
		faultTally.m[k] += n
	}
	faultTally.Unlock()
}

// formatTally renders counts as "total N: kind=n ..." in a stable order.
func formatTally(m map[string]int) string {
	keys := make([]string, 0, len(m))
	total := 0
	for k, n := range m {
		keys = append(keys, k)
		total += n
	}
	slices.Sort(keys)
	var b strings.Builder
	fmt.Fprintf(&b, "total %d:", total)
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%d", k, m[k])
	}
	return b.String()
}

// printFaultTally writes the suite's tally to w when any test injected
// faults.
func printFaultTally(w io.Writer) {
	faultTally.Lock()
	defer faultTally.Unlock()
	if len(faultTally.m) > 0 {
		fmt.Fprintf(w, "fault suite: faults injected, %s\n", formatTally(faultTally.m))
	}
}

// randomNodeFault is the fault harness's draw for one node response: about
// one in three gets latency, a reset or a truncation mid-response, a
// blackhole (costs the 2 s request timeout) or a slow close.
func randomNodeFault(rng *rand.Rand) faultnet.Fault {
	if rng.IntN(3) != 0 {
		return faultnet.Fault{}
	}
	switch k := rng.IntN(20); {
	case k < 6:
		return faultnet.Fault{Kind: faultnet.Latency, Delay: time.Duration(20+rng.IntN(280)) * time.Millisecond}
	case k < 11:
		return faultnet.Fault{Kind: faultnet.Reset, Bytes: rng.IntN(64)}
	case k < 15:
		return faultnet.Fault{Kind: faultnet.Truncate, Bytes: rng.IntN(64)}
	case k < 16:
		return faultnet.Fault{Kind: faultnet.Blackhole}
	default:
		return faultnet.Fault{Kind: faultnet.SlowClose, Delay: time.Duration(10+rng.IntN(200)) * time.Millisecond}
	}
}

// daemonProc is `fleetd run` as a process of its own (this test binary
// acting as fleetd), so a test can SIGKILL it.
type daemonProc struct {
	cmd    *exec.Cmd
	base   string // the console's URL
	stderr *syncBuffer
	exited chan struct{} // closed once Wait returned
	err    error         // Wait's error, once exited
}

// startDaemonProc starts the daemon on config and waits for its http line
// (daemonWait); it fails the test when the daemon exits first.
func startDaemonProc(t *testing.T, config string) *daemonProc {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	d := &daemonProc{stderr: &syncBuffer{}, exited: make(chan struct{})}
	d.cmd = exec.Command(self, "run", "--config", config, "--log-level", "warn")
	d.cmd.Env = append(os.Environ(), "FLEETD_TEST_MAIN=1")
	stdout, err := d.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	d.cmd.Stderr = d.stderr
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.cmd.Process.Kill(); <-d.exited })
	r := bufio.NewReader(stdout)
	line := make(chan string, 1)
	go func() {
		l, _ := r.ReadString('\n')
		line <- l
		io.Copy(io.Discard, r)
		d.err = d.cmd.Wait()
		close(d.exited)
	}()
	var l string
	if err := daemonWait.Until(d.cmd.Process.Pid, func() bool {
		select {
		case l = <-line: // "" when the daemon exits first
			return true
		default:
			return false
		}
	}); err != nil {
		t.Fatalf("no http line from the daemon %v\n%s", err, tail(d.stderr.String(), 20))
	}
	var hl struct{ HTTP string }
	if json.Unmarshal([]byte(l), &hl) != nil || hl.HTTP == "" {
		<-d.exited
		t.Fatalf("daemon did not come up: %q (%v)\n%s", l, d.err, tail(d.stderr.String(), 20))
	}
	d.base = strings.TrimSuffix(hl.HTTP, "/")
	return d
}

// daemonWait bounds a wait on the daemon's progress (its start, its stop,
// seeing the node): 60 s, and up to 5 minutes while the machine starves the
// process (under 20 CPU-seconds since the wait began; measured at load 30,
// niced: its http line came after 40-100 ms of CPU, a SIGTERM stop within
// 0.05-3.8 s of wall time). For a daemon in the test's own process, the test process's CPU.
var daemonWait = fleettest.StartWait{Wall: 60 * time.Second, Starved: 5 * time.Minute, CPU: 20 * time.Second}

// kill SIGKILLs the daemon and waits for it.
func (d *daemonProc) kill(t *testing.T) {
	t.Helper()
	d.cmd.Process.Signal(syscall.SIGKILL)
	<-d.exited
	d.checkNoPanic(t)
}

// checkNoPanic fails the test when the daemon's log shows a panic.
func (d *daemonProc) checkNoPanic(t *testing.T) {
	t.Helper()
	if strings.Contains(d.stderr.String(), "panic:") {
		t.Errorf("the daemon panicked\n%s", tail(d.stderr.String(), 30))
	}
}

// stop sends SIGTERM and fails the test unless the daemon exits 0
// (daemonWait, counting its CPU since the signal).
func (d *daemonProc) stop(t *testing.T, what string) {
	t.Helper()
	d.cmd.Process.Signal(syscall.SIGTERM)
	if err := daemonWait.Until(d.cmd.Process.Pid, func() bool { return isClosed(d.exited) }); err != nil {
		t.Fatalf("%s: the daemon did not stop on SIGTERM %v\n%s", what, err, tail(d.stderr.String(), 20))
	}
	d.checkNoPanic(t)
	if d.err != nil {
		t.Errorf("%s: daemon stopped on SIGTERM with %v\n%s", what, d.err, tail(d.stderr.String(), 20))
	}
}

// isClosed reports whether c is closed (it is only ever closed).
func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// status reads the daemon's /api/status: whether it sees the node and how
// many entries its outbox holds; ok false when the daemon did not answer.
func (d *daemonProc) status() (nodeUp bool, outbox int, ok bool) {
	resp, err := http.Get(d.base + "/api/status")
	if err != nil {
		return false, 0, false
	}
	defer resp.Body.Close()
	var st struct {
		Node   struct{ Up bool }
		Outbox int
	}
	if resp.StatusCode != 200 || json.NewDecoder(resp.Body).Decode(&st) != nil {
		return false, 0, false
	}
	return st.Node.Up, st.Outbox, true
}

// waitSettled waits until the daemon sees the node, its outbox is empty
// and no ended run's sandbox under dataDir is left open (its cleanup failed
// and the daemon has not reconciled it yet); it fails the test with what is left and the daemon's log otherwise.
func (d *daemonProc) waitSettled(t *testing.T, within time.Duration, dataDir string) {
	t.Helper()
	var up, ok bool
	var outbox int
	var abandoned []string
	base := filepath.Join(dataDir, "qa-sandbox")
	for deadline := time.Now().Add(within); ; time.Sleep(100 * time.Millisecond) {
		abandoned = abandoned[:0]
		// A run that ended (its record has a footer) with its sandbox not
		// closed; read without taking the sandbox's lock, which would make
		// the daemon's reconciliation take it for a live run's.
		records, _ := filepath.Glob(filepath.Join(dataDir, trajectory.RunsDir, "*.jsonl"))
		for _, rec := range records {
			id := strings.TrimSuffix(filepath.Base(rec), ".jsonl")
			if s, err := trajectory.Summary(rec); err == nil && s.Outcome != trajectory.OutcomeCrashed && !sandbox.Closed(base, id) {
				if _, err := os.Stat(filepath.Join(base, id)); err == nil {
					abandoned = append(abandoned, id)
				}
			}
		}
		if up, outbox, ok = d.status(); ok && up && outbox == 0 && len(abandoned) == 0 {
			return
		}
		if time.Now().After(deadline) {
			break
		}
	}
	t.Fatalf("after %s the daemon answers %v, sees the node %v, holds %d in its outbox, leaves abandoned %v\n%s",
		within, ok, up, outbox, abandoned, tail(d.stderr.String(), 40))
}

// settle runs the daemon on config once the faults have stopped: its
// start-up recovery finishes what the killed ones left, it posts its outbox,
// and it stops on SIGTERM with exit 0.
func settle(t *testing.T, config, dataDir string) {
	t.Helper()
	d := startDaemonProc(t, config)
	d.waitSettled(t, 90*time.Second, dataDir)
	d.stop(t, "settle")
}

// faultSeconds is how long a fault test injects faults: FLEETD_FAULT_SECONDS
// (the long version) or def.
func faultSeconds(t *testing.T, def time.Duration) time.Duration {
	t.Helper()
	s := os.Getenv("FLEETD_FAULT_SECONDS")
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		t.Fatalf("FLEETD_FAULT_SECONDS=%q: want a positive number of seconds", s)
	}
	return time.Duration(n) * time.Second
}

// faultSeed is the seed of a fault test's draws (which faults, when the
// node restarts): FLEETD_FAULT_SEED, or the clock. It is logged, so a failed
// run's draws can be made again; the daemon's own timing is not seeded, so
// the same seed makes the same faults, not always the same failure.
func faultSeed(t *testing.T) uint64 {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("FLEETD_FAULT_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("FLEETD_FAULT_SEED=%q: want an unsigned integer", s)
		}
		seed = n
	}
	t.Logf("fault seed %d (FLEETD_FAULT_SEED=%d draws the same faults)", seed, seed)
	return seed
}

// TestDaemonUnderFaults runs the daemon (a process of its own, its
// scheduler starting runs at the exercise rung every second or two) behind
// the fault proxy drawing a fault for about one node response in three,
// with the node down now and then for a second or two, and SIGKILLs the
// daemon at a random point every 1.5-5 s, restarting it at once (its
// start-up recovery runs under the same faults). Every fourth cycle it is
// stopped with SIGTERM instead and must exit 0. Then the faults stop, one
// more daemon settles (recovery, outbox) and stops, and the history checker
// holds fleetd to what it acknowledged: each acknowledged finding on the
// log exactly once, the outbox empty, every run record footed, every name
// released, 0 wei in any throwaway key. FLEETD_FAULT_SECONDS sets how long
// the faults last (default 45).
func TestDaemonUnderFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("kills the daemon under node faults for ~1 minute")
	}
	budget := faultSeconds(t, 45*time.Second)
	f := newFaultFixture(t, fleet.Exercise, map[string]fleet.Trigger{
		"smoke": {Every: time.Second}, "security": {Every: 1500 * time.Millisecond}, "ux": {Every: 2 * time.Second},
		"fuzz": {Every: 3 * time.Second}, "perf": {Every: time.Hour},
	})
	seed := faultSeed(t)
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(seed, 1))
	draw := func(n int) int { mu.Lock(); defer mu.Unlock(); return rng.IntN(n) }
	f.proxy.SetRule(func([]byte) faultnet.Fault { mu.Lock(); defer mu.Unlock(); return randomNodeFault(rng) })

	process := map[string]int{}
	start := time.Now()
	for cycle := 0; time.Since(start) < budget; cycle++ {
		d := startDaemonProc(t, f.config)
		life := time.Duration(1500+draw(3500)) * time.Millisecond
		if draw(3) == 0 { // the node goes away for a moment under the running daemon
			time.Sleep(life / 2)
			f.proxy.SetDown(true)
			time.Sleep(time.Duration(500+draw(1500)) * time.Millisecond)
			f.proxy.SetDown(false)
			process["node_outage"]++
			time.Sleep(life / 2)
		} else {
			time.Sleep(life)
		}
		if cycle%4 == 3 {
			d.stop(t, fmt.Sprintf("cycle %d", cycle))
			process["sigterm"]++
		} else {
			d.kill(t)
			process["sigkill"]++
		}
		if t.Failed() {
			t.FailNow()
		}
	}
	f.proxy.SetRule(nil)
	counts := f.proxy.Counts()
	tallyFaults(t, counts, process)
	for _, k := range []faultnet.Kind{faultnet.Latency, faultnet.Reset, faultnet.Truncate, faultnet.SlowClose} {
		if counts[k] == 0 {
			t.Errorf("no %s fault was injected", k)
		}
	}

	settle(t, f.config, f.dataDir)
	h := checkHistory(t, f.fleetFixture)
	t.Logf("history: %d runs, %d findings acknowledged, %d on the log, %d throwaway keys checked", h.runs, h.acked, h.onLog, h.keys)
	if h.runs < 5 || h.keys == 0 {
		t.Errorf("the daemon did too little under the faults: %+v", h)
	}
}

// gethNode is go-ethereum's geth --dev as a process of its own with a data
// dir it keeps across restarts, behind a fault-free front proxy whose
// address stays put while geth's port changes (the testbed and checkers
// use it; fleetd goes through a fault proxy in front of it).
type gethNode struct {
	bin, dir string
	front    *faultnet.Proxy
	cmd      *exec.Cmd
	exited   chan struct{}
	stderr   *syncBuffer
	// started, if set, is called as soon as geth's process exists, as
	// the shell that execs it (tests signal it before it could take a
	// signal).
	started func(*os.Process)
	// head is the highest block the node's log said it had before its
	// last stop (logHead): a start that loads a lower one lost blocks.
	head uint64
}

// headRE reads the block numbers a geth log line says the node holds as
// its head. "Imported new potential chain segment" is not one: the dev
// node imports a block (engine_newPayload) before it makes it the head
// (forkchoiceUpdated), and a block imported while geth shuts down is never
// made the head, nor served, nor kept (ci38: block 21 imported 3 ms after
// "Got interrupt", "Persisting dirty state head=20", back at 20).
var headRE = regexp.MustCompile(`(?:Chain head was updated|Loaded most recent local block) +number=([0-9,]+)`)

// logHead returns the highest block number the geth log lines name.
func logHead(log string) (uint64, bool) {
	var max uint64
	found := false
	for _, m := range headRE.FindAllStringSubmatch(log, -1) {
		n, err := strconv.ParseUint(strings.ReplaceAll(m[1], ",", ""), 10, 64)
		if err == nil && (!found || n > max) {
			max, found = n, true
		}
	}
	return max, found
}

// startGethNode starts geth --dev on dir. It skips without a geth binary
// (fails under CI, where .ci/run installs it).
func startGethNode(t *testing.T, dir string) *gethNode {
	t.Helper()
	bin := os.Getenv("FLEETD_GETH")
	if bin == "" {
		bin, _ = exec.LookPath("geth")
	}
	if bin == "" {
		if home, err := os.UserHomeDir(); err == nil {
			if p := home + "/.cache/fleetd/bin/geth"; fileExists(p) {
				bin = p
			}
		}
	}
	if bin == "" {
		const why = "no geth binary (set FLEETD_GETH; .ci/run installs go-ethereum v1.17.8's geth)"
		if os.Getenv("CI") != "" {
			t.Fatal(why)
		}
		t.Skip(why)
	}
	g := &gethNode{bin: bin, dir: dir}
	addr := g.start(t)
	var err error
	if g.front, err = faultnet.Start(addr); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.stop(t); g.front.Close() })
	return g
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// url is the node's stable JSON-RPC URL (the front proxy).
func (g *gethNode) url() string { return "http://" + g.front.Addr() }

// gethShell starts geth with SIGINT ignored ("$0" is geth, exec keeps
// the pid): geth takes SIGINT only once its handler is in (signal.Notify
// turns an ignored SIGINT back on), so a SIGINT that comes before is lost,
// not fatal, and stop sends it again every 2 s until geth logs "Got
// interrupt". With SIGINT at its default, a SIGINT before the handler
// killed geth without its shutdown ("signal: interrupt", 2.7 s after it
// served RPC, at load 20+), and geth --dev, whose recent state is in memory
// until a clean stop, came back blocks behind: what fleetd saw mined was
// gone (a throwaway key's sweep, the key full again at the history check;
// TestNodeRestartUnderDaemon, 2 of 22 runs here).
var gethShell = []string{"/bin/sh", "-c", `trap "" INT; exec "$0" "$@"`}

// start runs geth on g.dir and returns its RPC host:port once it answers.
func (g *gethNode) start(t *testing.T) string {
	t.Helper()
	g.cmd = exec.Command(gethShell[0], append(slices.Concat(gethShell[1:], []string{g.bin}), "--dev", "--datadir", g.dir, "--dev.gaslimit", "60000000",
		"--http", "--http.addr", "127.0.0.1", "--http.port", "0", "--http.api", "eth,net,web3",
		"--nodiscover", "--maxpeers", "0", "--port", "0", "--authrpc.port", "0", "--ipcdisable", "--verbosity", "3")...)
	stderr, err := g.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := g.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if g.started != nil {
		g.started(g.cmd.Process)
	}
	if g.stderr == nil { // one log across restarts: what a restart put back shows beside what came before
		g.stderr = &syncBuffer{}
	}
	g.exited = make(chan struct{})
	logFrom := len(g.stderr.String())
	endpoint := make(chan string, 1)
	cmd, exited, buf := g.cmd, g.exited, g.stderr
	go func() {
		// Read every byte geth writes, however long its lines: a reader that
		// stops (bufio.Scanner gives up on a line over 64 KiB) leaves geth
		// blocked writing its log once the pipe's buffer is full, and a geth
		// blocked there neither answers nor stops on SIGINT. The goroutine
		// dump of a geth that did not stop (stop) comes through here too.
		r := bufio.NewReaderSize(stderr, 64<<10)
		for {
			line, err := r.ReadString('\n')
			if line == "" && err != nil {
				break
			}
			line = strings.TrimRight(line, "\n")
			if len(line) > 4<<10 {
				line = fmt.Sprintf("%s ... (%d bytes)", line[:4<<10], len(line))
			}
			fmt.Fprintln(buf, line)
			if _, rest, ok := strings.Cut(line, "HTTP server started"); ok {
				for _, f := range strings.Fields(rest) {
					if ep, ok := strings.CutPrefix(f, "endpoint="); ok {
						select {
						case endpoint <- ep:
						default:
						}
					}
				}
			}
		}
		werr := cmd.Wait()
		fmt.Fprintf(buf, "TEST: geth pid %d exited at %s: %v\n", cmd.Process.Pid, time.Now().UTC().Format("15:04:05.000"), werr)
		close(exited)
	}()
	// A slow start is not a failure: a geth that exits or logs a fatal
	// error ends the wait at once, and one the machine starves is waited
	// for (at load 30-46 a restarted geth did not serve within a fixed 30 s,
	// 2 of 2). One that spent gethWait.CPU without answering is stuck.
	start, ep := time.Now(), ""
	for tick := time.NewTicker(50 * time.Millisecond); ; <-tick.C {
		select {
		case ep = <-endpoint:
		case <-exited:
			t.Fatalf("geth exited before serving:\n%s", tail(buf.String(), 20))
		default:
		}
		if ep != "" {
			if raw, err := gethCall("http://"+ep, "eth_blockNumber"); err == nil {
				tick.Stop()
				// A geth that died on its stop without its shutdown (no
				// "Got interrupt" in its log: the signal came before its
				// handler, or it crashed) starts from the state of its
				// last clean stop, and what fleetd saw mined since (a
				// sweep) is gone: the history check after it would blame
				// fleetd for the node forgetting (seen: a throwaway key's
				// sweep in block 13 lost, the node back at 12, the key
				// full again).
				var hex string
				json.Unmarshal(raw, &hex)
				if h, err := strconv.ParseUint(strings.TrimPrefix(hex, "0x"), 16, 64); err == nil && h < g.head {
					t.Fatalf("geth came back at block %d, below the %d it had mined before its stop: it lost blocks (stopped without its shutdown), so the chain is not the one fleetd acted on; the end of its log before the stop:\n%s\nafter:\n%s",
						h, g.head, tail(buf.String()[:logFrom], 30), grepLines(buf.String()[logFrom:], "Loaded most recent local block"))
				}
				return ep
			}
		}
		if f := grepLines(buf.String()[logFrom:], "Fatal: "); f != "" {
			t.Fatalf("geth logged a fatal error before serving: %s\n%s", f, tail(buf.String(), 20))
		}
		if over, why := gethWait.Over(cmd.Process.Pid, start); over {
			t.Fatalf("geth did not serve (endpoint %q) %s:\n%s", ep, why, tail(buf.String(), 20))
		}
	}
}

// gethWait bounds a geth start: 30 s, and up to 5 minutes while the
// machine starves it (under 20 CPU-seconds; a --dev start takes about 1).
var gethWait = fleettest.StartWait{Wall: 30 * time.Second, Starved: 5 * time.Minute, CPU: 20 * time.Second}

// stop interrupts geth (it flushes its state to the data dir) and waits.
func (g *gethNode) stop(t *testing.T) {
	t.Helper()
	if g.cmd == nil {
		return
	}
	sent := time.Now()
	cpu0, _ := fleettest.ProcessCPU(g.cmd.Process.Pid)
	fmt.Fprintf(g.stderr, "TEST: SIGINT to geth pid %d at %s\n", g.cmd.Process.Pid, sent.UTC().Format("15:04:05.000"))
	g.cmd.Process.Signal(os.Interrupt)
	// As for a start (gethWait): a geth the machine starves is waited for,
	// one that spent gethWait.CPU since SIGINT without stopping is stuck
	// (at 10 % of a CPU a geth took over 30 s to stop).
	// geth installs its SIGINT handler after it answers RPC: a SIGINT that
	// came before (a restart soon after a start on a starved machine, 10 %
	// of a CPU) is lost where SIGINT is ignored (a background job) and
	// geth ran on for 5 minutes. Until geth logs that it took one, the
	// interrupt is sent again every 2 s (not more: ten make geth panic).
	logFrom, resent := len(g.stderr.String()), sent
	var why string
	stopped := func() bool {
		for tick := time.NewTicker(50 * time.Millisecond); ; <-tick.C {
			select {
			case <-g.exited:
				return true
			default:
			}
			if time.Since(resent) > 2*time.Second && !strings.Contains(g.stderr.String()[logFrom:], "Got interrupt") {
				g.cmd.Process.Signal(os.Interrupt)
				resent = time.Now()
			}
			var over bool
			if over, why = gethWait.OverFrom(g.cmd.Process.Pid, sent, cpu0); over {
				return false
			}
		}
	}()
	if !stopped {
		// A geth killed without its shutdown starts again from the state
		// of its last clean stop (measured: head 9 -> 5), undoing what
		// fleetd saw mined, so the history check after it would say
		// nothing about fleetd: the test ends here (start also fails it
		// if a node ever comes back lower). SIGQUIT makes Go dump every
		// goroutine (what geth was stuck on) before it dies.
		before := len(g.stderr.String())
		g.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-g.exited:
		case <-time.After(10 * time.Second):
			g.cmd.Process.Kill()
			<-g.exited
		}
		t.Errorf("geth did not stop (SIGINT sent %s) %s and was killed: it loses the blocks since its last clean stop, so the test ends here; its log before it, then its goroutines on SIGQUIT:\n%s\n%s",
			sent.UTC().Format("15:04:05.000"), why, tail(g.stderr.String()[:before], 20), g.stderr.String()[before:])
	}
	if h, ok := logHead(g.stderr.String()); ok && h > g.head {
		g.head = h
	}
	g.cmd = nil
}

// restart stops geth, waits down, and starts it again on the same data
// dir; the front proxy follows it to its new port.
func (g *gethNode) restart(t *testing.T, down time.Duration) {
	t.Helper()
	g.stop(t)
	if t.Failed() {
		t.FailNow() // a killed node's chain is not the one fleetd acted on
	}
	time.Sleep(down)
	g.front.SetUpstream(g.start(t))
}

// gethCall makes one JSON-RPC call and returns its raw result.
func gethCall(url, method string, params ...any) (json.RawMessage, error) {
	if params == nil {
		params = []any{}
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	hc := &http.Client{Timeout: 5 * time.Second}
	resp, err := hc.Post(url, "application/json", strings.NewReader(string(body)))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var r struct {
		Result json.RawMessage
		Error  *struct{ Message string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return nil, err
	}
	if r.Error != nil {
		return nil, fmt.Errorf("%s: %s", method, r.Error.Message)
	}
	return r.Result, nil
}

// newGethFaultFixture is the fault fixture on geth --dev with a data dir
// (startGethNode) instead of the embedded chain, which cannot restart on
// its data: the sponsor is funded from geth's dev account, the FeedbackLog
// and the testbed are deployed on it.
func newGethFaultFixture(t *testing.T, dial fleet.Dial, fast map[string]fleet.Trigger) (*faultFixture, *gethNode) {
	t.Helper()
	ctx := t.Context()
	g := startGethNode(t, filepath.Join(t.TempDir(), "geth"))
	ff := &fleetFixture{dataDir: t.TempDir()}
	keys := filepath.Join(ff.dataDir, "keys")
	sponsorFile, fleetFile := filepath.Join(keys, "sponsor.key"), filepath.Join(keys, "fleet.key")
	sponsor, _, err := chain.LoadOrCreateKey(sponsorFile)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := chain.LoadOrCreateKey(fleetFile); err != nil {
		t.Fatal(err)
	}
	raw, err := gethCall(g.url(), "eth_accounts")
	var accounts []string
	if err != nil || json.Unmarshal(raw, &accounts) != nil || len(accounts) == 0 {
		t.Fatalf("geth's dev account: %s %v", raw, err)
	}
	if _, err := gethCall(g.url(), "eth_sendTransaction", map[string]string{
		"from": accounts[0], "to": sponsor.Address().String(), "value": "0x" + testbed.SponsorFunds.Text(16)}); err != nil {
		t.Fatalf("fund the sponsor: %v", err)
	}
	cl, err := chain.Dial(ctx, g.url(), chain.Options{ChainID: 1337})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// geth mines the transfer when the machine gives it the CPU (gethWait).
	if err := gethWait.Until(g.cmd.Process.Pid, func() bool {
		bal, err := cl.Balance(ctx, sponsor.Address())
		return err == nil && bal.Sign() > 0
	}); err != nil {
		t.Fatalf("the sponsor's funds were not mined %v\n%s", err, tail(g.stderr.String(), 20))
	}
	log, _, err := cl.DeployFeedbackLog(ctx, sponsor)
	if err != nil {
		t.Fatal(err)
	}
	ff.dn = &testbed.Devnet{Sponsor: sponsor, Info: testbed.DevnetInfo{RPC: g.url(), ChainID: 1337, FeedbackLog: log.Address().String(),
		SponsorKeyFile: sponsorFile, FleetKeyFile: fleetFile}}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	wrapper := filepath.Join(t.TempDir(), "tlc")
	os.WriteFile(wrapper, []byte(fmt.Sprintf("#!/bin/sh\nFLEETD_TEST_MAIN=1 exec %q testbed compile \"$@\"\n", self)), 0o755)
	if ff.tb, err = testbed.Serve(ctx, testbed.Config{RPC: g.url(), Sponsor: sponsor, Compiler: []string{wrapper, "{src}"},
		CorpusDir: filepath.Join(ff.dataDir, "testbed", "corpus")}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ff.tb.Close() })
	small := map[string]fleet.Budget{"fuzz": {MaxTurns: 40}, "perf": {MaxTurns: 30}}
	if ff.config, err = writeDemoConfig(ff.dataDir, ff.dn.Info, ff.tb, fast, small); err != nil {
		t.Fatal(err)
	}
	if _, err := fleet.NewControl(ff.dataDir).SetDial(dial, "test", "test"); err != nil {
		t.Fatal(err)
	}
	return wrapFaultFixture(t, ff), g
}

// TestNodeRestartUnderDaemon stops go-ethereum's node (geth --dev with its
// data dir; SIGINT, so it flushes its state) under a running daemon at the
// exercise rung, keeps it down for a second or three and starts it again on
// the same data dir, several times, while the daemon's runs mint names,
// fund keys and post findings; the fault proxy between fleetd and the node
// also draws node faults meanwhile. The daemon must keep serving, see the
// node back and catch up; after the last restart it stops on SIGTERM with
// exit 0, and the history checker finds nothing lost, duplicated, stranded
// or unfooted. FLEETD_FAULT_SECONDS sets how long the restarts go on
// (default 40).
func TestNodeRestartUnderDaemon(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts a geth node under the daemon for ~1 minute")
	}
	budget := faultSeconds(t, 40*time.Second)
	f, g := newGethFaultFixture(t, fleet.Exercise, map[string]fleet.Trigger{
		"smoke": {Every: time.Second}, "security": {Every: 1500 * time.Millisecond}, "ux": {Every: 2 * time.Second},
		"fuzz": {Every: 3 * time.Second}, "perf": {Every: time.Hour},
	})
	seed := faultSeed(t)
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(seed, 2))
	draw := func(n int) int { mu.Lock(); defer mu.Unlock(); return rng.IntN(n) }
	f.proxy.SetRule(func([]byte) faultnet.Fault { mu.Lock(); defer mu.Unlock(); return randomNodeFault(rng) })

	d := startDaemonProc(t, f.config)
	process := map[string]int{}
	start := time.Now()
	// The restarts go on past the budget, up to four times it, while the
	// daemon has not yet done what the end checks: on a starved machine a
	// restart took 8-13 s and 40 s saw only two runs ("did too little").
	for time.Since(start) < budget || (!didEnough(f.dataDir) && time.Since(start) < 4*budget) {
		time.Sleep(time.Duration(2000+draw(4000)) * time.Millisecond)
		t.Logf("node restart at %s", time.Now().UTC().Format("15:04:05.000"))
		g.restart(t, time.Duration(500+draw(2500))*time.Millisecond)
		process["node_restart"]++
		if _, _, ok := d.status(); !ok {
			t.Fatalf("the daemon stopped answering across a node restart\n%s", tail(d.stderr.String(), 20))
		}
	}
	restarts := time.Since(start)
	f.proxy.SetRule(nil)
	tallyFaults(t, f.proxy.Counts(), process)
	d.waitSettled(t, 90*time.Second, f.dataDir)
	d.stop(t, "after the node restarts")
	log := d.stderr.String()
	t.Logf("daemon: %d runs left their sandbox for reconciliation, %d finished by the stop, %d left by it",
		strings.Count(log, "run did not clean up"), strings.Count(log, "finished a run's cleanup at the stop"), strings.Count(log, "stopping with a run not cleaned up"))
	h := checkHistory(t, f.fleetFixture)
	t.Logf("history: %d runs, %d findings acknowledged, %d on the log, %d throwaway keys checked in %s of restarts",
		h.runs, h.acked, h.onLog, h.keys, restarts.Round(time.Second))
	if h.runs < 3 || h.acked == 0 || h.keys == 0 {
		t.Errorf("the daemon did too little across the restarts: %+v", h)
	}
	if dir := os.Getenv("FLEETD_FAULT_LOGDIR"); dir != "" && t.Failed() {
		// The node's log says when it stopped, started and put back what
		// it journaled (grep the hashes the history check names).
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("geth-%d.log", seed)), []byte(g.stderr.String()), 0o644)
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("fleetd-%d.log", seed)), []byte(d.stderr.String()), 0o644)
	}
}

// didEnough reports whether the daemon's runs under dataDir have done what
// TestNodeRestartUnderDaemon's end asks of them: three runs ended, a
// finding reported, a throwaway key made.
func didEnough(dataDir string) bool {
	records, _ := filepath.Glob(filepath.Join(dataDir, trajectory.RunsDir, "*.jsonl"))
	ended, findings := 0, 0
	for _, rec := range records {
		if s, err := trajectory.Summary(rec); err == nil && s.Outcome != trajectory.OutcomeCrashed {
			ended++
			findings += s.Findings
		}
	}
	keys, _ := filepath.Glob(filepath.Join(dataDir, "qa-sandbox", "*", "keys", "*.key"))
	return ended >= 3 && findings > 0 && len(keys) > 0
}

// TestMCPUnderFaults runs `fleetd mcp --transport http --require-token`
// (a process of its own) behind a client-side fault proxy that delays,
// resets, truncates or slowly closes about one answer in three, with the
// node behind its own fault proxy as well; sessions create a name and
// report findings drawn from three fixed ones (so the same finding arrives
// again and again across sessions and processes), and the server is killed
// with SIGKILL in the middle of a call (every third cycle stopped with
// SIGTERM instead, exit 0), then started again (the proxy follows it to its
// new port). Calls may fail under the faults; nothing may be posted twice.
// Then the faults stop, `fleetd reconcile` settles what the killed servers
// left, and the history checker holds fleetd to what it acknowledged.
// FLEETD_FAULT_SECONDS sets how long the faults last (default 40).
func TestMCPUnderFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("kills fleetd mcp under client and node faults for ~1 minute")
	}
	budget := faultSeconds(t, 40*time.Second)
	f := newFaultFixture(t, fleet.Exercise, nil)
	token := func() string {
		b, _ := os.ReadFile(filepath.Join(f.dataDir, "keys", "http.token"))
		return strings.TrimSpace(string(b))
	}
	seed := faultSeed(t)
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(seed, 4))
	draw := func(n int) int { mu.Lock(); defer mu.Unlock(); return rng.IntN(n) }
	nodeRule := func([]byte) faultnet.Fault {
		mu.Lock()
		defer mu.Unlock()
		if rng.IntN(3) != 0 {
			return faultnet.Fault{}
		}
		return randomNodeFault(rng)
	}
	f.proxy.SetRule(nodeRule)
	var client *faultnet.Proxy
	clientRule := func([]byte) faultnet.Fault {
		mu.Lock()
		defer mu.Unlock()
		if rng.IntN(3) != 0 {
			return faultnet.Fault{}
		}
		switch rng.IntN(4) {
		case 0:
			return faultnet.Fault{Kind: faultnet.Latency, Delay: time.Duration(20+rng.IntN(400)) * time.Millisecond}
		case 1:
			return faultnet.Fault{Kind: faultnet.Reset, Bytes: rng.IntN(64)}
		case 2:
			return faultnet.Fault{Kind: faultnet.Truncate, Bytes: rng.IntN(64)}
		}
		return faultnet.Fault{Kind: faultnet.SlowClose, Delay: time.Duration(10+rng.IntN(200)) * time.Millisecond}
	}
	faces := f.tb.Target().Faces
	report := func(cs *mcp.ClientSession, i int) error {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		face := strings.ReplaceAll(faces, "{name}", fmt.Sprintf("faultmcp%d", i))
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "qa_report", Arguments: map[string]any{
			"severity": "low", "surface": "face",
			"summary": fmt.Sprintf("fault suite finding %d: pages are served without content-security-policy", i),
			"repro":   map[string]any{"tool": "qa_fetch", "args": map[string]any{"url": face}},
		}})
		return err
	}

	process := map[string]int{}
	calls := map[string]int{}
	start := time.Now()
	for cycle := 0; time.Since(start) < budget; cycle++ {
		// fleetd mcp starts even when its first call to the node fails
		// under the faults (it serves degraded and retries the node), so
		// any exit at start fails the test.
		p := startMCPProc(t, f.fleetFixture, "--transport", "http", "--addr", "127.0.0.1:0", "--require-token")
		line, _ := bufio.NewReader(p.stdout).ReadString('\n')
		var v struct{ MCP string }
		if json.Unmarshal([]byte(line), &v) != nil || v.MCP == "" {
			t.Fatalf("fleetd mcp did not start under the faults: %q\n%s", line, tail(p.stderr.String(), 20))
		}
		u := v.MCP
		host := strings.Split(strings.TrimPrefix(u, "http://"), "/")[0]
		if client == nil {
			var err error
			if client, err = faultnet.Start(host); err != nil {
				t.Fatal(err)
			}
			defer client.Close()
			client.SetRule(clientRule)
		} else {
			client.SetUpstream(host)
		}
		cs, err := connectHTTP(t, strings.Replace(u, host, client.Addr(), 1), fmt.Sprintf("agent%d", cycle), (&connKiller{token: token()}).client())
		if err != nil {
			calls["connect_failed"]++
		} else {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "qa_create", Arguments: map[string]any{}}); err != nil {
				calls["failed"]++
			} else {
				calls["ok"]++
			}
			cancel()
			for range 1 + draw(2) {
				if err := report(cs, draw(3)); err != nil {
					calls["failed"]++
				} else {
					calls["ok"]++
				}
			}
			// One more report, and the server dies while it runs.
			go report(cs, draw(3))
		}
		time.Sleep(time.Duration(draw(400)) * time.Millisecond)
		if cycle%3 == 2 {
			p.cmd.Process.Signal(syscall.SIGTERM)
			p.wait(60 * time.Second)
			process["sigterm"]++
		} else {
			p.cmd.Process.Signal(syscall.SIGKILL)
			<-p.exited
			p.exited <- nil // for the cleanup
			process["sigkill"]++
		}
		if cs != nil {
			cs.Close()
		}
		if strings.Contains(p.stderr.String(), "panic:") {
			t.Errorf("fleetd mcp panicked under the faults\n%s", tail(p.stderr.String(), 30))
		}
		if t.Failed() {
			t.FailNow()
		}
	}
	f.proxy.SetRule(nil)
	client.SetRule(nil)
	counts := f.proxy.Counts()
	for k, n := range client.Counts() {
		counts[faultnet.Kind("mcp_"+string(k))] += n
	}
	tallyFaults(t, counts, process)
	t.Logf("tool calls under faults: %v", calls)
	if calls["ok"] == 0 {
		t.Errorf("no tool call got through the faults: %v", calls)
	}
	if out, stderr, code := run(t, "", "reconcile", "--config", f.config); code != 0 {
		t.Fatalf("reconcile after the faults: exit %d\n%s%s", code, out, stderr)
	}
	h := checkHistory(t, f.fleetFixture)
	t.Logf("history: %d runs, %d findings acknowledged, %d on the log, %d throwaway keys checked", h.runs, h.acked, h.onLog, h.keys)
	if h.runs == 0 || h.acked == 0 {
		t.Errorf("the MCP sessions did too little under the faults: %+v", h)
	}
}

// TestDaemonStartsWhenTheLogCheckTimesOut: the node answers the dial, then
// its answer to the start-up check of the FeedbackLog never comes (a
// blackhole). `fleetd run` starts degraded and catches up (issue 25: it
// refused to start, exit 2, calling the log "not a FeedbackLog"); `fleetd
// doctor` says the node stopped answering, not that the contract is wrong.
func TestDaemonStartsWhenTheLogCheckTimesOut(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a dev chain, the testbed and the daemon")
	}
	f := newFaultFixture(t, fleet.Observe, nil)
	var holes atomic.Int32
	f.proxy.SetRule(func(req []byte) faultnet.Fault {
		if rpcMethod(req, "eth_call") && bytes.Contains(bytes.ToLower(req), []byte(f.logHex)) && holes.Add(1) == 1 {
			return faultnet.Fault{Kind: faultnet.Blackhole}
		}
		return faultnet.Fault{}
	})
	out, _, code := run(t, "", "doctor", "--config", f.config)
	if code == 0 || !strings.Contains(out, "the node stopped answering") || strings.Contains(out, "not a FeedbackLog") {
		t.Errorf("doctor with the log check blackholed: exit %d\n%s", code, out)
	}
	holes.Store(0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d := startTestDaemon(t, ctx, f.config) // fails the test when the daemon exits first
	// The daemon and the chain run in this process: its CPU is theirs.
	if err := daemonWait.Until(os.Getpid(), func() bool {
		resp, err := http.Get(d.base + "/api/status")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var st struct{ Node struct{ Up bool } }
		return json.NewDecoder(resp.Body).Decode(&st) == nil && st.Node.Up
	}); err != nil {
		t.Fatalf("the daemon did not see the node %v\n%s", err, tail(d.errb.String(), 20))
	}
	cancel()
	code = -1
	if err := daemonWait.Until(os.Getpid(), func() bool {
		select {
		case code = <-d.done:
			return true
		default:
			return false
		}
	}); err != nil {
		t.Fatalf("the daemon did not stop %v\n%s", err, tail(d.errb.String(), 20))
	}
	if code != 0 {
		t.Errorf("fleetd run exited %d\n%s", code, tail(d.errb.String(), 20))
	}
	if holes.Load() == 0 {
		t.Error("the blackhole never fired")
	}
	tallyFaults(t, f.proxy.Counts(), nil)
}

// TestGethNodeTakesAnEarlySIGINT: a SIGINT sent the moment geth exists,
// before it could install its handler, neither kills it (it serves) nor
// keeps it from a clean stop afterwards ("Got interrupt" in its log, exit
// 0). Before gethShell it died of that SIGINT ("signal: interrupt") with
// its recent blocks unwritten, as it did under TestNodeRestartUnderDaemon.
func TestGethNodeTakesAnEarlySIGINT(t *testing.T) {
	g := startGethNode(t, filepath.Join(t.TempDir(), "geth"))
	g.stop(t)
	bin, err := filepath.EvalSymlinks(g.bin)
	if err != nil {
		t.Fatal(err)
	}
	g.started = func(p *os.Process) {
		// The process is /bin/sh until its exec: a SIGINT before the shell's
		// trap is the shell's to die of, a window no restart sends into
		// (start returns once geth serves). Signal once it is geth, before
		// geth's handler is in: without the trap that SIGINT killed geth.
		if err := waitExec(p.Pid, bin, time.Minute); err != nil {
			t.Error(err)
		}
		p.Signal(os.Interrupt)
	}
	g.front.SetUpstream(g.start(t)) // fails the test if geth exits first
	g.started = nil
	if _, err := gethCall(g.url(), "eth_blockNumber"); err != nil {
		t.Fatalf("geth after an early SIGINT: %v", err)
	}
	from := len(g.stderr.String())
	g.stop(t)
	log := g.stderr.String()[from:]
	if !strings.Contains(log, "Got interrupt") || !strings.Contains(log, "exited at") || strings.Contains(log, "signal: interrupt") {
		t.Fatalf("geth did not stop cleanly after an early SIGINT:\n%s", tail(log, 10))
	}
}

// waitExec waits until process pid runs the binary bin (its exec is
// done), or it exits, or within passes.
func waitExec(pid int, bin string, within time.Duration) error {
	for deadline := time.Now().Add(within); ; time.Sleep(time.Millisecond) {
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		if err == nil && exe == bin {
			return nil
		}
		if _, serr := os.Stat(fmt.Sprintf("/proc/%d", pid)); serr != nil {
			return fmt.Errorf("process %d ended before it ran %s", pid, bin)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("process %d runs %q, not %s, after %s", pid, exe, bin, within)
		}
	}
}

// TestLogHead reads the highest block a geth log names, as start compares
// it with the head a restarted node comes back at.
func TestLogHead(t *testing.T) {
	log := `INFO [12-06|12:56:46.344] Loaded most recent local block           number=12 hash=6e066f..e96f8b age=6s
INFO [12-06|12:56:47.604] Imported new potential chain segment     number=13 hash=cef79b..d9195e blocks=1 txs=1
INFO [12-06|12:56:49.680] Chain head was updated                   number=1,014 hash=6cb4ab..d8d4da root=06ecd7..ee6b15
INFO [12-06|12:56:49.700] Loaded most recent local finalized block number=0  hash=f08256..135ed4
INFO [12-06|12:56:49.701] Updated payload                          id=0x03 number=99999 hash=660d61..ce74a2`
	if h, ok := logHead(log); !ok || h != 1014 {
		t.Errorf("logHead = %d, %v; want 1014 (a payload built is not a block held)", h, ok)
	}
	// ci38's stop: the payload that raced the interrupt was imported, never
	// the head; geth persisted head 20 and came back at 20, losing nothing
	// it had served.
	stop := `INFO [12-06|20:05:01.088] Chain head was updated                   number=20 hash=5e80ed..41d872 root=efd6c9..0ea597 elapsed="49.533µs"
INFO [12-06|20:05:01.265] Updated payload                          id=0x031c7b887744d9fd number=21 hash=c6f290..f97c28 txs=1
INFO [12-06|20:05:01.265] Got interrupt, shutting down...
INFO [12-06|20:05:01.265] HTTP server stopped                      endpoint=127.0.0.1:33705
INFO [12-06|20:05:01.268] Imported new potential chain segment     number=21 hash=c6f290..f97c28 blocks=1 txs=1 mgas=0.141
INFO [12-06|20:05:01.268] Persisting dirty state                   head=20 root=efd6c9..0ea597 layers=20
INFO [12-06|20:05:01.274] Blockchain stopped`
	if h, ok := logHead(stop); !ok || h != 20 {
		t.Errorf("logHead = %d, %v; want 20 (a block imported during the shutdown never became the head)", h, ok)
	}
	if _, ok := logHead("INFO Starting Geth on Ethereum mainnet..."); ok {
		t.Error("logHead found a head in a log naming none")
	}
}
