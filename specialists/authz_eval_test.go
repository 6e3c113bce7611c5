package specialists

// The evaluation of the two-identity checks behind a Sign-In with Ethereum
// login (issue 33) on fixtures/siwe ("Keyring"): the security playbook runs
// through the real loop with the real qa_* tools (qa_login, qa_fetch,
// qa_submit, qa_call; qa_report captured), no chain. At exercise the
// flawed platform must yield every planted class; its correct twin
// nothing at high or above; at observe nothing behind the login is
// touched:
//
//	go test -run 'TestEvalSignIn' -v ./specialists

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fixtures/siwe"
	"github.com/qafleet/fleetd/fixtures/twin"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/fleet/fleettest"
	"github.com/qafleet/fleetd/qatools"
	"github.com/qafleet/fleetd/sandbox"
)

// signInFlaws are the classes fixtures/siwe/README.md lists, as findings.
var signInFlaws = []plantedFlaw{
	{"object-level authorization", []string{"authz"}, []string{"object-level", "identity b (a fresh account) read identity a's resource", "GET /api/accounts/{address}/settings", "Confirmed"}, fleet.SeverityHigh},
	{"function-level authorization", []string{"authz"}, []string{"function-level", "identity b", "GET /api/admin/accounts", "reserve for admin"}, fleet.SeverityHigh},
	{"property-level authorization: role", []string{"authz"}, []string{"mass assignment", `set "role"`, "display_name, email"}, fleet.SeverityHigh},
	{"property-level authorization: verified", []string{"authz"}, []string{"mass assignment", `set "verified"`}, fleet.SeverityHigh},
	{"session lifecycle", []string{"auth"}, []string{"not ended by logout", "POST /api/auth/logout", "GET /api/me"}, fleet.SeverityHigh},
	{"session not rotated at sign-in", []string{"auth"}, []string{"not rotated", "CWE-384", "identity a"}, fleet.SeverityMedium},
	{"SIWE: signature by another address", []string{"auth"}, []string{"signed by another key was accepted"}, fleet.SeverityCritical},
	{"SIWE: nonce reusable", []string{"auth"}, []string{"nonce already used"}, fleet.SeverityHigh},
	{"SIWE: domain", []string{"auth"}, []string{"another domain"}, fleet.SeverityHigh},
	{"SIWE: expiry", []string{"auth"}, []string{"Expiration Time passed"}, fleet.SeverityMedium},
	{"SIWE: uri", []string{"auth"}, []string{"foreign URI"}, fleet.SeverityMedium},
	{"SIWE: chain id", []string{"auth"}, []string{"another chain id"}, fleet.SeverityMedium},
	// Only the address of an account that exists makes the difference:
	// found by claiming the identities the run signed in.
	{"spoofed identity with a signed-in account's address", []string{"call"}, []string{"identity header", "X-Keyring-Account: {identity a's address}", "a fresh account fleetd signed in"}, fleet.SeverityHigh},
	// The same in a query parameter of a public JSON endpoint: the
	// generic claims (admin, 1) show nothing there.
	{"spoofed identity in a query parameter with a signed-in account's address", []string{"web"}, []string{"/api/notices takes the caller's identity from a query parameter (account={identity a's address}", "a fresh account fleetd signed in", "where generic claims (admin, 1) made none"}, fleet.SeverityHigh},
	// Found by the crawl behind the login: /account, linked only from
	// /api/me's answer, links the activity page.
	{"leaked internals on a page only a session reaches", []string{"web"}, []string{"Leaked internals behind the login", "GET /account/activity", "database error"}, fleet.SeverityMedium},
}

// twoIdentity are the classes only two identities (or a session's life)
// show: their repro is one qa_authz call.
var twoIdentity = map[string]bool{"object-level authorization": true, "function-level authorization": true,
	"property-level authorization: role": true, "property-level authorization: verified": true, "session lifecycle": true}

