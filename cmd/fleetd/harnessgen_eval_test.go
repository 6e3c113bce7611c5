//go:build harnesseval

package main

// The generated-harness evaluation (issue 31): real Go libraries that ship
// no native fuzz target, each given to `fleetd probe fuzz` only as
// target.repo (a plain copy of the module source from the module cache)
// at a release with a public crasher and at a fixed release. Opt-in (it
// fuzzes for up to ten minutes a library):
//
//	FLEETD_HARNESS_EVAL=gjson,jsonparser,toml go test -tags harnesseval -run TestHarnessGenEval -timeout 2h -v ./cmd/fleetd/
//
// Each buggy release must give at least one finding within the fuzz
// persona's ten minutes, each posted once (one per crash state), all of
// them library bugs (harness crashes are never posted); the reproducer
// test kept for a finding fails on the buggy release and passes on the
// fixed one; the fixed release gives no finding.

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
	"go.yaml.in/yaml/v3"
)

type evalLib struct {
	name, mod, buggy, fixed, bug string
}

// evalLibs: each buggy release has a public crash a byte or string input
// reaches through the library's exported API.
var evalLibs = []evalLib{
	// tidwall/gjson#192 (CVE-2020-35380): Get with a crafted path panics in
	// squash, "slice bounds out of range"; fixed in v1.6.4.
	{"gjson", "github.com/tidwall/gjson", "v1.6.3", "v1.20.4", "gjson.squash"},
	// buger/jsonparser#219 (CVE-2020-35381) and go-fuzz's earlier reports:
	// Get/GetString on malformed JSON panic in searchKeys; fixed in v1.1.0.
	{"jsonparser", "github.com/buger/jsonparser", "v1.0.0", "v1.6.1", "jsonparser.searchKeys"},
	// BurntSushi/toml#352: Decode of a document ending in bad UTF-8
	// panics in the lexer, "slice bounds out of range"; fixed in v1.1.0.
	{"toml", "github.com/BurntSushi/toml", "v1.0.0", "v1.5.0", "toml."},
}

// moduleCopy downloads mod@version through the module proxy and copies its
// source to a writable directory: what a user's checkout of it would be.
func moduleCopy(t *testing.T, mod, version string) string {
	t.Helper()
	cmd := exec.Command("go", "mod", "download", "-json", mod+"@"+version)
	cmd.Dir = t.TempDir()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod download %s@%s: %v", mod, version, err)
	}
	var d struct{ Dir string }
	if err := json.Unmarshal(out, &d); err != nil || d.Dir == "" {
		t.Fatalf("go mod download %s@%s: %s", mod, version, out)
	}
	dst := filepath.Join(t.TempDir(), filepath.Base(mod)+"@"+version)
	if err := os.CopyFS(dst, os.DirFS(d.Dir)); err != nil {
		t.Fatal(err)
	}
	filepath.WalkDir(dst, func(p string, de os.DirEntry, err error) error {
		if err == nil {
			info, _ := de.Info()
			os.Chmod(p, info.Mode()|0o200)
		}
		return nil
	})
	return dst
}

