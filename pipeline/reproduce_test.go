package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/qafleet/fleetd/fixer"
	"github.com/qafleet/fleetd/fixtures/siwe"
	"github.com/qafleet/fleetd/fixtures/twin"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/fleet/fleettest"
	"github.com/qafleet/fleetd/qatools"
	"github.com/qafleet/fleetd/sandbox"
)

// fakeCompiler crashes like a Go program on a source holding "enum" (as
// the testbed compiler does on an enum without variants) and compiles
// anything else to itself.
const fakeCompiler = `#!/bin/sh
if grep -q enum "$1"; then printf 'panic: runtime error: index out of range [0] with length 0\n\ngoroutine 1 [running]:\nmain.parse()\n\t/src/parse.go:42\n' >&2; exit 2; fi
cat "$1"
`

// newTools is a tools environment with the fake compiler and no chain.
func newTools(t *testing.T) *qatools.Env {
	t.Helper()
	cc := filepath.Join(t.TempDir(), "cc.sh")
	if err := os.WriteFile(cc, []byte(fakeCompiler), 0o755); err != nil {
		t.Fatal(err)
	}
	return &qatools.Env{Target: fleet.Target{Compiler: []string{"/bin/sh", cc, "{src}"}}, Limits: qatools.Limits{CompileTimeout: 5 * time.Second}}
}

// TestToolReproducer replays qa_compile repros through the registry in a
// fresh sandbox run each: a crash reproduces with its input and output, a
// clean compile does not, and a tool the fix stage does not replay or
// arguments the tool refuses are errors. Every run is closed after.
func TestToolReproducer(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	r := &toolReproducer{tools: newTools(t), dial: fleettest.Dial(fleet.Observe), sandboxDir: dir, budget: fleet.Budget{MaxTokens: 100, Deadline: time.Minute}}
	repro := func(tool, args string) fleet.Repro { return fleet.Repro{Tool: tool, Args: json.RawMessage(args)} }

	got, err := r.Reproduce(ctx, repro("qa_compile", `{"source":"enum E {}"}`))
	if err != nil {
		t.Fatal(err)
	}
	if !got.Reproduced || got.Outcome != qatools.Crashed || !got.HasInput || string(got.Input) != "enum E {}" || !strings.Contains(got.Detail, "panic: runtime error") || got.RunID == "" {
		t.Errorf("a crash: %+v", got)
	}
	got, err = r.Reproduce(ctx, repro("qa_compile", `{"source":"let x = 1;"}`))
	if err != nil || got.Reproduced || got.Outcome != "compiled" || string(got.Input) != "let x = 1;" {
		t.Errorf("a clean compile: %+v, %v", got, err)
	}
	if _, err := r.Reproduce(ctx, repro("qa_call", `{}`)); err == nil || !strings.Contains(err.Error(), "replays qa_authz, qa_compile, qa_fuzz repros only, not qa_call") {
		t.Errorf("qa_call: %v", err)
	}
	if _, err := r.Reproduce(ctx, repro("qa_compile", `{"src":"enum E {}"}`)); err == nil || !strings.Contains(err.Error(), "replay qa_compile: invalid") {
		t.Errorf("arguments the tool refuses: %v", err)
	}
	if crashed, err := sandbox.FindCrashed(dir); err != nil || len(crashed) != 0 {
		t.Errorf("sandbox runs left open: %+v %v", crashed, err)
	}
}

