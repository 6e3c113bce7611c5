package specialists

// The rendering crawl behind the login and stored XSS on the pages only a
// signed-in user sees (issue 33), on fixtures/siwe ("Keyring") with the
// real tools and a real, jailed Chromium that renders as the identities
// qa_login signed in:
//
//	go test -run 'TestEvalSignedInStoredXSS|TestSignedInRender' -v ./specialists

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/qafleet/fleetd/fixtures/siwe"
	"github.com/qafleet/fleetd/fixtures/twin"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/fleet/fleettest"
	"github.com/qafleet/fleetd/qatools"
)

// signedInRun runs security at dial on app with a browser that renders as
// the run's signed-in identities.
func signedInRun(t *testing.T, app *siwe.App, dial fleet.Dial) (fleet.RunResult, []map[string]any) {
	t.Helper()
	tg := app.Target()
	sessions := qatools.NewSessions(fleettest.Dial(dial))
	b, err := evalBrowser(mustChromium(t), tg, dial, nil, sessions)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	return runLoop(t, "security", dial, tg, realTools(t, tg, 48, sessions), Options{Renderer: b})
}

// TestEvalSignedInStoredXSS: at exercise the flawed Keyring's stored XSS
// behind the login is found (identity a stores it, identity b's browser
// runs it on /people), the correct twin, which escapes it, gets nothing at
// high or above; both are crawled in the browser behind the login, the
// sign-out link is never fetched, and no canary stays on the platform.
func TestEvalSignedInStoredXSS(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the security playbook with a browser against two platforms")
	}
	for _, mode := range []twin.Mode{twin.Flawed, twin.Correct} {
		t.Run(mode.String(), func(t *testing.T) {
			app := siwe.Serve(mode)
			defer app.Close()
			res, got := signedInRun(t, app, fleet.Exercise)
			seen := app.Seen()
			if seen.SignOutLinks != 0 {
				t.Errorf("the sign-out link was followed %d times", seen.SignOutLinks)
			}
			if !strings.Contains(res.Summary, "rendering crawl behind the login (identity a, a fresh account): ") ||
				!strings.Contains(res.Summary, "/account") || !strings.Contains(res.Summary, "/people") {
				t.Errorf("the summary does not list the pages rendered behind the login:\n%s", res.Summary)
			}
			for _, n := range app.DisplayNames() {
				if strings.Contains(n, "fleetdCanary") {
					t.Errorf("a canary stayed on the platform: %q", n)
				}
			}
			xss := findReport(got, "Stored XSS behind the login")
			if mode == twin.Correct {
				if xss != nil {
					t.Errorf("the correct twin (it escapes) got: %v", xss["summary"])
				}
				for _, f := range got {
					if sev, _ := fleet.ParseSeverity(f["severity"].(string)); sev.Rank() >= fleet.SeverityHigh.Rank() {
						t.Errorf("the correct twin got a finding at %s: %v", sev, f["summary"])
					}
				}
				return
			}
			r := findReport(got, "Stored XSS behind the login", `field "display_name"`, "identity a (a fresh account) stored markup",
				"PATCH /api/accounts/{address}/settings", "identity b (another fresh account) opened /people", "a page only a signed-in user sees", "second write")
			if r == nil {
				t.Fatalf("no stored XSS behind the login:%s", summaries(got))
			}
			if r["severity"] != string(fleet.SeverityHigh) || r["surface"] != string(surfaceDOM) {
				t.Errorf("severity %v surface %v, want high %s", r["severity"], r["surface"], surfaceDOM)
			}
			s := r["summary"].(string)
			if strings.Contains(s, "0x") || strings.Contains(s, siwe.SessionCookie+"=") || strings.Contains(s, "Bearer") {
				t.Errorf("the finding carries an address or a session value: %s", s)
			}
		})
	}
}

// TestSignedInRenderNothingAtObserve: with a browser that could render as
// a signed-in identity, the security playbook at observe signs nobody in,
// sends no request with a session (the browser's included), follows no
// sign-out link and writes nothing.
func TestSignedInRenderNothingAtObserve(t *testing.T) {
	app := siwe.Serve(twin.Flawed)
	defer app.Close()
	res, _ := signedInRun(t, app, fleet.Observe)
	seen := app.Seen()
	if seen.SignIns != 0 || seen.WithSession != 0 || seen.Writes != 0 || seen.SignOutLinks != 0 {
		t.Errorf("at observe: %d sign-ins, %d requests with a session, %d writes, %d sign-out links; want none", seen.SignIns, seen.WithSession, seen.Writes, seen.SignOutLinks)
	}
	if seen.Requests == 0 {
		t.Error("at observe the public pages were not read")
	}
	if strings.Contains(res.Summary, "behind the login (identity a") {
		t.Errorf("at observe the summary says pages behind the login were read:\n%s", res.Summary)
	}
}

// TestSignedInRenderRefusedWhenTheDialDrops: an identity signed in at
// exercise is not rendered as once the dial is back at observe: the
// browser opens nothing, and no request with its session reaches the
// platform.
func TestSignedInRenderRefusedWhenTheDialDrops(t *testing.T) {
	app := siwe.Serve(twin.Correct)
	defer app.Close()
	ctl := fleet.NewControl(t.TempDir())
	if _, err := ctl.SetDial(fleet.Exercise, "test", "test"); err != nil {
		t.Fatal(err)
	}
	tg := app.Target()
	sessions := qatools.NewSessions(ctl)
	var findings []map[string]any
	reg := realTools(t, tg, 8, sessions)("r-drop", &findings)
	out, err := reg.Dispatch(context.Background(), ctl, "qa_login", []byte(`{"identity":"a","nonce_url":"`+app.URL()+`/api/auth/nonce","verify_url":"`+app.URL()+`/api/auth/verify","chain_id":1337}`))
	if err != nil || out.Verdict != fleet.VerdictOK {
		t.Fatalf("qa_login: %v %v", err, out.Result)
	}
	b, err := evalBrowser(mustChromium(t), tg, fleet.Exercise, nil, sessions)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	r, err := b.RenderAs(context.Background(), app.URL()+"/account", "a")
	if err != nil || r.Status != http.StatusOK || !strings.Contains(r.HTML, "Signed in as") {
		t.Fatalf("at exercise, rendering /account as a: %v, status %d", err, r.Status)
	}
	before := app.Seen()
	if _, err := ctl.SetDial(fleet.Observe, "test", "test"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.RenderAs(context.Background(), app.URL()+"/account", "a"); err == nil || !strings.Contains(err.Error(), "dial is observe") {
		t.Errorf("at observe, rendering as a: %v, want refused", err)
	}
	// A public page rendered afterwards carries nothing of the session.
	if _, err := b.Render(context.Background(), app.URL()+"/"); err != nil {
		t.Fatal(err)
	}
	after := app.Seen()
	if after.WithSession != before.WithSession || after.SignOutLinks != 0 {
		t.Errorf("after the dial dropped: %d more requests with a session, %d sign-out links", after.WithSession-before.WithSession, after.SignOutLinks)
	}
	if after.Requests == before.Requests {
		t.Error("the public page was not rendered")
	}
}
