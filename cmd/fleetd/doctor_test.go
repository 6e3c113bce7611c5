package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/doctor"
	"github.com/qafleet/fleetd/fleet"
	"go.yaml.in/yaml/v3"
)

// editConfig writes a copy of the YAML config at path with edit applied to
// its decoded form, and returns the copy's path.
func editConfig(t *testing.T, path string, edit func(cfg map[string]any)) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	edit(cfg)
	out, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "fleetd.yaml")
	if err := os.WriteFile(p, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func section(cfg map[string]any, name string) map[string]any { return cfg[name].(map[string]any) }

// doctorLine returns the output line of the named check.
func doctorLine(out, name string) string {
	for _, l := range strings.Split(out, "\n") {
		if len(l) > 4 && strings.HasPrefix(strings.TrimSpace(l[4:]), name+" ") {
			return l
		}
	}
	return ""
}

// TestDoctor breaks the setup one way at a time and checks that doctor
// names the broken part with its fix, passes everything else it could check,
// and exits non-zero; and that a sound setup passes every check.
func TestDoctor(t *testing.T) {
	f := newFleetFixture(t, fleet.Observe, nil)
	out, stderr, code := run(t, "", "doctor", "--config", f.config)
	if code != 0 {
		t.Fatalf("doctor on a sound setup exited %d:\n%s%s", code, out, stderr)
	}
	for _, name := range []string{"config", "rpc", "feedback log", "fleet key", "sponsor key", "sponsor funds", "trusted",
		"url target.faces", "url target.call", "url target.docs[0]", "corpus", "compiler", "data dir", "dial", "kill switch", "outbox"} {
		if l := doctorLine(out, name); !strings.HasPrefix(l, "✓") {
			t.Errorf("check %q: %q, want ✓\n%s", name, l, out)
		}
	}
	if strings.Contains(out, "✗") {
		t.Errorf("a sound setup shows a failure:\n%s", out)
	}

	// Keys for the broken cases: an unfunded sponsor, a group-readable fleet key.
	empty := filepath.Join(t.TempDir(), "empty.key")
	if _, _, err := chain.LoadOrCreateKey(empty); err != nil {
		t.Fatal(err)
	}
	loose := filepath.Join(t.TempDir(), "loose.key")
	b, _ := os.ReadFile(f.dn.Info.FleetKeyFile)
	os.WriteFile(loose, b, 0o644)
	os.Chmod(loose, 0o644)
	// A contract that is not a FeedbackLog: the testbed's name registry.
	registry := f.tb.Registry()

	tests := []struct {
		name  string
		edit  func(cfg map[string]any)
		check string // the failing line
		want  []string
	}{
		{"unreachable rpc", func(c map[string]any) { section(c, "chain")["rpc"] = "http://127.0.0.1:1" },
			"rpc", []string{"unreachable", "fix: start the node, or fix chain.rpc"}},
		{"wrong chain id", func(c map[string]any) { section(c, "chain")["chain_id"] = 5 },
			"rpc", []string{"fix: fix chain.chain_id"}},
		{"not a feedback log", func(c map[string]any) { section(c, "chain")["feedback_log"] = registry },
			"feedback log", []string{"not a FeedbackLog", "feedbackCount()", "fix: point chain.feedback_log"}},
		{"no contract", func(c map[string]any) {
			section(c, "chain")["feedback_log"] = "0x00000000000000000000000000000000000000aa"
		}, "feedback log", []string{"no contract at address", "fleetd chain deploy"}},
		{"empty sponsor", func(c map[string]any) { section(c, "chain")["sponsor_key_file"] = empty },
			"sponsor funds", []string{"holds 0 ETH", "fix: fund 0x"}},
		{"key readable by others", func(c map[string]any) { section(c, "chain")["fleet_key_file"] = loose },
			"fleet key", []string{"readable by other users", "fix: chmod 600 " + loose}},
		{"url not allowed", func(c map[string]any) { section(c, "target")["fetch_allow"] = []string{"127.0.0.1:1"} },
			"url target.faces", []string{"not on the fetch allowlist", "fix: add its host:port to target.fetch_allow"}},
		{"compiler does not run", func(c map[string]any) {
			section(c, "target")["compiler"] = []string{"/nonexistent/tlc", "{src}"}
		}, "compiler", []string{"/nonexistent/tlc does not run", "fix: fix target.compiler"}},
		{"compiler rejects the corpus", func(c map[string]any) {
			section(c, "target")["compiler"] = []string{"/bin/false", "{src}"}
		}, "compiler", []string{"failed on the first corpus program (exit 1", "fix: check target.compiler"}},
		{"no corpus", func(c map[string]any) { section(c, "target")["corpus"] = "/nonexistent/corpus" },
			"corpus", []string{"/nonexistent/corpus", "fix: set target.corpus"}},
		{"untrusted identity", func(c map[string]any) {
			section(c, "chain")["trusted_senders"] = []string{"0x00000000000000000000000000000000000000bb"}
		}, "trusted", []string{"is not in chain.trusted_senders", "fix: add 0x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := editConfig(t, f.config, tt.edit)
			out, _, code := run(t, "", "doctor", "--config", cfg)
			if code != 1 {
				t.Errorf("exit %d, want 1", code)
			}
			l := doctorLine(out, tt.check)
			if !strings.HasPrefix(l, "✗") {
				t.Fatalf("check %q: %q, want ✗\n%s", tt.check, l, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(l, w) {
					t.Errorf("check %q: %q does not say %q", tt.check, l, w)
				}
			}
			// One cause: every other failure is a check it made impossible
			// or the same cause seen again (the same fix).
			fix := l[strings.Index(l, "fix:"):]
			for _, other := range strings.Split(out, "\n") {
				if strings.HasPrefix(other, "✗") && other != l && !strings.Contains(other, "not checked:") && !strings.HasSuffix(other, fix) {
					t.Errorf("another failure for one misconfiguration: %q\n%s", other, out)
				}
			}
			if strings.Contains(out, strings.TrimSpace(string(b))) {
				t.Error("doctor printed key material")
			}
		})
	}

	t.Run("bad config", func(t *testing.T) {
		cfg := filepath.Join(t.TempDir(), "bad.yaml")
		os.WriteFile(cfg, []byte("chain:\n  rpcc: http://x\n"), 0o600)
		out, _, code := run(t, "", "doctor", "--config", cfg, "--data-dir", t.TempDir())
		if l := doctorLine(out, "config"); code != 1 || !strings.HasPrefix(l, "✗") || !strings.Contains(l, "rpcc") {
			t.Errorf("exit %d, config line %q\n%s", code, l, out)
		}
	})
	t.Run("paused", func(t *testing.T) {
		dir := t.TempDir()
		cfg := editConfig(t, f.config, func(c map[string]any) { c["data_dir"] = dir })
		fleet.NewControl(dir).Pause("test", "test")
		out, _, code := run(t, "", "doctor", "--config", cfg)
		if l := doctorLine(out, "kill switch"); code != 1 || !strings.Contains(l, "✗") || !strings.Contains(l, "fleetd resume") {
			t.Errorf("exit %d, kill switch line %q", code, l)
		}
	})
	t.Run("run refuses on a fatal check", func(t *testing.T) {
		cfg := editConfig(t, f.config, func(c map[string]any) { section(c, "chain")["feedback_log"] = registry })
		_, stderr, code := run(t, "", "run", "--config", cfg)
		if code != 2 || !strings.Contains(stderr, "refusing to start: feedback log") || !strings.Contains(stderr, "fleetd doctor") {
			t.Errorf("run exited %d: %s", code, stderr)
		}
	})
}

// TestPrintedPathsWorkElsewhere starts the printers (devnet, testbed serve)
// in one directory with a relative data dir, then pastes what they printed
// into a config in another directory and uses it there: every path they
// print must be absolute and must work.
func TestPrintedPathsWorkElsewhere(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	t.Chdir(a)
	info := startDevnetCmd(t, "rel-data")
	for _, p := range []string{info.SponsorKeyFile, info.FleetKeyFile, info.Config} {
		if !filepath.IsAbs(p) {
			t.Errorf("devnet prints %q: not absolute", p)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, []string{"testbed", "serve", "--config", "rel-data/devnet.yaml"}, strings.NewReader(""), &out, &errb)
	}()
	t.Cleanup(func() { cancel(); <-done })
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), "\n") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	var line struct{ Target map[string]any }
	if err := json.Unmarshal([]byte(out.String()), &line); err != nil || line.Target == nil {
		t.Fatalf("testbed serve printed %q (%v); stderr %s", out.String(), err, errb.String())
	}
	if c, _ := line.Target["corpus"].(string); !filepath.IsAbs(c) {
		t.Errorf("testbed prints corpus %q: not absolute", c)
	}
	written := strings.TrimSpace(errb.String())
	if !strings.Contains(written, filepath.Join(a, "rel-data", "testbed.yaml")) {
		t.Errorf("testbed serve should name the absolute config it wrote: %q", written)
	}

	// Elsewhere: a config pasted together from the two printed lines. The
	// compiler is swapped for a wrapper only because in this test "the
	// running fleetd" is the test binary.
	t.Chdir(b)
	self, _ := os.Executable()
	wrapper := filepath.Join(b, "tlc")
	os.WriteFile(wrapper, []byte(fmt.Sprintf("#!/bin/sh\nFLEETD_TEST_MAIN=1 exec %q testbed compile \"$@\"\n", self)), 0o755)
	line.Target["compiler"] = []string{wrapper, "{src}"}
	cfg := map[string]any{
		"data_dir": "here",
		"chain": map[string]any{"rpc": info.RPC, "chain_id": info.ChainID, "feedback_log": info.FeedbackLog,
			"fleet_key_file": info.FleetKeyFile, "sponsor_key_file": info.SponsorKeyFile},
		"target": line.Target,
	}
	y, _ := yaml.Marshal(cfg)
	os.WriteFile("pasted.yaml", y, 0o600)
	dout, derr, code := run(t, "", "doctor", "--config", "pasted.yaml")
	if code != 0 {
		t.Fatalf("doctor from another directory with the printed lines: exit %d\n%s%s", code, dout, derr)
	}
	if l := doctorLine(dout, "corpus"); !strings.Contains(l, filepath.Join(a, "rel-data")) {
		t.Errorf("corpus line %q does not name the corpus in the testbed's directory", l)
	}
	tout, terr, code := run(t, "", "triage", "--config", "pasted.yaml")
	if code != 0 || !strings.Contains(tout, "report in "+filepath.Join(b, "here", "reports")) {
		t.Errorf("triage: exit %d, %q %q: want the absolute reports path", code, tout, terr)
	}
	_, terr, code = run(t, "", "probe", "smoke", "--config", "nope.yaml")
	if code == 0 || !strings.Contains(terr, filepath.Join(b, "nope.yaml")) {
		t.Errorf("a missing config's error should name its absolute path: exit %d, %q", code, terr)
	}
}

