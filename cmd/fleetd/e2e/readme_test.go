package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/qafleet/fleetd/cmd/fleetd/e2e/e2etest"
)

// readmeBlock returns the command lines of the first sh block under the
// README heading, without comments.
func readmeBlock(t *testing.T, heading string) []string {
	t.Helper()
	b, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("README.md has no %q section", heading)
	}
	s = s[i:]
	start := strings.Index(s, "```sh\n")
	if start < 0 {
		t.Fatalf("README.md %q has no sh block", heading)
	}
	s = s[start+len("```sh\n"):]
	s = s[:strings.Index(s, "```")]
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if j := strings.Index(l, "  #"); j >= 0 {
			l = l[:j]
		}
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// TestReadmeWalkthrough runs README.md's "Running it for real" lines with a
// freshly built binary in a fresh directory, as a newcomer would: the dev
// chain and the testbed in the background, then each command in turn,
// checking each one's exit status and a line it must print. A line the test
// does not know fails it, so the README cannot drift from what works.
func TestReadmeWalkthrough(t *testing.T) {
	if testing.Short() {
		t.Skip("builds fleetd and runs every specialist (~2 min)")
	}
	lines := readmeBlock(t, "## Running it for real")
	bin := t.TempDir()
	work := t.TempDir()
	path := os.Getenv("PATH")
	var bg []*exec.Cmd
	t.Cleanup(func() {
		for i := len(bg) - 1; i >= 0; i-- {
			bg[i].Process.Signal(syscall.SIGINT)
			done := make(chan error, 1)
			go func() { done <- bg[i].Wait() }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				bg[i].Process.Kill()
			}
		}
	})
	absPaths := func(what string, v map[string]any, keys ...string) {
		t.Helper()
		for _, k := range keys {
			p, _ := v[k].(string)
			if !filepath.IsAbs(p) {
				t.Errorf("%s prints %s = %q: not an absolute path", what, k, p)
			}
		}
	}
	probes := 0
	for _, line := range lines {
		switch {
		case line == "go install ./cmd/fleetd":
			// Into the test's own bin, not the machine's GOPATH.
			if err := os.Symlink(e2etest.Fleetd(t), filepath.Join(bin, "fleetd")); err != nil {
				t.Fatal(err)
			}
			continue
		case line == `export PATH="$(go env GOPATH)/bin:$PATH"`:
			path = bin + string(os.PathListSeparator) + path
			continue
		case regexp.MustCompile(`^mkdir -p (\S+) && cd (\S+)$`).MatchString(line):
			continue // work is a fresh directory
		case !strings.HasPrefix(line, "fleetd "):
			t.Fatalf("README line %q: the walkthrough test does not know how to run it", line)
		}
		background := strings.HasSuffix(line, " &")
		args := strings.Fields(strings.TrimSuffix(line, " &"))[1:]
		cmd := exec.Command(filepath.Join(bin, "fleetd"), args...)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "PATH="+path)
		if background {
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			bg = append(bg, cmd)
			first := make(chan string, 1)
			go func() {
				sc := bufio.NewScanner(stdout)
				sc.Buffer(nil, 1<<20)
				if sc.Scan() {
					first <- sc.Text()
				}
				close(first)
				for sc.Scan() {
				}
			}()
			var out string
			select {
			case out = <-first:
			case <-time.After(90 * time.Second):
				t.Fatalf("%s printed nothing in 90 s", line)
			}
			var v map[string]any
			if err := json.Unmarshal([]byte(out), &v); err != nil {
				t.Fatalf("%s printed %q, not one JSON line: %v", line, out, err)
			}
			switch strings.Join(args[:2], " ") {
			case "chain devnet":
				absPaths(line, v, "sponsor_key_file", "fleet_key_file", "config")
			case "testbed serve":
				target, _ := v["target"].(map[string]any)
				absPaths(line, target, "corpus")
				if c, _ := target["compiler"].([]any); len(c) == 0 || !filepath.IsAbs(c[0].(string)) {
					t.Errorf("%s prints compiler %v: not an absolute program path", line, target["compiler"])
				}
			default:
				t.Fatalf("README line %q: the walkthrough test does not know what it prints", line)
			}
			continue
		}
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		start := time.Now()
		err := cmd.Run()
		t.Logf("%s: %v in %s", line, err, time.Since(start).Round(time.Millisecond))
		if err != nil {
			t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", line, err, stdout.String(), stderr.String())
		}
		out := stdout.String()
		var want string
		switch args[0] {
		case "doctor":
			if strings.Contains(out, "✗") {
				t.Errorf("%s shows a failed check:\n%s", line, out)
			}
			want = "✓ compiler"
		case "probe":
			probes++
			want = "run r-"
		case "findings":
			if rows := strings.Count(strings.TrimSpace(out), "\n"); rows < 1 {
				t.Errorf("%s lists no entry after %d probes:\n%s", line, probes, out)
			}
			want = "INDEX"
		case "report":
			want = "RANK"
		case "runs":
			if rows := strings.Count(strings.TrimSpace(out), "\n"); rows != probes {
				t.Errorf("%s lists %d runs, want %d:\n%s", line, rows, probes, out)
			}
			want = "SPECIALIST"
		default:
			t.Fatalf("README line %q: the walkthrough test does not know what it prints", line)
		}
		if !strings.Contains(out, want) {
			t.Errorf("%s: stdout does not show %q:\n%s\nstderr:\n%s", line, want, out, stderr.String())
		}
	}
	if probes != 5 {
		t.Errorf("the walkthrough ran %d probes, want one per specialist (5)", probes)
	}
}

// TestDemoResultsOutliveIt runs `fleetd demo --for 1m --dial exercise`, then
// the commands the demo prints at the end, after its chain is gone: each must
// work on what it left in the data dir, and findings must list what it found.
func TestDemoResultsOutliveIt(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo for a minute")
	}
	bin := e2etest.Fleetd(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	cmd := exec.Command(bin, "demo", "--for", "1m", "--dial", "exercise", "--data-dir", data)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("demo: %v\n%s\n%s", err, out, stderr.String())
	}
	var later [][]string
	for _, l := range strings.Split(string(out), "\n") {
		// "  BIN findings --config F     what it shows"
		if f := strings.Fields(l); len(f) > 3 && f[0] == bin && f[2] == "--config" {
			later = append(later, f[1:4])
		}
	}
	if len(later) < 3 {
		t.Fatalf("the demo printed %d commands to look further, want 3:\n%s", len(later), out)
	}
	found := 0
	for _, args := range later {
		c := exec.Command(bin, args...)
		c.Dir = t.TempDir() // anywhere
		var so, se bytes.Buffer
		c.Stdout, c.Stderr = &so, &se
		if err := c.Run(); err != nil {
			t.Errorf("fleetd %s after the demo: %v\n%s%s", strings.Join(args, " "), err, so.String(), se.String())
			continue
		}
		if args[0] == "findings" {
			found = strings.Count(strings.TrimSpace(so.String()), "\n")
			if !strings.Contains(se.String(), "unreachable: showing the") {
				t.Errorf("findings after the demo does not say it reads the stored log: %q", se.String())
			}
		}
	}
	if found == 0 {
		t.Errorf("findings after a one-minute demo at exercise lists nothing; demo output:\n%s", out)
	}
	t.Logf("after the demo: findings lists %d entries", found)
}