// evalProbe runs `fleetd probe fuzz` on a repository copy and returns the
// findings the fuzz specialist posted, its data dir and how long it took.
func evalProbe(t *testing.T, repo string) ([]fleet.Finding, string, time.Duration) {
	t.Helper()
	f := newFleetFixture(t, fleet.Observe, nil)
	patchConfig(t, f.config, func(cfg map[string]any) {
		target := cfg["target"].(map[string]any)
		delete(target, "compiler")
		delete(target, "corpus")
		target["repo"] = map[string]any{"url": repo}
	})
	// The go command's caches under the data dir (fuzz/go) are shared
	// across the evaluation's runs, as a long-running daemon's are across
	// its runs: a cold one rebuilds the standard library several ways.
	if cache, err := os.UserCacheDir(); err == nil {
		shared := filepath.Join(cache, "fleetd-harnesseval")
		os.MkdirAll(shared, 0o700)
		os.MkdirAll(filepath.Join(f.dataDir, "fuzz"), 0o700)
		if err := os.Symlink(shared, filepath.Join(f.dataDir, "fuzz", "go")); err != nil {
			t.Fatal(err)
		}
	}
	persona := filepath.Join(f.dataDir, "personas", "fuzz.yaml")
	pb, err := os.ReadFile(persona)
	if err != nil {
		t.Fatal(err)
	}
	var p fleet.Persona
	if err := yaml.Unmarshal(pb, &p); err != nil {
		t.Fatal(err)
	}
	p.Budget.MaxTurns = 150              // the fixture's small budget is for the testbed's compiler
	p.Budget.Deadline = 10 * time.Minute // the fuzz persona's own (the demo config cuts it to 3)
	if pb, err = yaml.Marshal(p); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(persona, pb, 0o600)
	start := time.Now()
	out, errOut, code := run(t, "", "--config", f.config, "probe", "fuzz")
	took := time.Since(start)
	t.Logf("probe fuzz (%v, exit %d):\n%s\n%s", took.Round(time.Second), code, clipEval(out, 6000), clipEval(errOut, 2000))
	ctx := context.Background()
	cl, err := chain.Dial(ctx, f.dn.Info.RPC, chain.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var fs []fleet.Finding
	if _, err := cl.FeedbackLog(mustParseAddr(t, f.dn.Info.FeedbackLog)).Scan(ctx, 0, func(p []chain.Entry) error {
		for _, e := range p {
			if fd, err := fleet.Parse(e.Text); err == nil && fd.Kind == "" {
				fs = append(fs, fd)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	logHarnesses(t, f.dataDir)
	return fs, f.dataDir, firstReport(t, f.dataDir, took)
}

// logHarnesses logs what the generator kept for the run: harnesses
// generated, dropped and the harness crashes counted (never posted).
func logHarnesses(t *testing.T, dataDir string) {
	mems, _ := filepath.Glob(filepath.Join(dataDir, "fuzz", "harness-gen-*", "harnesses.json"))
	for _, m := range mems {
		b, err := os.ReadFile(m)
		if err != nil {
			continue
		}
		var mem struct {
			Entries []struct{ Dropped string }
			Dropped map[string]string `json:"dropped"`
			Crashes map[string]int    `json:"harness_crashes"`
		}
		if json.Unmarshal(b, &mem) != nil {
			continue
		}
		live, crashes := 0, 0
		for _, e := range mem.Entries {
			if e.Dropped == "" {
				live++
			}
		}
		for _, n := range mem.Crashes {
			crashes += n
		}
		t.Logf("harnesses: %d generated, %d dropped at generation, %d entries dropped after harness crashes, %d harness crashes counted %v", live, len(mem.Entries)-live, len(mem.Dropped), crashes, mem.Crashes)
	}
}

// firstReport is how long after the run's start its first qa_report call
// began (from the run record; took when it made none): the deadline ends
// a run at the next tool boundary, so the run itself may pass ten minutes
// by one session while its findings were posted well before.
func firstReport(t *testing.T, dataDir string, took time.Duration) time.Duration {
	recs, _ := filepath.Glob(filepath.Join(dataDir, "runs", "*.jsonl"))
	for _, r := range recs {
		b, err := os.ReadFile(r)
		if err != nil {
			continue
		}
		var start time.Time
		for _, l := range strings.Split(string(b), "\n") {
			var d struct {
				Type      string    `json:"type"`
				StartedAt time.Time `json:"started_at"`
				Action    *struct {
					Tool string `json:"tool"`
				} `json:"proposed_action"`
			}
			if json.Unmarshal([]byte(l), &d) != nil {
				continue
			}
			if d.Type == "header" {
				start = d.StartedAt
			}
			if d.Action != nil && d.Action.Tool == "qa_report" && !start.IsZero() {
				t.Logf("first qa_report %v after the run's start", d.StartedAt.Sub(start).Round(time.Second))
				return d.StartedAt.Sub(start)
			}
		}
	}
	return took
}

func clipEval(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func TestHarnessGenEval(t *testing.T) {
	want := os.Getenv("FLEETD_HARNESS_EVAL")
	if want == "" {
		t.Skip("set FLEETD_HARNESS_EVAL=gjson,jsonparser,toml (or all)")
	}
	for _, lib := range evalLibs {
		if want != "all" && !strings.Contains(","+want+",", ","+lib.name+",") {
			continue
		}
		t.Run(lib.name, func(t *testing.T) {
			buggy := moduleCopy(t, lib.mod, lib.buggy)
			fs, dataDir, took := evalProbe(t, buggy)
			seen := map[string]bool{}
			found := false
			for _, f := range fs {
				t.Logf("finding %s %s: %s", f.Severity, f.Fingerprint, f.Summary)
				if seen[f.Fingerprint] {
					t.Errorf("posted twice: %s", f.Fingerprint)
				}
				seen[f.Fingerprint] = true
				if !strings.Contains(f.Summary, "Go library "+lib.mod) {
					t.Errorf("a finding that is not the library's: %s", f.Summary)
				}
				found = found || strings.Contains(f.Summary, lib.bug)
			}
			if !found {
				t.Fatalf("%s@%s: no finding in %s after %v", lib.mod, lib.buggy, lib.bug, took)
			}
			if took > 10*time.Minute {
				t.Errorf("the first finding came %v after the start, more than 10 minutes", took)
			}
			repros, _ := filepath.Glob(filepath.Join(dataDir, "fuzz", "*", "repro", "*_test.go"))
			if len(repros) == 0 {
				t.Fatal("no reproducer kept")
			}
			fixed := moduleCopy(t, lib.mod, lib.fixed)
			for _, r := range repros {
				src, _ := os.ReadFile(r)
				for dir, wantFail := range map[string]bool{buggy: true, fixed: false} {
					dst := filepath.Join(dir, filepath.Base(r)) // every evaluated library's API is at its module root
					os.WriteFile(dst, src, 0o644)
					cmd := exec.Command("go", "test", "-count=1", "-run", "^TestFleetdRepro", ".")
					cmd.Dir, cmd.Env = dir, append(os.Environ(), "GOFLAGS=-mod=mod")
					out, err := cmd.CombinedOutput()
					if (err != nil) != wantFail {
						t.Errorf("reproducer %s on %s: failed=%v, want %v:\n%s", filepath.Base(r), filepath.Base(dir), err != nil, wantFail, clipEval(string(out), 1500))
					}
					os.Remove(dst)
				}
			}
			fs, _, took = evalProbe(t, fixed)
			for _, f := range fs {
				t.Errorf("%s@%s (fixed) gave a finding after %v: %s", lib.mod, lib.fixed, took, f.Summary)
			}
		})
	}
}
