package daemon

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"math/big"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/faultnet"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/fleet/fleettest"
	"github.com/qafleet/fleetd/poster"
	"github.com/qafleet/fleetd/qatools"
	"github.com/qafleet/fleetd/runner"
	"github.com/qafleet/fleetd/sandbox"
	"github.com/qafleet/fleetd/trajectory"
)

// stopFixture is a daemon on the dev chain whose one specialist mints a
// name with the real qa_create and then waits to be cancelled, the node
// behind a fault proxy that resets every release's gas estimate while
// failing is set, so a test decides when a run's cleanup fails.
type stopFixture struct {
	dir     string
	sandbox string // the runs' sandboxes
	proxy   *faultnet.Proxy
	client  *chain.Client // through the proxy: the daemon's
	direct  *chain.Client // to the node itself: the test's checks
	reg     fleet.Address
	env     *runner.Env
	failing atomic.Bool
	minted  chan minted
	logs    lockedBuffer
}

// minted is what the run's qa_create made.
type minted struct{ run, name, owner string }

// newStopFixture skips under -short; bound, when set, replaces
// stopReconcile for the test (a bound, not a wait: it keeps a stop that
// cannot finish short).
func newStopFixture(t *testing.T, bound time.Duration) *stopFixture {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a daemon and a chain")
	}
	if bound > 0 {
		old := stopReconcile
		stopReconcile = bound
		t.Cleanup(func() { stopReconcile = old })
	}
	ctx := t.Context()
	dc := startDevChain(t)
	reg, _, err := dc.client.DeployNameRegistry(ctx, dc.sponsor)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(dc.chain.URL())
	if err != nil {
		t.Fatal(err)
	}
	f := &stopFixture{dir: t.TempDir(), direct: dc.client, reg: reg.Address(), minted: make(chan minted, 1)}
	f.sandbox = filepath.Join(f.dir, "qa-sandbox")
	if f.proxy, err = faultnet.Start(u.Host); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.proxy.Close() })
	sel := chain.Selector("release(string)")
	release := []byte(hex.EncodeToString(sel[:]))
	f.proxy.SetRule(func(req []byte) faultnet.Fault {
		if f.failing.Load() && bytes.Contains(req, []byte(`"method":"eth_estimateGas"`)) && bytes.Contains(req, release) {
			return faultnet.Fault{Kind: faultnet.Reset}
		}
		return faultnet.Fault{}
	})
	if f.client, err = chain.Dial(ctx, "http://"+f.proxy.Addr(), chain.Options{ReceiptTimeout: 20 * time.Second}); err != nil {
		t.Fatal(err)
	}
	// The daemon closes the env, and with it this client, at its stop.
	ctl := fleet.NewControl(f.dir)
	if _, err := ctl.SetDial(fleet.Exercise, "test", "test"); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(f.dir, trajectory.RunsDir), 0o700); err != nil {
		t.Fatal(err)
	}
	f.env = &runner.Env{Env: &qatools.Env{
		Chain: f.client, Registry: f.client.Registry(f.reg), Log: f.client.FeedbackLog(dc.log.Address()),
		Sponsor: dc.sponsor, Logger: slog.New(slog.DiscardHandler),
	}, Control: ctl, Client: f.client}
	return f
}

// start starts the daemon; ended is called as each run returns (its
// cleanup done or failed).
func (f *stopFixture) start(t *testing.T, ended func()) *Daemon {
	t.Helper()
	cfg := Config{HTTPAddr: "127.0.0.1:0", NoSpecialists: true, ChainRPC: "http://" + f.proxy.Addr(), DataDir: f.dir,
		ReportsDir: filepath.Join(f.dir, "reports"), FuzzDir: filepath.Join(f.dir, "fuzz"), SandboxDir: f.sandbox}
	rc := runner.Config{DataDir: f.dir, Build: "test", RunEnded: ended}
	w := Work{
		Run: func(ctx context.Context, env *runner.Env, p fleet.Persona, o runner.Options) (fleet.RunResult, error) {
			o.Model, o.ModelName = mintThenWait{f.minted}, "test/mint-then-wait"
			return runner.Run(ctx, rc, env, p, o)
		},
		Triage: func(context.Context, *poster.Poster) (int, fleet.Report, error) { return 0, fleet.Report{}, nil },
	}
	p := fleet.Persona{Name: "smoke", Goal: "mint a name", Tools: []string{"qa_create"}}
	d, err := Start(t.Context(), Options{
		Logger: slog.New(slog.NewJSONHandler(&f.logs, &slog.HandlerOptions{Level: slog.LevelInfo})), Narrate: io.Discard,
		Env: f.env, Snapshot: NewSnapshot(cfg, w, []fleet.Persona{p}),
		Token: func(bool) (string, error) { return "tok", nil }, Version: "test",
	})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// mint starts the specialist and waits until its qa_create minted a name.
func (f *stopFixture) mint(t *testing.T, d *Daemon) minted {
	t.Helper()
	if _, err := d.Runner().Start("smoke", "test"); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-f.minted:
		if m.name == "" {
			t.Fatalf("qa_create minted nothing: %+v", m)
		}
		return m
	case <-time.After(60 * time.Second):
		t.Fatalf("no name minted within a minute\n%s", f.logs.String())
	}
	panic("unreachable")
}