// replayAuthzRepro checks a two-identity finding's repro: one qa_authz
// call holding no address, session or value, which, run in a run of its
// own (another run id: other fresh identities), shows the flaw again.
func replayAuthzRepro(t *testing.T, app *siwe.App, class string, f map[string]any) {
	t.Helper()
	repro, _ := f["repro"].(map[string]any)
	raw, _ := json.Marshal(repro["args"])
	if repro["tool"] != "qa_authz" || strings.Contains(string(raw), "0x") || strings.Contains(string(raw), "kr_session") {
		t.Errorf("%s: repro %v, want one qa_authz call without an address or session", class, repro)
		return
	}
	if args, _ := repro["args"].(map[string]any); class == "object-level authorization" && (args["write_method"] != "PATCH" || !strings.Contains(fmt.Sprint(args["write_json"]), "display_name")) {
		t.Errorf("%s: repro %v, want a's documented update (PATCH display_name) before b's read", class, args)
	}
	var findings []map[string]any
	reg := realTools(t, app.Target(), 8)("r-replay-"+strings.NewReplacer(" ", "-", ":", "").Replace(class), &findings)
	ctl := fleet.NewControl(t.TempDir())
	ctl.SetDial(fleet.Exercise, "test", "test")
	out, err := reg.Dispatch(context.Background(), ctl, "qa_authz", raw)
	if err != nil || out.Result["outcome"] != qatools.AuthzReproduced {
		t.Errorf("%s: replaying its repro in another run: %v %v", class, err, out.Result)
	}
}

// realTools is the real qa_* registry over app (no chain: qa_create,
// qa_publish and qa_chain say so), qa_report captured. sessions, when
// given, keeps the identities qa_login signs in, shared with a browser
// (evalBrowser's) that renders as them.
func realTools(t *testing.T, target fleet.Target, maxWrites int, sessions ...*qatools.Sessions) func(string, *[]map[string]any) *fleet.Registry {
	return realToolsOn(t, target, maxWrites, nil, nil, sessions...)
}

// realToolsOn is realTools with a chain and the target's name registry
// on it (qa_chain reads them).
func realToolsOn(t *testing.T, target fleet.Target, maxWrites int, c *chain.Client, registry *chain.Registry, sessions ...*qatools.Sessions) func(string, *[]map[string]any) *fleet.Registry {
	return func(runID string, findings *[]map[string]any) *fleet.Registry {
		allow, err := qatools.NewAllowlist(target.FetchAllow)
		if err != nil {
			t.Fatal(err)
		}
		sponsor, _ := chain.GenerateKey()
		env := &qatools.Env{Target: target, Sponsor: sponsor, Fetcher: qatools.NewFetcher(allow, 5*time.Second, 64<<10),
			Limits: qatools.Limits{RequestRate: -1, CallTimeout: 5 * time.Second}, Chain: c, Registry: registry}
		sb, err := sandbox.Open(filepath.Join(t.TempDir(), "qa-sandbox"), runID)
		if err != nil {
			t.Fatal(err)
		}
		run := &qatools.Run{ID: runID, Source: "qa-security", Sandbox: sb, Meter: sandbox.NewMeter(fleet.Budget{MaxWrites: maxWrites})}
		if len(sessions) > 0 {
			run.Sessions = sessions[0]
		}
		reg, err := qatools.NewRegistry(env, run, "qa_fetch", "qa_call", "qa_submit", "qa_login", "qa_authz", "qa_chain", "qa_create", "qa_publish", "qa_compile")
		if err != nil {
			t.Fatal(err)
		}
		report, _ := fleettest.Tool("qa_report", fleet.Observe, func(ctx context.Context, raw json.RawMessage) (fleet.Result, error) {
			var a map[string]any
			json.Unmarshal(raw, &a)
			*findings = append(*findings, a)
			return fleet.OK(map[string]any{"status": "posted"}), nil
		})
		reg.Add(report)
		return reg
	}
}