// TestReproduction reads what a replay showed: the outcomes that mean
// "still broken", the output field, and the input a regression test
// holds, decoded from a corpus file for qa_fuzz.
func TestReproduction(t *testing.T) {
	corpus := "go test fuzz v1\nstring(\"enum E {}\")\n"
	args := func(m map[string]string) json.RawMessage { b, _ := json.Marshal(m); return b }
	tests := []struct {
		name   string
		tool   string
		result fleet.Result
		args   json.RawMessage
		want   fixer.Reproduction
	}{
		{"a compile timeout", "qa_compile", fleet.Result{"outcome": qatools.TimedOut, "stderr_tail": "killed"}, args(map[string]string{"source": "loop"}),
			fixer.Reproduction{Reproduced: true, Outcome: qatools.TimedOut, Detail: "killed", Input: []byte("loop"), HasInput: true}},
		{"a rejection", "qa_compile", fleet.Result{"outcome": "rejected"}, args(map[string]string{"source": "x"}),
			fixer.Reproduction{Outcome: "rejected", Input: []byte("x"), HasInput: true}},
		{"a fuzz replay holds the corpus value", "qa_fuzz", fleet.Result{"outcome": qatools.Crashed, "stderr_head": "panic"}, args(map[string]string{"replay": corpus}),
			fixer.Reproduction{Reproduced: true, Outcome: qatools.Crashed, Detail: "panic", Input: []byte("enum E {}"), HasInput: true}},
		{"a fuzz replay that is no corpus file", "qa_fuzz", fleet.Result{"outcome": qatools.Crashed}, args(map[string]string{"replay": "enum"}),
			fixer.Reproduction{Reproduced: true, Outcome: qatools.Crashed}},
		{"a generated harness's replay returns its reproducer test", "qa_fuzz",
			fleet.Result{"outcome": qatools.Crashed, "reproducer_path": "fleetd_repro_get_test.go", "reproducer": "package gjson_test\n"},
			args(map[string]string{"harness": "FuzzGet", "replay": "go test fuzz v1\nstring(\"{\")\nstring(\"a\")\n"}),
			fixer.Reproduction{Reproduced: true, Outcome: qatools.Crashed, Test: &fixer.ReproTest{Path: "fleetd_repro_get_test.go", Content: []byte("package gjson_test\n")}}},
		{"no input argument", "qa_compile", fleet.Result{"outcome": qatools.Crashed}, json.RawMessage(`{}`),
			fixer.Reproduction{Reproduced: true, Outcome: qatools.Crashed}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := reproTools[tc.tool].reproduction(tc.result, tc.args)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestAuthzReproducer: the fix stage replays a two-identity finding's
// repro (qa_authz) in a fresh sandbox run with fresh identities: on
// Keyring's flawed platform it reproduces (with no input a regression
// test could hold), on the correct twin it does not, and below exercise
// the dial refuses it before anything is sent.
func TestAuthzReproducer(t *testing.T) {
	ctx := context.Background()
	for _, mode := range []twin.Mode{twin.Flawed, twin.Correct} {
		app, env, repro := keyringRepro(t, mode)
		r := &toolReproducer{tools: env, dial: fleettest.Dial(fleet.Propose), sandboxDir: t.TempDir(), budget: fleet.Budget{MaxWrites: 4, Deadline: time.Minute}}
		got, err := r.Reproduce(ctx, repro)
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		want := mode == twin.Flawed
		if got.Reproduced != want || got.HasInput || got.RunID == "" || !strings.Contains(got.Detail, "/api/accounts/{address}/settings") {
			t.Errorf("%s: %+v, want reproduced %v", mode, got, want)
		}
		before := app.Seen().Requests
		r.dial = fleettest.Dial(fleet.Observe)
		if _, err := r.Reproduce(ctx, repro); err == nil || !strings.Contains(err.Error(), "refused") {
			t.Errorf("%s at observe: %v, want the dial's refusal", mode, err)
		}
		if app.Seen().Requests != before {
			t.Errorf("%s: a refused replay reached the platform", mode)
		}
	}
}

// keyringRepro is a qa_authz object repro against Keyring (mode), with
// the tools environment that reaches it.
func keyringRepro(t *testing.T, mode twin.Mode) (*siwe.App, *qatools.Env, fleet.Repro) {
	t.Helper()
	app := siwe.Serve(mode)
	t.Cleanup(app.Close)
	u, _ := url.Parse(app.URL())
	allow, err := qatools.NewAllowlist([]string{u.Host})
	if err != nil {
		t.Fatal(err)
	}
	env := &qatools.Env{Target: app.Target(), Fetcher: qatools.NewFetcher(allow, 5*time.Second, 64<<10), Limits: qatools.Limits{RequestRate: -1}}
	args, _ := json.Marshal(map[string]any{"check": "object", "url": app.URL() + "/api/accounts/{address}/settings",
		"nonce_url": app.URL() + "/api/auth/nonce", "verify_url": app.URL() + "/api/auth/verify", "chain_id": siwe.ChainID})
	return app, env, fleet.Repro{Tool: "qa_authz", Args: args}
}

// TestReproducerKeepsAnErroredCall: a replay whose call errs comes back
// with the error and with what the call returned, not empty-handed.
//   - qa_authz cut short (the replay's budget holds one write: a's
//     sign-in, then b's is refused) answers ok false with its account:
//     the Reproduction carries the error, the whole result (written) and
//     a's account as left on the platform;
//   - a tool's own error (qa_compile with no compiler to run) is an
//     error with the tool's words, never a replay that "did not
//     reproduce" (which would post needs-repro);
//   - a replay that ran to its end still says what it left (qa_authz's
//     fresh accounts).
//
// Before, the first returned an empty Reproduction, the second a
// not-reproduced one with no error, and none carried left_on_platform.
func TestReproducerKeepsAnErroredCall(t *testing.T) {
	ctx := context.Background()
	_, env, repro := keyringRepro(t, twin.Flawed)
	r := &toolReproducer{tools: env, dial: fleettest.Dial(fleet.Propose), sandboxDir: t.TempDir(), budget: fleet.Budget{MaxWrites: 1, Deadline: time.Minute}}
	got, err := r.Reproduce(ctx, repro)
	if err == nil || !strings.Contains(err.Error(), "budget") {
		t.Fatalf("a replay cut short by its budget: %+v, %v; want the budget's error", got, err)
	}
	written := got.Result["written"]
	if got.RunID == "" || got.Reproduced || !strings.Contains(got.Error, "budget") || got.Result.IsOK() || fmt.Sprint(written) == "[]" || !strings.Contains(fmt.Sprint(written), "sign-in of fresh identity authz1a") {
		t.Errorf("the errored replay's reproduction: run %q reproduced %v error %q result %v", got.RunID, got.Reproduced, got.Error, got.Result)
	}
	if len(got.LeftOnPlatform) != 1 || !strings.HasPrefix(got.LeftOnPlatform[0], "the accounts of fresh identities authz1a") {
		t.Errorf("left on the platform %q, want a's account", got.LeftOnPlatform)
	}

	tools := &qatools.Env{Target: fleet.Target{Compiler: []string{filepath.Join(t.TempDir(), "no-such-compiler"), "{src}"}}, Limits: qatools.Limits{CompileTimeout: 5 * time.Second}}
	r = &toolReproducer{tools: tools, dial: fleettest.Dial(fleet.Observe), sandboxDir: t.TempDir(), budget: fleet.Budget{Deadline: time.Minute}}
	got, err = r.Reproduce(ctx, fleet.Repro{Tool: "qa_compile", Args: json.RawMessage(`{"source":"enum E {}"}`)})
	if err == nil || !strings.Contains(err.Error(), "replay qa_compile: error: qa_compile: ") || got.RunID == "" || !strings.HasPrefix(got.Error, "qa_compile: ") || got.Result == nil || got.Reproduced {
		t.Errorf("a tool's own error: %+v, %v; want the error with the tool's words and its result", got, err)
	}

	r = &toolReproducer{tools: env, dial: fleettest.Dial(fleet.Propose), sandboxDir: t.TempDir(), budget: fleet.Budget{MaxWrites: 4, Deadline: time.Minute}}
	got, err = r.Reproduce(ctx, repro)
	if err != nil || !got.Reproduced || got.Error != "" || got.Result != nil || len(got.LeftOnPlatform) != 1 || !strings.HasPrefix(got.LeftOnPlatform[0], "the accounts of fresh identities authz1a, authz1b") {
		t.Errorf("a whole replay: %+v, %v; want reproduced, and the two accounts left", got, err)
	}
}
