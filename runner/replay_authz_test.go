package runner

import (
	"encoding/json"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/qafleet/fleetd/fixtures/siwe"
	"github.com/qafleet/fleetd/fixtures/twin"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/fleet/fleettest"
	"github.com/qafleet/fleetd/qatools"
	"github.com/qafleet/fleetd/trajectory"
)

// TestReplayOfAuthzLeavesThePlatformAsFound: a run of qa_authz repros on
// Keyring's flawed twin (a's write of its display name, a granted role, a
// verified flag) and its replay (fleetd runs replay) each leave every
// account as a sign-up leaves it: no mark, no role, no flag; what they add
// (one account per fresh sign-in) is exactly what the records' results
// list as left on the platform.
func TestReplayOfAuthzLeavesThePlatformAsFound(t *testing.T) {
	app := siwe.Serve(twin.Flawed)
	t.Cleanup(app.Close)
	f := newRunFixture(t)
	u, _ := url.Parse(app.URL())
	allow, err := qatools.NewAllowlist([]string{u.Host})
	if err != nil {
		t.Fatal(err)
	}
	f.env.Env.Target = app.Target()
	f.env.Env.Fetcher = qatools.NewFetcher(allow, 5*time.Second, 64<<10)
	f.env.Env.Limits = qatools.Limits{RequestRate: -1}
	f.cfg.Budget.MaxWrites = 40
	base := app.URL()
	signIn := `"nonce_url":"` + base + `/api/auth/nonce","verify_url":"` + base + `/api/auth/verify","chain_id":1337`
	settings := base + "/api/accounts/{address}/settings"
	var steps []any
	for _, args := range []string{
		`{"check":"object","url":"` + settings + `","write_method":"PATCH","write_json":"{\"display_name\":\"qa-authz-mark\"}",` + signIn + `}`,
		`{"check":"property","url":"` + settings + `","field":"role","value":"\"admin\"",` + signIn + `}`,
		`{"check":"property","url":"` + settings + `","field":"verified","value":"true",` + signIn + `}`,
	} {
		steps = append(steps, fleet.Step{Call: &fleet.Call{Tool: "qa_authz", Args: json.RawMessage(args)}})
	}
	f.script = &fleettest.Script{Steps: append(steps, fleet.Step{Done: true, Summary: "done"})}
	persona := fleet.Persona{Name: "security", Goal: "authz repros", Tools: []string{"qa_authz"}, Budget: fleet.Budget{MaxWrites: 40}}
	res, err := Run(t.Context(), f.cfg, f.env, persona, Options{Dial: fleettest.Dial(fleet.Exercise)})
	if err != nil || res.Outcome != trajectory.OutcomeDone {
		t.Fatalf("run: %v %+v", err, res)
	}
	check := func(what, runID string, signInsBefore int) {
		t.Helper()
		rec, err := trajectory.ReadAll(trajectory.Path(f.dir, runID))
		if err != nil {
			t.Fatal(err)
		}
		listed, outcomes := 0, 0
		for _, turn := range rec.Turns() {
			var r struct {
				Outcome string   `json:"outcome"`
				Undone  []string `json:"undone"`
				Left    []string `json:"left_on_platform"`
			}
			raw, _ := turn.Result.(json.RawMessage)
			json.Unmarshal(raw, &r)
			if r.Outcome == qatools.AuthzReproduced && len(r.Undone) == 1 {
				outcomes++
			}
			for _, l := range r.Left {
				listed += len(regexp.MustCompile(`\bauthz\d+[a-z]\b`).FindAllString(l, -1))
			}
		}
		seen := app.Seen()
		if outcomes != 3 || listed != seen.SignIns-signInsBefore {
			t.Errorf("%s: %d repros reproduced and undone (want 3); %d fresh identities listed as left, %d signed in", what, outcomes, listed, seen.SignIns-signInsBefore)
		}
		names := app.DisplayNames()
		if len(names) != seen.SignIns {
			t.Errorf("%s: %d accounts after %d sign-ins", what, len(names), seen.SignIns)
		}
		for _, n := range names {
			if n != "new user" {
				t.Errorf("%s: an account is left with display name %q", what, n)
			}
		}
		for _, body := range seen.Bodies {
			i := strings.Index(body, `{"message"`)
			if i < 0 {
				continue
			}
			var m struct{ Message string }
			json.Unmarshal([]byte(body[i:]), &m)
			lines := strings.Split(m.Message, "\n")
			if len(lines) < 2 {
				continue
			}
			addr, err := fleet.ParseAddress(strings.TrimSpace(lines[1]))
			if err != nil {
				continue
			}
			if role, verified, ok := app.Account(addr); ok && (role != "user" || verified) {
				t.Errorf("%s: an account is left as %s, verified %v", what, role, verified)
			}
		}
	}
	check("the run", res.RunID, 0)
	orig, err := trajectory.ReadAll(trajectory.Path(f.dir, res.RunID))
	if err != nil {
		t.Fatal(err)
	}
	before := app.Seen().SignIns
	if _, err := f.env.Control.SetDial(fleet.Exercise, "test", "test"); err != nil { // a replay runs at the stored dial
		t.Fatal(err)
	}
	rep, err := Replay(t.Context(), f.cfg, f.env, orig, ReplayOptions{Persona: &persona})
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	check("the replay", rep.RunID, before)
}