func TestEvalSignIn(t *testing.T) {
	for _, mode := range []twin.Mode{twin.Flawed, twin.Correct} {
		t.Run(mode.String(), func(t *testing.T) {
			app := siwe.Serve(mode)
			defer app.Close()
			res, got := runLoop(t, "security", fleet.Exercise, app.Target(), realTools(t, app.Target(), 48), Options{})
			seen := app.Seen()
			// The crawl behind the login reached the pages only a session
			// reaches, and never followed the account page's sign-out link.
			if seen.SignOutLinks != 0 {
				t.Errorf("the sign-out link was followed %d times", seen.SignOutLinks)
			}
			if !strings.Contains(res.Summary, "only a session reaches: /api/me, /api/accounts/{address}/settings, /account") ||
				!strings.Contains(res.Summary, "/account/activity") {
				t.Errorf("the summary does not list the pages behind the login:\n%s", res.Summary)
			}
			t.Logf("%s: %d requests, %d with a session, %d sign-ins, %d writes", mode, seen.Requests, seen.WithSession, seen.SignIns, seen.Writes)
			// What qa_authz's repros left (the accounts of their fresh
			// sign-ins; everything else they wrote back) is in the summary.
			_, left, _ := strings.Cut(res.Summary, "Left on the platform: ")
			t.Logf("left on the platform: %s", left)
			if mode == twin.Flawed && !strings.Contains(left, "the accounts of fresh identities authz") {
				t.Errorf("the summary does not list what qa_authz left:\n%s", res.Summary)
			}
			for _, n := range app.DisplayNames() {
				if strings.Contains(n, "qa-authz-mark") {
					t.Errorf("an account is left holding qa_authz's mark %q", n)
				}
			}
			accountsAsSignedUp(t, app, left)
			if mode == twin.Correct {
				for _, f := range got {
					if sev, _ := fleet.ParseSeverity(f["severity"].(string)); sev.Rank() >= fleet.SeverityHigh.Rank() {
						t.Errorf("the correct twin got a finding at %s: %v", sev, f["summary"])
					}
				}
				if seen.SignIns == 0 || seen.WithSession == 0 {
					t.Error("the correct twin was not probed behind its login")
				}
				return
			}
			for _, fl := range signInFlaws {
				r := findReport(got, fl.words...)
				if r == nil {
					t.Errorf("missing: %s %v", fl.class, fl.words)
					continue
				}
				if r["surface"] != fl.surfaces[0] || r["severity"] != string(fl.minSev) {
					t.Errorf("%s: surface %v severity %v, want %s %s", fl.class, r["surface"], r["severity"], fl.surfaces[0], fl.minSev)
				}
				// No key material, no session value, no address of an identity.
				s := r["summary"].(string)
				if strings.Contains(s, "0x") && !strings.Contains(s, "0x...") || strings.Contains(s, "kr_session=") {
					t.Errorf("%s: the summary carries an address or a session value: %s", fl.class, s)
				}
				if twoIdentity[fl.class] {
					replayAuthzRepro(t, app, fl.class, r)
				}
			}
		})
	}
}

// accountsAsSignedUp: every account on Keyring holds what its sign-up
// stored (the run's identities are the only accounts), but for fields the
// summary's left on the platform (left) names. The property-level checks
// write role and verified on identity b's own account (qa_submit as b):
// b writes the prior values back and reads them again. Each account is
// listed as left: one identity named per account, the playbook's own
// (a, b, l, and t when a tampered sign-in was accepted) and qa_authz's.
func accountsAsSignedUp(t *testing.T, app *siwe.App, left string) {
	t.Helper()
	named := 0
	for _, m := range regexp.MustCompile(`the accounts of (?:fresh )?identities ([a-z0-9, ]+?), if the sign-in`).FindAllStringSubmatch(left, -1) {
		named += len(strings.Split(m[1], ", "))
	}
	accounts := app.Accounts()
	if named != len(accounts) {
		t.Errorf("the platform holds %d accounts, the summary lists %d as left by the run's sign-ins: %s", len(accounts), named, left)
	}
	for addr, got := range accounts {
		var acc map[string]any
		if err := json.Unmarshal([]byte(got), &acc); err != nil {
			t.Fatal(err)
		}
		want := map[string]any{"address": addr, "display_name": "new user", "email": "", "role": "user", "verified": false}
		for k, v := range want {
			if acc[k] != v && !regexp.MustCompile(`the fields [a-z_, ]*\b`+k+`\b`).MatchString(left) {
				t.Errorf("an account of the run holds %s %v after the run (a sign-up's is %v), and the summary does not list it as left on the platform: %s", k, acc[k], v, left)
			}
		}
	}
}

