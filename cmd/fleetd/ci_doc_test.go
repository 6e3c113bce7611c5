package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// ciDocBlock returns the first ```yaml block under heading in docs/ci.md.
func ciDocBlock(t testing.TB, heading string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "ci.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("docs/ci.md has no %q section", heading)
	}
	s = s[i:]
	start := strings.Index(s, "```yaml\n")
	if start < 0 {
		t.Fatalf("docs/ci.md %q has no yaml block", heading)
	}
	s = s[start+len("```yaml\n"):]
	return s[:strings.Index(s, "```")]
}

// ciStep is a GitHub Actions step, the keys the recipe uses.
type ciStep struct {
	Name string            `yaml:"name"`
	Uses string            `yaml:"uses"`
	Run  string            `yaml:"run"`
	If   string            `yaml:"if"`
	With map[string]string `yaml:"with"`
	Env  map[string]string `yaml:"env"`
}

type ciWorkflow struct {
	Name        string            `yaml:"name"`
	On          map[string]any    `yaml:"on"`
	Permissions map[string]string `yaml:"permissions"`
	Jobs        map[string]struct {
		RunsOn string   `yaml:"runs-on"`
		Steps  []ciStep `yaml:"steps"`
	} `yaml:"jobs"`
}

// ciRecipe parses the workflow of docs/ci.md and returns its steps.
func ciRecipe(t testing.TB) []ciStep {
	t.Helper()
	var wf ciWorkflow
	dec := yaml.NewDecoder(strings.NewReader(ciDocBlock(t, "## The workflow")))
	dec.KnownFields(true)
	if err := dec.Decode(&wf); err != nil {
		t.Fatalf("docs/ci.md workflow: %v", err)
	}
	if _, ok := wf.On["pull_request"]; !ok {
		t.Errorf("the workflow does not run on pull_request: %v", wf.On)
	}
	if wf.Permissions["security-events"] != "write" || wf.Permissions["pull-requests"] != "write" {
		t.Errorf("permissions %v: upload-sarif needs security-events: write, the comment pull-requests: write", wf.Permissions)
	}
	if len(wf.Jobs) != 1 {
		t.Fatalf("%d jobs, want 1", len(wf.Jobs))
	}
	for _, j := range wf.Jobs {
		return j.Steps
	}
	return nil
}

// ciCheckArgs returns the arguments of the recipe's `fleetd check` line
// (without the program name), and its environment.
func ciCheckArgs(t testing.TB) ([]string, map[string]string) {
	t.Helper()
	for _, s := range ciRecipe(t) {
		if f := strings.Fields(s.Run); len(f) > 1 && f[0] == "fleetd" && f[1] == "check" {
			return f[1:], s.Env
		}
	}
	t.Fatal("docs/ci.md's workflow has no fleetd check step")
	return nil, nil
}

// flagValue returns the value of --name in args.
func flagValue(args []string, name string) string {
	for i, a := range args {
		if a == "--"+name && i+1 < len(args) {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v
		}
	}
	return ""
}

// TestCIRecipe keeps docs/ci.md true: the workflow parses, its fleetd
// lines parse with the real commands' flags, the SARIF the check writes is
// what the upload step reads, the summary is what the comment posts, both
// run even when the check fails, and the config loads.
func TestCIRecipe(t *testing.T) {
	steps := ciRecipe(t)
	var check, upload, comment *ciStep
	for i := range steps {
		s := &steps[i]
		for _, line := range strings.Split(s.Run, "\n") {
			f := strings.Fields(line)
			if len(f) == 0 || f[0] != "fleetd" {
				continue
			}
			a := &app{}
			root := a.rootCmd()
			cmd, rest, err := root.Find(f[1:])
			if err != nil || cmd == root {
				t.Errorf("docs/ci.md line %q: no such command: %v", line, err)
				continue
			}
			if err := cmd.ParseFlags(rest); err != nil {
				t.Errorf("docs/ci.md line %q: %v", line, err)
			}
			if cmd.Name() == "check" {
				check = s
				if err := cmd.ValidateArgs(cmd.Flags().Args()); err != nil {
					t.Errorf("docs/ci.md line %q: %v", line, err)
				}
				if _, _, err := (specialistCommands{&app{cfg: &Config{}}}).checkFlags(flagValue(f, "specialists"), flagValue(f, "fail-on")); err != nil {
					t.Errorf("docs/ci.md line %q: %v", line, err)
				}
			}
		}
		if strings.HasPrefix(s.Uses, "github/codeql-action/upload-sarif@") {
			upload = s
		}
		if strings.Contains(s.Run, "gh pr comment") {
			comment = s
		}
	}
	if check == nil || upload == nil || comment == nil {
		t.Fatalf("the workflow lacks a step: check %v, upload %v, comment %v", check != nil, upload != nil, comment != nil)
	}
	args := strings.Fields(check.Run)
	sarifFile, summaryFile := flagValue(args, "sarif"), flagValue(args, "summary")
	if sarifFile == "" || upload.With["sarif_file"] != sarifFile {
		t.Errorf("check writes --sarif %q, the upload reads %q", sarifFile, upload.With["sarif_file"])
	}
	if summaryFile == "" || !strings.Contains(comment.Run, "--body-file "+summaryFile) {
		t.Errorf("check writes --summary %q, the comment posts: %s", summaryFile, comment.Run)
	}
	for _, s := range []*ciStep{upload, comment} {
		if s.If != "always()" {
			t.Errorf("step %q runs if %q: it must run when the check fails (always())", s.Name, s.If)
		}
	}

	// The config loads, its ${VARS} set as the check step sets them.
	for k := range check.Env {
		t.Setenv(k, "placeholder")
	}
	t.Setenv("FLEETD_RPC", "http://127.0.0.1:8545")
	t.Setenv("FLEETD_FEEDBACK_LOG", "0x00000000000000000000000000000000000000aa")
	t.Setenv("FLEETD_IDENTITY", "0x00000000000000000000000000000000000000bb")
	t.Setenv("PREVIEW_REGISTRY", "0x00000000000000000000000000000000000000cc")
	t.Setenv("PREVIEW_URL", "http://127.0.0.1:8080")
	t.Setenv("PREVIEW_HOST", "127.0.0.1:8080")
	path := filepath.Join(t.TempDir(), flagValue(args, "config"))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(ciDocBlock(t, "## The config")), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig(path)
	if err != nil {
		t.Fatalf("docs/ci.md config: %v", err)
	}
	target, err := cfg.target()
	if err != nil {
		t.Fatal(err)
	}
	if err := target.Validate("target"); err != nil {
		t.Errorf("docs/ci.md config: %v", err)
	}
	if cfg.Chain.FeedbackLog == "" || !slices.Contains(cfg.Chain.TrustedSenders, "0x00000000000000000000000000000000000000bb") {
		t.Errorf("docs/ci.md config: chain %+v", cfg.Chain)
	}
	for _, v := range []string{"FLEETD_RPC", "FLEETD_FEEDBACK_LOG", "FLEETD_IDENTITY", "PREVIEW_REGISTRY", "PREVIEW_URL", "PREVIEW_HOST"} {
		if _, ok := check.Env[v]; !ok {
			t.Errorf("the check step does not set %s, which the config reads", v)
		}
	}
}
