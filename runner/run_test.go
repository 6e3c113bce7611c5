package runner

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/fleet/fleettest"
	"github.com/qafleet/fleetd/qatools"
	"github.com/qafleet/fleetd/specialists/replay"
	"github.com/qafleet/fleetd/trajectory"
)

// runFixture is one run's configuration over a fresh data dir, with a
// scripted planner and a renderer that count their calls.
type runFixture struct {
	dir                        string
	env                        *Env
	key                        *chain.Key
	cfg                        Config
	planned, rendered, stopped int
	ended                      int
	override                   string // the planner override the planner saw
	renderErr                  error
	script                     *fleettest.Script
}

func newRunFixture(t *testing.T) *runFixture {
	t.Helper()
	key, err := chain.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	f := &runFixture{dir: t.TempDir(), key: key}
	f.env = &Env{
		Env:     &qatools.Env{Target: fleet.Target{Faces: "http://127.0.0.1:1/{name}", FetchAllow: []string{"127.0.0.1:1"}}, FleetKey: key, Logger: slog.New(slog.DiscardHandler)},
		Control: fleet.NewControl(f.dir),
	}
	f.cfg = Config{
		DataDir: f.dir, Budget: fleet.Budget{MaxWrites: 5, MaxTurns: 20}, Build: "test-build",
		Planner: func(_ context.Context, p fleet.Persona, override string, _ fleet.Target, _ replay.Renderer, _ *slog.Logger) (fleet.Model, string, error) {
			f.planned++
			f.override = override
			return f.script, "script/" + p.Name, nil
		},
		Renderer: func(*Env, *qatools.PageWrites, string, *qatools.Sessions) (replay.Renderer, func(), string, error) {
			f.rendered++
			if f.renderErr != nil {
				return nil, nil, "", f.renderErr
			}
			return nil, func() { f.stopped++ }, "jailed: test", nil
		},
		RunEnded: func() { f.ended++ },
	}
	return f
}

// sandboxes lists the run sandboxes left in the data dir.
func (f *runFixture) sandboxes(t *testing.T) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(f.dir, "qa-sandbox"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "r-") {
			out = append(out, e.Name())
		}
	}
	return out
}

var smoke = fleet.Persona{Name: "smoke", Goal: "see that it answers", Tools: []string{"qa_fetch"}, Budget: fleet.Budget{MaxWrites: 3}}

// TestRunWritesOneRecord: one run through the run core is a record whose
// header carries the build, the planner's name, the harness version, the
// run's dial, its budget (the config's, the persona's over it, then capped
// by the caller) and the renderer's confinement; the fleet key never
// appears in it; the renderer is stopped and the caller's hook told.
func TestRunWritesOneRecord(t *testing.T) {
	f := newRunFixture(t)
	secret := hex.EncodeToString(f.key.PrivateKey().D.FillBytes(make([]byte, 32)))
	f.script = &fleettest.Script{Steps: []any{fleet.Step{Done: true, Summary: "the key is " + secret}}}
	res, err := Run(t.Context(), f.cfg, f.env, smoke, Options{
		Planner: "playbook", Dial: fleettest.Dial(fleet.Exercise),
		Budget: func(b fleet.Budget) fleet.Budget { b.MaxWrites = min(b.MaxWrites, 1); return b },
		Config: map[string]any{"caller": "test"},
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.RunID == "" || res.Outcome != trajectory.OutcomeDone {
		t.Fatalf("result %+v, want a finished run", res)
	}
	if f.planned != 1 || f.override != "playbook" || f.rendered != 1 || f.stopped != 1 || f.ended != 1 {
		t.Errorf("planner %d (override %q), renderer %d, stopped %d, ended %d; want each once", f.planned, f.override, f.rendered, f.stopped, f.ended)
	}
	path := trajectory.Path(f.dir, res.RunID)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), secret) || !strings.Contains(string(b), "the key is ") {
		t.Errorf("the run record holds the fleet key, or not the summary that named it: %s", b)
	}
	run, err := trajectory.ReadAll(path)
	if err != nil {
		t.Fatal(err)
	}
	h := run.Header
	if h.Build != "test-build" || h.Model != "script/smoke" || h.HarnessVersion != HarnessVersion || h.Dial != "exercise" || h.Specialist != "smoke" {
		t.Errorf("header %+v", h)
	}
	if h.Budget.MaxWrites != 1 || h.Budget.MaxTurns != 20 {
		t.Errorf("budget %+v, want max_writes 1 (capped by the caller) and max_turns 20 (the config's)", h.Budget)
	}
	var cfg map[string]any
	raw, _ := h.Config.(json.RawMessage)
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatalf("header config %T: %v", h.Config, err)
	}
	if cfg["renderer"] != "jailed: test" || cfg["caller"] != "test" || cfg["planner"] != "script/smoke" {
		t.Errorf("header config %v", h.Config)
	}
}

