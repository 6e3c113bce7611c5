package fixer

import (
	"strings"
	"testing"

	"github.com/qafleet/fleetd/fleet"
)

// TestBodySaysWhatTheReplayLeft: the PR body's Reproduction section lists
// what the replay left on the platform, each inert; a replay that left
// nothing adds no such paragraph.
func TestBodySaysWhatTheReplayLeft(t *testing.T) {
	j := &Job{ID: "j1", Item: Item{ID: "0123456789abcdef", Title: "b reads a's settings", Repro: fleet.Repro{Tool: "qa_authz", Args: []byte(`{}`)}},
		Repro: &Reproduction{Reproduced: true, Outcome: "reproduced", RunID: "r-1", LeftOnPlatform: []string{"the accounts of fresh identities authz1a, authz1b", "x`<img src=x>"}}}
	body := prBody(j, "")
	_, repro, _ := strings.Cut(body, "## Reproduction")
	for _, want := range []string{"The replay left on the platform what it could not undo:", "- `the accounts of fresh identities authz1a, authz1b`", "- ``x`<img src=x>``"} {
		if !strings.Contains(repro, want) {
			t.Errorf("the body's reproduction section does not hold %q:\n%s", want, repro)
		}
	}
	j.Repro.LeftOnPlatform = nil
	if body := prBody(j, ""); strings.Contains(body, "left on the platform") {
		t.Errorf("a replay that left nothing: %s", body)
	}
}