// mintThenWait is a model that calls qa_create once, says what it made,
// then waits for its run to be cancelled.
type mintThenWait struct{ minted chan<- minted }

func (m mintThenWait) Next(ctx context.Context, s *fleet.State) (fleet.Step, error) {
	if len(s.History) == 0 {
		return fleettest.Calls("qa_create", struct{}{}), nil
	}
	r := s.History[0].Result
	name, _ := r["name"].(string)
	owner, _ := r["owner"].(string)
	m.minted <- minted{run: s.RunID, name: name, owner: owner}
	<-ctx.Done()
	return fleet.Step{}, ctx.Err()
}

// TestShutdownFinishesAnAbandonedRun: the stop cancels a run that holds a
// name, and the run's cleanup fails once (every release's gas estimate
// reset; the node answers again as soon as the run returned), so the run
// abandons its sandbox. Shutdown, once the runner has drained, finishes
// it: the name released, the key swept, the sandbox closed, a log line
// saying so. Before, the daemon exited leaving the name held and the key
// funded until its next start (TestNodeRestartUnderDaemon: "history:
// sandbox r-… not closed", a run that started as the test stopped the
// daemon), and for good for a user who stopped fleetd for good.
func TestShutdownFinishesAnAbandonedRun(t *testing.T) {
	f := newStopFixture(t, 0)
	f.failing.Store(true)
	d := f.start(t, func() { f.failing.Store(false) })
	m := f.mint(t, d)
	if err := d.Shutdown(30 * time.Second); err != nil {
		t.Errorf("shutdown: %v", err)
	}
	logs := f.logs.String()
	rec, err := trajectory.ReadAll(trajectory.Path(f.dir, m.run))
	if err != nil || rec.Footer == nil || !strings.Contains(rec.Footer.FinalSummary, "cleanup failed") {
		t.Fatalf("the run's cleanup did not fail, so the test shows nothing: %v\n%s", err, logs)
	}
	if !sandbox.Closed(f.sandbox, m.run) {
		t.Errorf("run %s's sandbox not closed after the stop\n%s", m.run, logs)
	}
	ctx := t.Context()
	if owner, err := f.direct.Registry(f.reg).OwnerOf(ctx, m.name); err != nil || !owner.IsZero() {
		t.Errorf("%s still owned by %s (%v) after the stop", m.name, owner, err)
	}
	key, err := fleet.ParseAddress(m.owner)
	if err != nil {
		t.Fatalf("qa_create's owner %q: %v", m.owner, err)
	}
	if bal, err := f.direct.Balance(ctx, key); err != nil || bal.Sign() != 0 {
		t.Errorf("throwaway key %s holds %v wei (%v) after the stop", key, bal, err)
	}
	if !strings.Contains(logs, `"msg":"run did not clean up: its sandbox is left for reconciliation"`) || !strings.Contains(logs, "release "+m.name) {
		t.Errorf("the log does not say why run %s did not clean up:\n%s", m.run, logs)
	}
	if !strings.Contains(logs, `"msg":"finished a run's cleanup at the stop"`) || !strings.Contains(logs, m.run) {
		t.Errorf("the log does not say the stop finished run %s:\n%s", m.run, logs)
	}
}