// TestRunRefusesBeforeASandbox: paused, a run starts nothing (ErrPaused, no
// sandbox, no planner); a renderer that cannot start leaves no sandbox
// behind and builds no planner.
func TestRunRefusesBeforeASandbox(t *testing.T) {
	f := newRunFixture(t)
	f.script = &fleettest.Script{}
	if err := f.env.Control.Pause("test", "tester"); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(t.Context(), f.cfg, f.env, smoke, Options{}); !errors.Is(err, ErrPaused) {
		t.Errorf("paused: %v, want ErrPaused", err)
	}
	if got := f.sandboxes(t); len(got) != 0 || f.rendered != 0 || f.planned != 0 {
		t.Errorf("paused: sandboxes %v, renderer %d, planner %d; want none", got, f.rendered, f.planned)
	}
	if err := f.env.Control.Resume("test", "tester"); err != nil {
		t.Fatal(err)
	}
	f.renderErr = errors.New("no chromium")
	if _, err := Run(t.Context(), f.cfg, f.env, smoke, Options{}); err == nil || !strings.Contains(err.Error(), "no chromium") {
		t.Errorf("renderer failing: %v, want its error", err)
	}
	if got := f.sandboxes(t); len(got) != 0 || f.planned != 0 {
		t.Errorf("renderer failing: sandboxes %v, planner %d; want none", got, f.planned)
	}
}

// TestRunThatCannotStartLeavesNoSandbox: a run whose tools cannot be built
// (a persona naming a tool that does not exist) or whose record cannot be
// created (the runs dir is a file) fails before any tool runs, and leaves
// no sandbox: before, it was abandoned, without its closed marker, a run
// id in its result or a record, so nothing but the next start closed it.
func TestRunThatCannotStartLeavesNoSandbox(t *testing.T) {
	f := newRunFixture(t)
	f.script = &fleettest.Script{}
	bad := smoke
	bad.Tools = []string{"qa_no_such_tool"}
	if _, err := Run(t.Context(), f.cfg, f.env, bad, Options{}); err == nil || !strings.Contains(err.Error(), "qa_no_such_tool") {
		t.Errorf("unknown tool: %v, want an error naming it", err)
	}
	if got := f.sandboxes(t); len(got) != 0 {
		t.Errorf("unknown tool: sandboxes %v left; want none", got)
	}
	if err := os.WriteFile(filepath.Join(f.dir, trajectory.RunsDir), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(t.Context(), f.cfg, f.env, smoke, Options{}); err == nil || !strings.Contains(err.Error(), "create run") {
		t.Errorf("runs dir a file: %v, want the record's error", err)
	}
	if got := f.sandboxes(t); len(got) != 0 {
		t.Errorf("runs dir a file: sandboxes %v left; want none", got)
	}
}

// TestRunWithTheCallersModel: an MCP session's or a replay's model drives
// the run: no planner, no renderer, and the record names the caller's model.
func TestRunWithTheCallersModel(t *testing.T) {
	f := newRunFixture(t)
	res, err := Run(t.Context(), f.cfg, f.env, smoke, Options{Model: &fleettest.Script{}, ModelName: "mcp/client/1"})
	if err != nil {
		t.Fatal(err)
	}
	if f.planned != 0 || f.rendered != 0 {
		t.Errorf("planner %d, renderer %d: want neither with the caller's model", f.planned, f.rendered)
	}
	run, err := trajectory.ReadAll(trajectory.Path(f.dir, res.RunID))
	if err != nil {
		t.Fatal(err)
	}
	if run.Header.Model != "mcp/client/1" {
		t.Errorf("model %q", run.Header.Model)
	}
}
