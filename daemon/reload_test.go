package daemon

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/chain/devchain"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/poster"
	"github.com/qafleet/fleetd/qatools"
	"github.com/qafleet/fleetd/runner"
	"github.com/qafleet/fleetd/trajectory"
)

// TestReloadUnderLoad reloads the daemon every 100 ms, each time with
// another persona set (so the schedules are replaced too), while specialists and triage passes run on the runner and
// the console, the status and the metrics are read in a loop, on the dev
// chain. Every reload must take, every request answer, the runs and the
// triage passes go on, and the daemon stop cleanly. Under -race (.ci/run) it is the proof that a reload swaps a
// snapshot no reader shares.
func TestReloadUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a daemon and a chain")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dc := startDevChain(t)
	ch, client, flog := dc.chain, dc.client, dc.log
	reg, _, err := client.DeployNameRegistry(ctx, dc.sponsor)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, trajectory.RunsDir), 0o700); err != nil {
		t.Fatal(err)
	}
	env := &runner.Env{Env: &qatools.Env{Log: flog, Registry: reg}, Control: fleet.NewControl(dir), Client: client}

	var runs, triages atomic.Int64
	var snapshots atomic.Int64
	snapshot := func() *Snapshot {
		n := snapshots.Add(1)
		cfg := Config{HTTPAddr: "127.0.0.1:0", MaxConcurrent: 2, TriageEvery: time.Second,
			ChainRPC: ch.URL(), DataDir: dir, ReportsDir: filepath.Join(dir, "reports"), FuzzDir: filepath.Join(dir, "fuzz"),
			SandboxDir: filepath.Join(dir, "qa-sandbox")}
		var ps []fleet.Persona
		for i, name := range []string{"smoke", "security", "ux", "perf"} {
			if n%2 == 0 && i == 3 {
				break // every other snapshot drops perf: the schedules change
			}
			ps = append(ps, fleet.Persona{Name: name, Trigger: fleet.Trigger{Every: time.Second}})
		}
		w := Work{
			Run: func(ctx context.Context, _ *runner.Env, p fleet.Persona, _ runner.Options) (fleet.RunResult, error) {
				runs.Add(1)
				select {
				case <-time.After(300 * time.Millisecond):
				case <-ctx.Done():
				}
				return fleet.RunResult{Outcome: trajectory.OutcomeDone, Summary: p.Name}, nil
			},
			Triage: func(context.Context, *poster.Poster) (int, fleet.Report, error) {
				triages.Add(1)
				return 0, fleet.Report{}, nil
			},
		}
		return NewSnapshot(cfg, w, ps)
	}
	var logs lockedBuffer
	d, err := Start(ctx, Options{
		Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo})), Narrate: io.Discard,
		Env: env, Snapshot: snapshot(), Reload: func() (*Snapshot, error) { return snapshot(), nil },
		Token: func(bool) (string, error) { return "tok", nil }, Version: "test",
	})
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + d.HTTPAddr()

	const load = 5 * time.Second
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var requests, failures atomic.Int64
	var firstFailure atomic.Value
	for _, path := range []string{"/api/fleet", "/api/status", "/metrics", "/fleet", "/api/runs"} {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				res, err := http.Get(base + path)
				if err == nil {
					io.Copy(io.Discard, res.Body)
					res.Body.Close()
					if res.StatusCode != http.StatusOK {
						err = fmt.Errorf("%s: %s", path, res.Status)
					}
				}
				requests.Add(1)
				if err != nil {
					failures.Add(1)
					firstFailure.CompareAndSwap(nil, err.Error())
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
	reloads := 0
	for end := time.Now().Add(load); time.Now().Before(end); reloads++ {
		d.Reload()
		_ = d.ShareLine() // the demo's closing note reads the snapshot too
		time.Sleep(100 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if err := d.Shutdown(30 * time.Second); err != nil {
		t.Errorf("shutdown: %v", err)
	}
	out := logs.String()
	if got := strings.Count(out, `"msg":"reloaded"`); got != reloads {
		t.Errorf("%d reloads logged, want %d:\n%s", got, reloads, out)
	}
	if strings.Contains(out, "reload: keeping") {
		t.Errorf("a reload was refused:\n%s", out)
	}
	finished := 0
	for _, name := range []string{"smoke", "security", "ux", "perf"} {
		n, _ := d.Runner().Counts(name)
		finished += n
	}
	if failures.Load() > 0 || requests.Load() < 50 || runs.Load() < 4 || finished < 2 || triages.Load() < 1 {
		t.Errorf("%d requests, %d failed (first: %v); %d runs started, %d finished, %d triage passes; %d reloads",
			requests.Load(), failures.Load(), firstFailure.Load(), runs.Load(), finished, triages.Load(), reloads)
	}
	t.Logf("%d reloads, %d requests, %d runs started, %d finished, %d triage passes", reloads, requests.Load(), runs.Load(), finished, triages.Load())
}

// lockedBuffer is a bytes.Buffer the daemon's logger and the test share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// devChain is the embedded dev chain with a funded sponsor and a feedback
// log deployed.
type devChain struct {
	chain   *devchain.Chain
	client  *chain.Client
	sponsor *chain.Key
	log     *chain.FeedbackLog
}

func startDevChain(t *testing.T) devChain {
	t.Helper()
	ctx := context.Background()
	sponsor, _ := chain.GenerateKey()
	ch, err := devchain.Start(ctx, devchain.Config{Funded: []devchain.Account{
		{Address: sponsor.Address(), Wei: new(big.Int).Mul(big.NewInt(1e18), big.NewInt(1000))},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.Close() })
	client, err := chain.Dial(ctx, ch.URL(), chain.Options{ReceiptTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	log, _, err := client.DeployFeedbackLog(ctx, sponsor)
	if err != nil {
		t.Fatal(err)
	}
	return devChain{chain: ch, client: client, sponsor: sponsor, log: log}
}
