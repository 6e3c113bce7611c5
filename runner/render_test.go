package runner

import (
	"context"
	"strings"
	"testing"

	"github.com/qafleet/fleetd/browser"
	"github.com/qafleet/fleetd/fleet"
	"github.com/qafleet/fleetd/qatools"
)

// TestNewRendererRefusesABadAllowlist: the rendering crawl is built from
// the target's fetch allowlist, and one that does not parse is refused
// with the key named, before any browser starts.
func TestNewRendererRefusesABadAllowlist(t *testing.T) {
	env := &Env{Env: &qatools.Env{Target: fleet.Target{FetchAllow: []string{"no port here"}}}}
	b, err := NewRenderer(env, nil, nil, "/nonexistent/chromium", browser.Jail{Off: true}, 0)
	if err == nil || b != nil || !strings.Contains(err.Error(), "target.fetch_allow") {
		t.Fatalf("NewRenderer with a bad allowlist: %v, %v; want an error naming target.fetch_allow", b, err)
	}
}

// TestBrowserSessionFollowsTheRunsSessions: without the run's sessions the
// browser renders as nobody (no Session hook at all); with them, a signed-in
// render is asked of the sessions at each call, so below exercise it is
// refused, and at exercise an identity qa_login did not sign in is refused
// by name.
func TestBrowserSessionFollowsTheRunsSessions(t *testing.T) {
	tg := fleet.Target{Auth: &fleet.Auth{Logout: "http://127.0.0.1:1/logout"}}
	if f := browserSession(tg, nil); f != nil {
		t.Fatal("browserSession(nil sessions) is a hook; want none (render as nobody)")
	}
	ctl := fleet.NewControl(t.TempDir())
	session := browserSession(tg, qatools.NewSessions(ctl))
	if session == nil {
		t.Fatal("browserSession(sessions) is nil; want the sessions' hook")
	}
	if _, err := session(context.Background(), "alice"); err == nil || !strings.Contains(err.Error(), "exercise") {
		t.Fatalf("signed-in render at observe: %v; want a refusal naming exercise", err)
	}
	if _, err := ctl.SetDial(fleet.Exercise, "test", "test"); err != nil {
		t.Fatal(err)
	}
	s, err := session(context.Background(), "alice")
	if err == nil || !strings.Contains(err.Error(), `"alice"`) || s.Identity != "alice" || s.Header != nil {
		t.Fatalf("signed-in render of an identity never signed in: %+v, %v; want a refusal naming it and no credentials", s, err)
	}
}
