package qatools

import (
	"bytes"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/qafleet/fleetd/fixtures/siwe"
	"github.com/qafleet/fleetd/fixtures/twin"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/sandbox"
)

// keyringState is what Keyring stores: every account's display name
// (sorted by address) and, for each address a sign-in named, its role
// and verified flag.
type keyringState struct {
	names []string
	roles map[string]string
}

func stateOf(h *signinHarness) keyringState {
	s := keyringState{names: h.app.DisplayNames(), roles: map[string]string{}}
	for _, body := range h.app.Seen().Bodies {
		// A body is recorded after the request's URL and header values.
		if i := strings.Index(body, `{"message"`); i < 0 {
			continue
		} else if addr := siweAddress(body[i:]); addr != "" {
			a, err := fleet.ParseAddress(addr)
			if err != nil {
				continue
			}
			if role, verified, ok := h.app.Account(a); ok {
				s.roles[addr] = fmt.Sprintf("%s/%v", role, verified)
			}
		}
	}
	return s
}

// TestAuthzLeavesThePlatformAsFound: after each of Keyring's qa_authz
// repros (flawed and correct twin), every account that existed before
// holds what it held, and what the call added is exactly what its result
// lists as left on the platform: one account per fresh sign-in, each as a
// sign-up leaves it (display name "new user", role user, not verified),
// never a's mark or a granted role. What was written back is in undone.
func TestAuthzLeavesThePlatformAsFound(t *testing.T) {
	for _, mode := range []twin.Mode{twin.Flawed, twin.Correct} {
		t.Run(mode.String(), func(t *testing.T) {
			h := newSigninHarness(t, mode, fleet.Exercise, nil)
			h.run.Meter = sandbox.NewMeter(fleet.Budget{MaxWrites: 80})
			// An account that was there before, with a name of its own.
			h.login("x", nil)
			h.call("qa_submit", map[string]any{"url": h.app.URL() + "/api/accounts/" + strings.ToLower(h.loginAddr("x")) + "/settings", "method": "PATCH", "enctype": "json", "json": `{"display_name":"resident"}`, "as": "x"})
			repros := authzRepros(h.app.URL())
			repros["role, written with PUT"] = map[string]any{"check": "property", "url": h.app.URL() + "/api/accounts/{address}/settings", "method": "PUT", "field": "role", "value": `"admin"`,
				"nonce_url": h.app.URL() + "/api/auth/nonce", "verify_url": h.app.URL() + "/api/auth/verify", "chain_id": siwe.ChainID}
			for _, name := range slices.Sorted(maps.Keys(repros)) {
				before := stateOf(h)
				signIns := h.app.Seen().SignIns
				out := h.call("qa_authz", repros[name])
				if out.Verdict != fleet.VerdictOK {
					t.Fatalf("%s: %s %v", name, out.Verdict, out.Result)
				}
				after := stateOf(h)
				fresh := h.app.Seen().SignIns - signIns
				// Accounts there before hold what they held.
				for addr, v := range before.roles {
					if after.roles[addr] != v {
						t.Errorf("%s: an account that was there before holds %s, want %s", name, after.roles[addr], v)
					}
				}
				// What was added: one sign-up per fresh sign-in, untouched.
				added := 0
				for addr, v := range after.roles {
					if _, old := before.roles[addr]; !old {
						added++
						if v != "user/false" {
							t.Errorf("%s: a fresh identity's account is left as %s, want user/false (a sign-up's)", name, v)
						}
					}
				}
				names := slices.Clone(before.names)
				for range added {
					names = append(names, "new user")
				}
				slices.Sort(names)
				got := slices.Sorted(slices.Values(after.names))
				if !slices.Equal(got, names) {
					t.Errorf("%s: display names %q after, want %q (those before and a sign-up's per fresh identity)", name, got, names)
				}
				if added != fresh {
					t.Errorf("%s: %d accounts added by %d sign-ins", name, added, fresh)
				}
				left, _ := out.Result["left_on_platform"].([]string)
				if len(left) != 1 || len(regexp.MustCompile(`\bauthz\d+[a-z]\b`).FindAllString(left[0], -1)) != fresh || !strings.Contains(left[0], "/api/auth/verify") {
					t.Errorf("%s: left_on_platform %q, want the %d fresh sign-ins' accounts, and nothing else", name, left, fresh)
				}
				undone, _ := out.Result["undone"].([]string)
				changes := mode == twin.Flawed && out.Result["status_write"] == 200 && name != "object" || name == "object, a writes first"
				if changes != (len(undone) == 1) {
					t.Errorf("%s: undone %q (status_write %v)", name, undone, out.Result["status_write"])
				}
				for _, s := range append(left, undone...) {
					if strings.Contains(s, "0x") {
						t.Errorf("%s: %q names an address", name, s)
					}
				}
			}
		})
	}
}