// TestShutdownSaysWhatItLeaves: the release keeps failing through the
// stop. Shutdown tries within its bound (stopReconcile), returns no error
// (what is left is the next start's to finish, not a failed stop) and logs
// the run and the name it leaves held, and how to finish them.
func TestShutdownSaysWhatItLeaves(t *testing.T) {
	f := newStopFixture(t, 3*time.Second)
	f.failing.Store(true)
	d := f.start(t, nil)
	m := f.mint(t, d)
	start := time.Now()
	if err := d.Shutdown(30 * time.Second); err != nil {
		t.Errorf("shutdown: %v", err)
	}
	took := time.Since(start)
	logs := f.logs.String()
	if sandbox.Closed(f.sandbox, m.run) {
		t.Fatalf("run %s's sandbox closed though every release failed\n%s", m.run, logs)
	}
	if took > stopReconcile+15*time.Second {
		t.Errorf("the stop took %s, over its reconciliation bound %s and the run's own cleanup", took, stopReconcile)
	}
	var line string
	for l := range strings.SplitSeq(logs, "\n") {
		if strings.Contains(l, `"msg":"stopping with a run not cleaned up`) {
			line = l
		}
	}
	for _, want := range []string{m.run, m.name, "fleetd reconcile"} {
		if !strings.Contains(line, want) {
			t.Errorf("the stop's line does not name %q: %q\n%s", want, line, logs)
		}
	}
	// What it left is finished at the next start (the node answers now).
	f.failing.Store(false)
	r := runner.Recover(t.Context(), &runner.Env{Env: &qatools.Env{Chain: f.direct, Registry: f.direct.Registry(f.reg), Sponsor: f.env.Sponsor}},
		f.dir, "the test")
	if !sandbox.Closed(f.sandbox, m.run) || len(r.Held()) != 0 {
		t.Errorf("the next reconcile did not finish run %s: %+v", m.run, r)
	}
}

// TestShutdownSettlesAFundingTheNodeNeverTook: a run's ledger notes a
// funding at the sponsor's next nonce, and the node never got it (the run
// was cancelled between the note and the send), so its cleanup may not
// call the key empty while that nonce may still be taken by the funding:
// the run stays open, at the start's reconciliation too. Nothing but
// another transaction from the sponsor settles the nonce, and a stopping
// daemon sends none; so the stop has the sponsor send itself nothing
// (qatools.SettleFundings), after which the funding can no longer land,
// and closes the run. Before, it was left open until the next start's
// fundings, and for good for a user who stopped fleetd for good.
func TestShutdownSettlesAFundingTheNodeNeverTook(t *testing.T) {
	f := newStopFixture(t, 5*time.Second)
	ctx := t.Context()
	sponsor := f.env.Sponsor.Address()
	runID := sandbox.NewRunID(time.Now())
	sb, err := sandbox.Open(f.sandbox, runID)
	if err != nil {
		t.Fatal(err)
	}
	key, err := chain.DeriveThrowawayKey(f.env.Sponsor, runID, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The funding's nonce, taken the way qa_create's send notes it; the
	// note's error keeps the transaction from leaving.
	var next uint64
	notSent := errors.New("not sent")
	if _, err := f.direct.SendRawNoted(ctx, f.env.Sponsor, key.Address(), chain.ThrowawayMarker(runID, 0), big.NewInt(1e16),
		func(n uint64, _ bool) error { next = n; return notSent }); !errors.Is(err, notSent) {
		t.Fatalf("the funding's note: %v", err)
	}
	if err := chain.WriteKeyFile(filepath.Join(sb.KeysDir(), "k0.key"), key); err != nil {
		t.Fatal(err)
	}
	name, err := sb.Reserve(key.Address().String(), "k0.key")
	if err == nil {
		err = sb.NoteFunding(name, &next) // noted, never sent
	}
	if err == nil {
		err = sb.SetState(name, sandbox.StateFailed) // qa_create's funding failed
	}
	if err != nil {
		t.Fatal(err)
	}
	sb.Abandon()

	d := f.start(t, nil)
	if sandbox.Closed(f.sandbox, runID) {
		t.Fatalf("the start closed run %s while its funding could still land\n%s", runID, f.logs.String())
	}
	if err := d.Shutdown(30 * time.Second); err != nil {
		t.Errorf("shutdown: %v", err)
	}
	logs := f.logs.String()
	if !sandbox.Closed(f.sandbox, runID) {
		t.Fatalf("run %s left open by the stop\n%s", runID, logs)
	}
	if ok, err := f.direct.NonceSettled(ctx, sponsor, next); err != nil || !ok {
		t.Errorf("the sponsor's nonce %d not mined past after the stop: %v, %v", next, ok, err)
	}
	if bal, err := f.direct.Balance(ctx, key.Address()); err != nil || bal.Sign() != 0 {
		t.Errorf("throwaway key %s holds %v wei (%v)", key.Address(), bal, err)
	}
	if !strings.Contains(logs, `"msg":"finished a run's cleanup at the stop"`) {
		t.Errorf("the log does not say the stop finished run %s:\n%s", runID, logs)
	}
}

// leaveOpen runs the fixture's specialist the way a one-shot command does
// (runner.Run, no daemon), cancels it once it minted a name, and fails its
// cleanup's releases until the run returned, so it leaves its sandbox open.
func (f *stopFixture) leaveOpen(t *testing.T, failAfter bool) minted {
	t.Helper()
	f.failing.Store(true)
	rc := runner.Config{DataDir: f.dir, Build: "test", RunEnded: func() { f.failing.Store(failAfter) }}
	p := fleet.Persona{Name: "smoke", Goal: "mint a name", Tools: []string{"qa_create"}}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := runner.Run(ctx, rc, f.env, p, runner.Options{Model: mintThenWait{f.minted}, ModelName: "test/mint-then-wait"})
		done <- err
	}()
	var m minted
	select {
	case m = <-f.minted:
	case <-time.After(60 * time.Second):
		t.Fatal("no name minted within a minute")
	}
	cancel()
	if err := <-done; !runner.LeftOpen(f.dir, m.run) {
		t.Fatalf("the run's cleanup did not fail (run error %v), so the test shows nothing", err)
	}
	return m
}