// TestPropertyCheckListsWhatItCouldNotRestore: on Keyring (flawed) behind
// a front that refuses every update putting a privilege field back (role
// user, verified false: the restores), the property-level checks' fields
// stay raised on identity b's account; the summary lists each as left on
// the platform with the refusal, by field name and the resource's
// template, and the findings say writing the field back failed.
func TestPropertyCheckListsWhatItCouldNotRestore(t *testing.T) {
	app := siwe.Serve(twin.Flawed)
	defer app.Close()
	back, _ := url.Parse(app.URL())
	proxy := httputil.NewSingleHostReverseProxy(back)
	mux := http.NewServeMux()
	mux.Handle("/", proxy)
	mux.HandleFunc("PATCH /api/accounts/{address}/settings", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var in map[string]any
		json.Unmarshal(body, &in)
		if in["role"] == "user" || in["verified"] == false {
			http.Error(w, `{"error":"locked"}`, http.StatusLocked)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		proxy.ServeHTTP(w, r)
	})
	front := httptest.NewServer(mux)
	defer front.Close()
	target := app.Target()
	swap := func(s string) string {
		return strings.ReplaceAll(s, strings.TrimPrefix(app.URL(), "http://"), strings.TrimPrefix(front.URL, "http://"))
	}
	target.Faces, target.Call, target.Docs, target.FetchAllow = swap(target.Faces), swap(target.Call), []string{swap(target.Docs[0])}, []string{swap(target.FetchAllow[0])}
	res, got := runLoop(t, "security", fleet.Exercise, target, realTools(t, target, 48), Options{})
	_, left, _ := strings.Cut(res.Summary, "Left on the platform: ")
	for _, field := range []string{"role", "verified"} {
		if !strings.Contains(left, "the fields "+field+" of /api/accounts/{address}/settings (identity b's own resource) hold what the run's PATCH wrote (restoring them: PATCH: HTTP 423)") {
			t.Errorf("the summary does not list b's %s as left with the refusal: %s", field, left)
		}
		if f := findReport(got, "mass assignment", `set "`+field+`"`, "Writing the field back failed"); f == nil {
			t.Errorf("no property-level finding on %s says its field could not be written back", field)
		}
	}
	if strings.Contains(left, "0x") {
		t.Errorf("the summary names an address: %s", left)
	}
	accountsAsSignedUp(t, app, left)
	raised := 0
	for _, acc := range app.Accounts() {
		if strings.Contains(acc, `"role":"admin"`) {
			raised++
		}
	}
	if raised == 0 {
		t.Error("no account holds the raised role: the front let a restore through")
	}
}

// TestSignInNothingAtObserve: at observe the playbook signs nobody in, no
// request carries a session and nothing is written; the public pages are
// still read (the crawl may GET the nonce endpoint the docs link: a public
// read in front of the login, nothing behind it).
func TestSignInNothingAtObserve(t *testing.T) {
	app := siwe.Serve(twin.Flawed)
	defer app.Close()
	_, got := runLoop(t, "security", fleet.Observe, app.Target(), realTools(t, app.Target(), 48), Options{})
	seen := app.Seen()
	if seen.SignIns != 0 || seen.WithSession != 0 || seen.Writes != 0 || seen.SignOutLinks != 0 {
		t.Errorf("at observe: %d sign-ins, %d sign-out links followed, %d requests with a session, %d writes; want none", seen.SignIns, seen.SignOutLinks, seen.WithSession, seen.Writes)
	}
	if seen.Requests == 0 {
		t.Error("at observe the public pages were not read")
	}
	for _, f := range got {
		if s := f["surface"]; s == "auth" || s == "authz" {
			t.Errorf("a sign-in finding at observe: %v", f["summary"])
		}
	}
}