// loginAddr is the address qa_login gave identity.
func (h *signinHarness) loginAddr(identity string) string {
	h.t.Helper()
	out := h.login(identity, nil)
	return fmt.Sprint(out.Result["address"])
}

// notesFront is Keyring behind a front that adds a notes API whose POST
// creates (201, Location) and whose DELETE removes: what a qa_authz POST
// creates must be learned and deleted.
type notesFront struct {
	mu       sync.Mutex
	notes    map[string]string // path -> text
	n        int
	profiles map[string]string // address -> the profile's JSON object, which PUT replaces
	puts     int               // PUTs answered
	srv      *httptest.Server
}

func newNotesFront(t *testing.T, app *siwe.App, deleteOK bool) *notesFront {
	back, _ := url.Parse(app.URL())
	proxy := httputil.NewSingleHostReverseProxy(back)
	f := &notesFront{notes: map[string]string{}, profiles: map[string]string{}}
	mux := http.NewServeMux()
	mux.Handle("/", proxy)
	// A profile replaced whole by PUT; with deleteOK false only its first
	// PUT is taken (the restore is refused).
	mux.HandleFunc("GET /api/profiles/{address}", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		p, ok := f.profiles[r.PathValue("address")]
		if !ok {
			p = `{"bio":"","display_name":"new user","tier":"free"}`
			f.profiles[r.PathValue("address")] = p
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, p)
	})
	mux.HandleFunc("PUT /api/profiles/{address}", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.puts++; f.puts > 1 && !deleteOK {
			http.Error(w, "locked", http.StatusLocked)
			return
		}
		var body bytes.Buffer
		body.ReadFrom(r.Body)
		f.profiles[r.PathValue("address")] = body.String()
		w.WriteHeader(http.StatusOK)
	})
	mux.HandleFunc("POST /api/notes/{address}", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.n++
		p := fmt.Sprintf("/api/notes/%s/%d", r.PathValue("address"), f.n)
		f.notes[p] = "qa-authz-mark"
		w.Header().Set("Location", p)
		w.WriteHeader(http.StatusCreated)
	})
	mux.HandleFunc("GET /api/notes/{address}", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		var out []string
		for p, text := range f.notes {
			if strings.HasPrefix(p, "/api/notes/"+r.PathValue("address")+"/") {
				out = append(out, text)
			}
		}
		writeJSONTest(w, map[string]any{"owner": r.PathValue("address"), "notes": out})
	})
	mux.HandleFunc("DELETE /api/notes/{address}/{n}", func(w http.ResponseWriter, r *http.Request) {
		if !deleteOK {
			http.Error(w, "no", http.StatusForbidden)
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.notes, r.URL.Path)
		w.WriteHeader(http.StatusNoContent)
	})
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

