package qatools

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/qafleet/fleetd/fixtures/twin"
	"github.com/qafleet/fleetd/fleet"
)

// TestBrowserSessionFollowsTheDial: the rendering crawl gets an identity's
// session only at exercise and above (the dial read at each ask), only for
// an identity this run's qa_login signed in, and only the credentials the
// platform issued (they reach GET /api/me), with the origin they go to.
func TestBrowserSessionFollowsTheDial(t *testing.T) {
	h := newSigninHarness(t, twin.Correct, fleet.Exercise, nil)
	ctx := context.Background()
	if _, err := h.run.Sessions.Browser(ctx, "a", ""); err == nil || !strings.Contains(err.Error(), "sign it in with qa_login first") {
		t.Fatalf("a session before any sign-in: %v", err)
	}
	if out := h.login("a", nil); out.Verdict != fleet.VerdictOK {
		t.Fatalf("qa_login: %v", out.Result)
	}
	s, err := h.run.Sessions.Browser(ctx, "a", h.app.URL()+"/api/auth/logout")
	if err != nil {
		t.Fatal(err)
	}
	if s.Origin != h.app.URL() || len(s.Never) != 1 || !strings.HasSuffix(s.Never[0], "/api/auth/logout") {
		t.Errorf("origin %q never %v, want %s and the logout endpoint", s.Origin, s.Never, h.app.URL())
	}
	for _, hv := range []string{"Cookie", "Authorization"} {
		req, _ := http.NewRequest("GET", h.app.URL()+"/api/me", nil)
		req.Header.Set(hv, s.Header.Get(hv))
		resp, err := h.app.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("GET /api/me with the session's %s answered %d", hv, resp.StatusCode)
		}
	}
	if _, err := h.ctl.SetDial(fleet.Observe, "test", "test"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.run.Sessions.Browser(ctx, "a", ""); err == nil || !strings.Contains(err.Error(), "dial is observe") {
		t.Errorf("a session at observe: %v", err)
	}
	if _, err := NewSessions(nil).Browser(ctx, "a", ""); err == nil {
		t.Error("sessions without a dial gave a session")
	}
}