// TestTestbedSignedIn: the testbed with its login (Config.Login, as the
// demo runs it) gives the security playbook, with the real tools at
// exercise, its signed-in finding: planted flaw S9, and nothing else
// behind the login (its sign-in is verified correctly).
func TestTestbedSignedIn(t *testing.T) {
	tg := startTestbedLogin(t)
	_, got := runLoop(t, "security", fleet.Exercise, tg, realTools(t, tg, 48), Options{})
	if findReport(got, "object-level", "identity b (a fresh account) read identity a's resource", "/api/notes/{address}") == nil {
		t.Errorf("no signed-in finding for flaw S9:%s", summaries(got))
	}
	for _, f := range got {
		s, _ := f["summary"].(string)
		if (f["surface"] == "auth" || f["surface"] == "authz") && !strings.Contains(s, "/api/notes/{address}") {
			t.Errorf("a sign-in finding the testbed does not plant: %s", s)
		}
	}
}

// TestUXBehindLogin: ux at observe on Keyring, whose docs describe a SIWE
// login, says the documented endpoints that refuse a caller without a
// session are behind that login (not short of credentials the docs do not
// show), files no finding for them, and signs nobody in.
func TestUXBehindLogin(t *testing.T) {
	app := siwe.Serve(twin.Flawed)
	defer app.Close()
	res, got := runLoop(t, "ux", fleet.Observe, app.Target(), realTools(t, app.Target(), 48), Options{})
	for _, path := range []string{"/api/me", "/api/admin/accounts"} {
		want := "GET " + app.URL() + path + " answers HTTP 401: it is behind the documented login (POST " + app.URL() + "/api/auth/verify)"
		if !strings.Contains(res.Summary, want) {
			t.Errorf("the summary does not say %q:\n%s", want, res.Summary)
		}
	}
	if strings.Contains(res.Summary, "credentials or parameters the docs do not show") {
		t.Errorf("the summary blames the docs for a documented login:\n%s", res.Summary)
	}
	for _, f := range got {
		if s, _ := f["summary"].(string); strings.Contains(s, "/api/me") || strings.Contains(s, "/api/admin") {
			t.Errorf("a finding for an endpoint behind the login: %s", s)
		}
	}
	if seen := app.Seen(); seen.SignIns != 0 || seen.WithSession != 0 || seen.Writes != 0 {
		t.Errorf("ux at observe: %d sign-ins, %d requests with a session, %d writes; want none", seen.SignIns, seen.WithSession, seen.Writes)
	}
}

// TestSpoofWithRegistryOwners: the owner of the called agent's name, as
// the name registry on chain records it and no page shows, is claimed in
// the identity header and query parameter that "admin" and 1 do not
// open. Keyring (flawed) believes X-Keyring-Account and ?account= when
// they name an existing account, here the registry's owner of "welcome"
// (an admin account of the platform): both are found before anyone signs
// in, and say the address was read from the registry. The correct twin
// gives nothing at high.
func TestSpoofWithRegistryOwners(t *testing.T) {
	cw := startChainWorld(t, true)
	ctx := context.Background()
	reg, _, err := cw.c.DeployNameRegistry(ctx, cw.sponsor)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Register(ctx, cw.sponsor, "welcome"); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []twin.Mode{twin.Flawed, twin.Correct} {
		t.Run(mode.String(), func(t *testing.T) {
			app := siwe.Serve(mode, cw.sponsor.Address())
			defer app.Close()
			tg := app.Target()
			tg.Registry = reg.Address().String()
			_, got := runLoop(t, "security", fleet.Exercise, tg, realToolsOn(t, tg, 48, cw.c, reg), Options{})
			owner := strings.ToLower(cw.sponsor.Address().String())
			if mode == twin.Correct {
				for _, f := range got {
					if sev, _ := fleet.ParseSeverity(f["severity"].(string)); sev.Rank() >= fleet.SeverityHigh.Rank() {
						t.Errorf("the correct twin got a finding at %s: %v", sev, f["summary"])
					}
				}
				return
			}
			for _, words := range [][]string{
				{"identity header (X-Keyring-Account: " + owner, "the called agent's owner, read from the name registry on chain (ownerOf)"},
				{"/api/notices takes the caller's identity from a query parameter (account=" + owner, "the called agent's owner, read from the name registry on chain (ownerOf)"},
			} {
				if findReport(got, words...) == nil {
					t.Errorf("missing %q:%s", words, summaries(got))
				}
			}
		})
	}
}
