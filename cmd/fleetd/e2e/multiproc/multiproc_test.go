package multiproc

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/big"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/cmd/fleetd/e2e/e2etest"
	"github.com/qafleet/fleetd/configs"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/trajectory"
	"github.com/qafleet/fleetd/triage"
	"go.yaml.in/yaml/v3"
)

// TestManyProcessesOneLog runs eight fleetd processes against one chain and
// one platform at once, each with its own data dir and all with the same
// fleet identity and sponsor key: four daemons with one specialist each and
// four `fleetd probe` loops, killing one at random every few seconds. Then:
// no acknowledged finding is lost, no fingerprint is on the log twice within
// the dedupe window, no post failed for a nonce race, no wei is stranded
// after `fleetd reconcile --from-chain`, and two triages of the log from
// different data dirs agree.
func TestManyProcessesOneLog(t *testing.T) {
	if testing.Short() {
		t.Skip("eight processes for minutes")
	}
	dur := 3 * time.Minute
	if d, err := time.ParseDuration(os.Getenv("FLEETD_MULTIPROC_DURATION")); err == nil {
		dur = d
	}
	bin := e2etest.Fleetd(t)
	baseDir := t.TempDir()
	var info struct{ RPC, FeedbackLog, SponsorKeyFile, FleetKeyFile string }
	line := e2etest.Background(t, exec.Command(bin, "chain", "devnet", "--data-dir", baseDir), nil)
	var dn map[string]any
	if err := json.Unmarshal([]byte(line), &dn); err != nil {
		t.Fatalf("devnet printed %q: %v", line, err)
	}
	info.RPC, info.FeedbackLog = dn["rpc"].(string), dn["feedback_log"].(string)
	info.SponsorKeyFile, info.FleetKeyFile = dn["sponsor_key_file"].(string), dn["fleet_key_file"].(string)
	tbLine := e2etest.Background(t, exec.Command(bin, "testbed", "serve", "--config", dn["config"].(string)), nil)
	var tb struct{ Target map[string]any }
	if err := json.Unmarshal([]byte(tbLine), &tb); err != nil || tb.Target == nil {
		t.Fatalf("testbed printed %q: %v", tbLine, err)
	}
	fleetKey, err := chain.LoadKey(info.FleetKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	type proc struct {
		name, config, data string
		args               []string
		daemon             bool
		mu                 sync.Mutex
		cmd                *exec.Cmd
		log                *os.File
	}
	// mk writes a data dir with the built-in personas (specialist firing
	// every 4 s, the others hourly; a daemon keeps only its own) and a config
	// for the shared chain and testbed, at dial exercise.
	mk := func(i int, name string, daemon bool, specialist string) *proc {
		data := filepath.Join(t.TempDir(), fmt.Sprintf("p%d", i))
		pdir := filepath.Join(data, "personas")
		if err := os.MkdirAll(pdir, 0o700); err != nil {
			t.Fatal(err)
		}
		files, _ := fs.Glob(configs.Personas, "personas/*.yaml")
		for _, f := range files {
			b, _ := fs.ReadFile(configs.Personas, f)
			var p fleet.Persona
			if err := yaml.Unmarshal(b, &p); err != nil {
				t.Fatal(err)
			}
			if daemon && p.Name != specialist {
				continue
			}
			p.Trigger = fleet.Trigger{Every: time.Hour}
			if p.Name == specialist {
				p.Trigger = fleet.Trigger{Every: 4 * time.Second}
			}
			p.Budget.Deadline = 2 * time.Minute
			switch p.Name {
			case "fuzz":
				p.Budget.MaxTurns = 30
			case "perf":
				p.Budget.MaxTurns = 25
			}
			out, _ := yaml.Marshal(p)
			if err := os.WriteFile(filepath.Join(pdir, filepath.Base(f)), out, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		cfg := map[string]any{
			"data_dir": data, "personas_dir": pdir,
			"chain": map[string]any{"rpc": info.RPC, "chain_id": 1337, "feedback_log": info.FeedbackLog,
				"fleet_key_file": info.FleetKeyFile, "sponsor_key_file": info.SponsorKeyFile,
				"trusted_senders": []string{fleetKey.Address().String()}},
			"target": tb.Target,
			"daemon": map[string]any{"http_addr": "127.0.0.1:0", "max_concurrent": 2, "poll_interval": "1s"},
			"tools":  map[string]any{"compile_timeout": "5s", "call_timeout": "5s"},
			"report": map[string]any{"dedupe_window": "1h"},
		}
		b, _ := yaml.Marshal(cfg)
		path := filepath.Join(data, "fleetd.yaml")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := fleet.NewControl(data).SetDial(fleet.Exercise, "test", "test"); err != nil {
			t.Fatal(err)
		}
		logf, _ := os.Create(filepath.Join(t.TempDir(), name+".log"))
		p := &proc{name: name, config: path, data: data, daemon: daemon, log: logf}
		if daemon {
			p.args = []string{"run", "--config", path, "--log-level", "warn"}
		} else {
			p.args = []string{"probe", specialist, "--config", path}
		}
		return p
	}
	// fleetd runs the CLI once with the built binary.
	fleetdCmd := func(args ...string) (string, string, int) {
		cmd := exec.Command(bin, args...)
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return out.String(), errb.String(), code
	}
	procs := []*proc{
		mk(0, "daemon-smoke", true, "smoke"), mk(1, "daemon-security", true, "security"),
		mk(2, "daemon-ux", true, "ux"), mk(3, "daemon-perf", true, "perf"),
		mk(4, "probe-security", false, "security"), mk(5, "probe-ux", false, "ux"),
		mk(6, "probe-smoke", false, "smoke"), mk(7, "probe-fuzz", false, "fuzz"),
	}
	start := func(p *proc) {
		cmd := exec.Command(bin, p.args...)
		cmd.Stdout, cmd.Stderr = p.log, p.log
		if err := cmd.Start(); err != nil {
			t.Error(err)
			return
		}
		p.mu.Lock()
		p.cmd = cmd
		p.mu.Unlock()
	}
	deadline := time.Now().Add(dur)
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Add(1)
		go func() { // keep each process running (a daemon restarted, a probe looped)
			defer wg.Done()
			for time.Now().Before(deadline) {
				start(p)
				p.mu.Lock()
				cmd := p.cmd
				p.mu.Unlock()
				if cmd == nil {
					return
				}
				cmd.Wait()
			}
		}()
	}
	rng := rand.New(rand.NewPCG(7, 11))
	kills := 0
	for time.Now().Before(deadline.Add(-10 * time.Second)) {
		time.Sleep(time.Duration(3000+rng.IntN(5000)) * time.Millisecond)
		p := procs[rng.IntN(len(procs))]
		p.mu.Lock()
		if p.cmd != nil && p.cmd.Process != nil {
			p.cmd.Process.Signal(syscall.SIGKILL)
			kills++
		}
		p.mu.Unlock()
	}
	// Time is up: daemons stop gracefully, probe loops finish their run.
	time.Sleep(time.Until(deadline))
	for _, p := range procs {
		if p.daemon {
			p.mu.Lock()
			if p.cmd != nil && p.cmd.Process != nil {
				p.cmd.Process.Signal(syscall.SIGTERM)
			}
			p.mu.Unlock()
		}
	}
	wg.Wait()
	t.Logf("%d processes for %s, %d SIGKILLs", len(procs), dur, kills)

	// Every data dir finishes what its killed runs left: names, funds, outbox.
	for _, p := range procs {
		if _, stderr, code := fleetdCmd("reconcile", "--config", p.config); code != 0 {
			t.Errorf("%s: reconcile: %s", p.name, stderr)
		}
	}
	// And the chain alone catches the rest (as if the disks were gone).
	if out, stderr, code := fleetdCmd("reconcile", "--from-chain", "--older-than", "0s", "--config", procs[0].config); code != 0 {
		t.Errorf("reconcile --from-chain: %s\n%s", stderr, out)
	}

	ctx := context.Background()
	cl, err := chain.Dial(ctx, info.RPC, chain.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	sponsor, _ := chain.LoadKey(info.SponsorKeyFile)

	// No fingerprint twice on the log (the test is shorter than the window).
	perFP := map[string]int{}
	if _, err := cl.FeedbackLog(mustParseAddr(t, info.FeedbackLog)).Scan(ctx, 0, func(page []chain.Entry) error {
		for _, e := range page {
			if fd, err := fleet.Parse(e.Text); err == nil && e.Sender == fleetKey.Address() && fd.Fingerprint != "" && fd.Kind.OrDefault() == fleet.KindFinding {
				perFP[fd.Fingerprint]++
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for fp, n := range perFP {
		if n > 1 {
			t.Errorf("fingerprint %s is on the log %d times", fp, n)
		}
	}

	// No acknowledged finding lost; no post failed (a queued finding with
	// the chain up the whole time means a post failed).
	acked, queued, runs := 0, 0, 0
	for _, p := range procs {
		files, _ := filepath.Glob(filepath.Join(p.data, trajectory.RunsDir, "*.jsonl"))
		for _, file := range files {
			rec, err := trajectory.ReadAll(file)
			if err != nil {
				t.Errorf("%s: %v", file, err)
				continue
			}
			runs++
			for _, turn := range rec.Turns() {
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
				if !res.OK {
					continue
				}
				switch res.Status {
				case "queued":
					queued++
					fallthrough
				case "posted", "deduped":
					acked++
					if perFP[res.FP] == 0 {
						t.Errorf("%s: finding %s was acknowledged (%s) but is not on the log", filepath.Base(file), res.FP, res.Status)
					}
				}
			}
		}
	}
	if queued > 0 {
		t.Errorf("%d findings were queued although the chain never went down: posts failed", queued)
	}
	for _, p := range procs {
		b, _ := os.ReadFile(p.log.Name())
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, "posting failed") || strings.Contains(l, "nonce too low") || strings.Contains(l, "replacement transaction") {
				t.Errorf("%s: %s", p.name, l)
			}
		}
	}

	// No wei stranded: every key the sponsor funded is empty and holds no name.
	head, _ := cl.BlockNumber(ctx)
	fundings, err := cl.FundingsBy(ctx, sponsor.Address(), 0, head)
	if err != nil {
		t.Fatal(err)
	}
	reg := cl.Registry(mustParseAddr(t, tb.Target["registry"].(string)))
	stranded := new(big.Int)
	for _, f := range fundings {
		if bal, _ := cl.Balance(ctx, f.To); bal.Sign() != 0 {
			stranded.Add(stranded, bal)
			t.Errorf("run %s key %d (%s) holds %s wei", f.Run, f.N, f.To, bal)
		}
		names, _ := reg.NamesRegisteredTo(ctx, f.To, 0, head)
		for _, n := range names {
			if owner, _ := reg.OwnerOf(ctx, n); owner == f.To {
				t.Errorf("%s is still registered to run %s's key", n, f.Run)
			}
		}
	}

	// Triage is a function of the log: two data dirs agree.
	// Each posts its meta summary once (rate-limited per data dir), so the
	// log settles after a first pass of each; the second passes compare.
	fresh := mk(8, "fresh", false, "smoke")
	var reports []fleet.Report
	for i, p := range []*proc{procs[0], fresh, procs[0], fresh} {
		if _, stderr, code := fleetdCmd("triage", "--config", p.config); code != 0 {
			t.Fatalf("triage: %s", stderr)
		}
		if i < 2 {
			continue
		}
		r, err := triage.LoadReport(filepath.Join(p.data, triage.ReportsDir))
		if err != nil {
			t.Fatal(err)
		}
		r.GeneratedAt = time.Time{}
		for i := range r.Clusters {
			r.Clusters[i].Score = float64(int(r.Clusters[i].Score*1e6)) / 1e6
		}
		reports = append(reports, r)
	}
	if diff := cmp.Diff(reports[0], reports[1]); diff != "" {
		t.Errorf("two triages of one log differ (-first +fresh):\n%s", diff)
	}
	t.Logf("%d runs, %d findings acknowledged, %d distinct fingerprints on the log, %d throwaway keys funded, %s wei stranded",
		runs, acked, len(perFP), len(fundings), stranded)
	if acked == 0 || len(fundings) == 0 {
		t.Errorf("the processes acknowledged %d findings and funded %d keys: the test did not exercise posting and cleanup", acked, len(fundings))
	}
}

func mustParseAddr(t *testing.T, s string) fleet.Address {
	t.Helper()
	a, err := fleet.ParseAddress(s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