func writeJSONTest(w http.ResponseWriter, v map[string]any) {
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"owner":%q,"notes":%d}`, v["owner"], len(v["notes"].([]string)))
}

func (f *notesFront) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.notes)
}

// TestAuthzDeletesWhatItsPostCreated: a's POST in qa_authz's object check
// creates a note (201, Location); the call deletes it as a when it ends
// (undone), and the write reserved for that DELETE is given back. When
// the platform refuses the DELETE, the note is listed as left, with the
// answer. A PUT of an identity's whole profile is undone by a PUT of the
// profile read before it; a refused restore lists the fields as left.
func TestAuthzDeletesWhatItsPostCreated(t *testing.T) {
	for _, deleteOK := range []bool{true, false} {
		t.Run(fmt.Sprintf("delete %v", deleteOK), func(t *testing.T) {
			h := newSigninHarness(t, twin.Flawed, fleet.Exercise, nil)
			f := newNotesFront(t, h.app, deleteOK)
			h.behind(f.srv)
			out := h.call("qa_authz", map[string]any{"check": "object", "url": f.srv.URL + "/api/notes/{address}", "write_method": "POST", "write_json": `{"text":"qa-authz-mark"}`,
				"nonce_url": f.srv.URL + "/api/auth/nonce", "verify_url": f.srv.URL + "/api/auth/verify", "chain_id": siwe.ChainID})
			if out.Verdict != fleet.VerdictOK || out.Result["status_write"] != 201 {
				t.Fatalf("qa_authz: %s %v", out.Verdict, out.Result)
			}
			left, _ := out.Result["left_on_platform"].([]string)
			undone, _ := out.Result["undone"].([]string)
			if deleteOK {
				if f.count() != 0 || len(undone) != 1 || !strings.HasPrefix(undone[0], "DELETE /api/notes/{address}/") || len(left) != 1 {
					t.Errorf("%d notes left; undone %q; left %q", f.count(), undone, left)
				}
			} else if f.count() != 1 || len(undone) != 0 || len(left) != 2 || !strings.Contains(left[0], "HTTP 403") {
				t.Errorf("%d notes left; undone %q; left %q, want the note listed with its DELETE's 403", f.count(), undone, left)
			}
			if r := h.run.Meter.Reserved(fleet.ResWrites); deleteOK && r != 0 {
				t.Errorf("%d writes still reserved after the DELETE", r)
			}
			// A PUT replaces the whole profile: the whole prior object goes
			// back, or the fields are listed as left with the refusal.
			out = h.call("qa_authz", map[string]any{"check": "property", "url": f.srv.URL + "/api/profiles/{address}", "method": "PUT", "field": "tier", "value": `"gold"`,
				"nonce_url": f.srv.URL + "/api/auth/nonce", "verify_url": f.srv.URL + "/api/auth/verify", "chain_id": siwe.ChainID})
			if out.Result["outcome"] != AuthzReproduced {
				t.Fatalf("qa_authz PUT: %v", out.Result)
			}
			left, _ = out.Result["left_on_platform"].([]string)
			undone, _ = out.Result["undone"].([]string)
			f.mu.Lock()
			var profiles []string
			for _, p := range f.profiles {
				profiles = append(profiles, p)
			}
			f.mu.Unlock()
			if deleteOK {
				if len(profiles) != 1 || profiles[0] != `{"bio":"","display_name":"new user","tier":"free"}` || len(undone) != 1 || len(left) != 1 {
					t.Errorf("after the PUT's restore: profiles %q; undone %q; left %q", profiles, undone, left)
				}
			} else if len(undone) != 0 || len(left) != 2 || !strings.Contains(left[0], "the fields tier of /api/profiles/{address}") || !strings.Contains(left[0], "HTTP 423") {
				t.Errorf("a refused restore: undone %q; left %q, want the field listed with the 423", undone, left)
			}
		})
	}
}

// FuzzChangedFields: comparing a platform's answers before and after a
// write never panics on any answer; a value equals itself (whitespace
// aside) and equality is symmetric, so a restore is neither skipped nor
// sent for a difference of formatting.
func FuzzChangedFields(f *testing.F) {
	f.Add(`{"role":"user","verified":false}`, `{"role": "user", "verified":true}`)
	f.Add(`{"a":1}`, `[1]`)
	f.Add(`{"a":{"b":[1,2]}}`, `{"a":{"b":[1, 2]}}`)
	f.Add(`{"a":`, `null`)
	f.Fuzz(func(t *testing.T, before, after string) {
		p, n := jsonTop(fleet.Result{"body": before}), jsonTop(fleet.Result{"body": after})
		var fields []string
		for k := range p {
			fields = append(fields, k)
		}
		if got := changedFields(p, p, fields); p != nil && len(got) != 0 {
			t.Errorf("fields %v of %q differ from themselves", got, before)
		}
		for _, k := range fields {
			if sameJSON(p[k], n[k]) != sameJSON(n[k], p[k]) {
				t.Errorf("field %q: sameJSON is not symmetric for %q and %q", k, p[k], n[k])
			}
		}
		changedFields(p, n, fields)
	})
}