// TestDoctorPrintsWarnings: a warning ("!", package doctor's fallbacks
// such as libFuzzer's) prints and does not count as a failure.
func TestDoctorPrintsWarnings(t *testing.T) {
	var b strings.Builder
	cs := []doctor.Check{doctor.LibFuzzer(context.Background(), nil, t.TempDir())}
	failed := doctor.Print(&b, sanitize, append(cs, doctor.Check{Name: "fallback", Warn: true, Detail: "clang is not on PATH", Fix: "apt-get install clang"}))
	if failed != 0 || !strings.HasPrefix(b.String(), map[bool]string{true: "✓", false: "!"}[cs[0].OK]+" libfuzzer") || !strings.Contains(b.String(), "! fallback  ") {
		t.Errorf("warnings count as failures or print wrong (%d):\n%s", failed, b.String())
	}
}

// TestDoctorListsEveryConfigError: a config with four mistakes in it (two
// unknown keys, an address that is none, an environment variable that is
// not set) and everything else in place. Doctor lists all four (issue 34:
// it named the first, then said chain.rpc was not set, that there was no
// target: section and that every key was "not set", though all were in the
// file), and says "not checked" for what reads the config; the checks that
// do not read it still run, and the data dir is checked when --data-dir
// names it. `fleetd config validate` lists the same four.
func TestDoctorListsEveryConfigError(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "fleetd.yaml")
	os.WriteFile(cfg, []byte(`chain:
  rpc: http://127.0.0.1:8545
  rpcc: http://127.0.0.1:8546
  feedback_log: not-an-address
  fleet_key_file: keys/fleet.key
  sponsor_key_file: ${FLEETD_TEST_UNSET_SPONSOR}
target:
  registry: "0x5FbDB2315678afecb367f032d93F642f64180aa3"
  faces: http://127.0.0.1:8080/{name}/
  facez: http://127.0.0.1:8080/
  call: http://127.0.0.1:8080/call
  fetch_allow: ["127.0.0.1:8080"]
`), 0o600)
	os.Unsetenv("FLEETD_TEST_UNSET_SPONSOR")
	errs := []string{`line 3: unknown key "rpcc" in chain`, `line 10: unknown key "facez" in target`, "chain.feedback_log", "line 6: environment variable FLEETD_TEST_UNSET_SPONSOR is not set"}
	for _, withDataDir := range []bool{false, true} {
		args := []string{"doctor", "--config", cfg}
		if withDataDir {
			args = append(args, "--data-dir", filepath.Join(dir, "data"))
		}
		out, _, code := run(t, "", args...)
		if code != 1 {
			t.Errorf("doctor %v: exit %d, want 1\n%s", args[1:], code, out)
		}
		var configLines []string
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "✗ config ") {
				configLines = append(configLines, l)
			}
		}
		for _, e := range errs {
			if n := strings.Count(out, e); n != 1 {
				t.Errorf("doctor names %q %d times, want once:\n%s", e, n, out)
			}
		}
		if len(configLines) != len(errs) {
			t.Errorf("%d config lines, want one per error (%d):\n%s", len(configLines), len(errs), out)
		}
		for _, wrong := range []string{"chain.rpc is not set", "no target: section", "chain.feedback_log is not set", "chain.fleet_key_file is not set", "chain.sponsor_key_file is not set"} {
			if strings.Contains(out, wrong) {
				t.Errorf("doctor says %q of a config whose values it never read:\n%s", wrong, out)
			}
		}
		for _, name := range []string{"rpc", "feedback log", "fleet key", "sponsor key", "sponsor funds", "target", "crawl engine"} {
			if l := doctorLine(out, name); !strings.HasPrefix(l, "–") || !strings.Contains(l, "not checked: the config did not load") {
				t.Errorf("the %s line is %q, want it not checked", name, l)
			}
		}
		for _, name := range []string{"libfuzzer", "afl++"} {
			if l := doctorLine(out, name); l == "" || strings.Contains(l, "not checked") {
				t.Errorf("the %s check, which reads no config, did not run: %q", name, l)
			}
		}
		l := doctorLine(out, "data dir")
		if withDataDir != strings.HasPrefix(l, "✓") || withDataDir == strings.Contains(l, "not checked") {
			t.Errorf("with --data-dir %v the data dir line is %q", withDataDir, l)
		}
	}
	out, stderr, code := run(t, "", "config", "validate", "--config", cfg)
	for _, e := range errs {
		if !strings.Contains(out+stderr, e) {
			t.Errorf("config validate (exit %d) does not name %q:\n%s%s", code, e, out, stderr)
		}
	}
}