// TestFinishLeftOnASecondTry: a one-shot command's run (fleetd probe's,
// an MCP session's) is stopped by a signal and its cleanup fails once.
// FinishLeft, before the command exits, finishes it: the name released,
// the key swept, the sandbox closed, and says so. Before, the probe exited
// with the name held and the key funded until the next command, and for
// good for a user who ran one probe.
func TestFinishLeftOnASecondTry(t *testing.T) {
	f := newStopFixture(t, 0)
	m := f.leaveOpen(t, false)
	var out bytes.Buffer
	r := FinishLeft(t.Context(), f.env, f.dir, "the test", &out)
	if !sandbox.Closed(f.sandbox, m.run) || r.Closed() != 1 || len(r.Held()) != 0 {
		t.Fatalf("run %s not finished: %+v\n%s", m.run, r, out.String())
	}
	ctx := t.Context()
	if owner, err := f.direct.Registry(f.reg).OwnerOf(ctx, m.name); err != nil || !owner.IsZero() {
		t.Errorf("%s still owned by %s (%v)", m.name, owner, err)
	}
	key, err := fleet.ParseAddress(m.owner)
	if err != nil {
		t.Fatalf("qa_create's owner %q: %v", m.owner, err)
	}
	if bal, err := f.direct.Balance(ctx, key); err != nil || bal.Sign() != 0 {
		t.Errorf("throwaway key %s holds %v wei (%v)", key, bal, err)
	}
	if want := "finished run " + m.run + "'s cleanup on a second try: 1 name(s) released"; !strings.Contains(out.String(), want) {
		t.Errorf("FinishLeft said %q, want %q", out.String(), want)
	}
}

// TestFinishLeftSaysWhatItLeaves: the releases keep failing. FinishLeft
// gives up within its bound, even with its caller's context cancelled
// (the command was stopped by a signal), and names the run's held name and
// what finishes it.
func TestFinishLeftSaysWhatItLeaves(t *testing.T) {
	old := stopFinishBound
	stopFinishBound = 2 * time.Second
	t.Cleanup(func() { stopFinishBound = old })
	f := newStopFixture(t, 0)
	m := f.leaveOpen(t, true)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var out bytes.Buffer
	start := time.Now()
	r := FinishLeft(ctx, f.env, f.dir, "the test", &out)
	if took := time.Since(start); took > stopFinishBound+20*time.Second {
		t.Errorf("FinishLeft took %s, over its bound %s", took, stopFinishBound)
	}
	if sandbox.Closed(f.sandbox, m.run) || len(r.Held()) != 1 {
		t.Fatalf("run %s closed though every release failed: %+v", m.run, r)
	}
	for _, want := range []string{"still held", m.name, m.run, "fleetd reconcile"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("FinishLeft's words do not name %q:\n%s", want, out.String())
		}
	}
	if r.Err == nil && !strings.Contains(out.String(), "release") {
		t.Errorf("FinishLeft does not say why it could not finish:\n%s", out.String())
	}
}
