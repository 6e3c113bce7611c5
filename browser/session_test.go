package browser

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// seenRequests records, per path, the credentials each request carried.
type seenRequests struct {
	mu   sync.Mutex
	hits map[string][]string // path -> "cookie|authorization" per request
}

func (s *seenRequests) record(r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hits == nil {
		s.hits = map[string][]string{}
	}
	s.hits[r.URL.Path] = append(s.hits[r.URL.Path], r.Header.Get("Cookie")+"|"+r.Header.Get("Authorization"))
}

func (s *seenRequests) get(path string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.hits[path]...)
}

func (s *seenRequests) total() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, v := range s.hits {
		n += len(v)
	}
	return n
}

// TestRenderAsSession: a signed-in render carries the identity's cookie
// and bearer token to the origin it signed in at, and to nothing else;
// never requests a sign-out link, whoever asks for it (an image, a
// script's fetch, the logout endpoint the session names, the URL opened);
// and leaves nothing of the session in the browser: the next render sends
// no credential, not even a cookie the signed-in page set. A refused
// session opens nothing.
func TestRenderAsSession(t *testing.T) {
	var site, other seenRequests
	otherSrv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		other.record(r)
		w.Header().Set("Access-Control-Allow-Origin", "*")
		w.Write([]byte("{}"))
	}))
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		site.record(r)
		switch r.URL.Path {
		case "/account":
			http.SetCookie(w, &http.Cookie{Name: "left", Value: "by-the-page", Path: "/"})
			htmlPage(`<!doctype html><title>Account</title><h1>Account</h1>
<a href="/account/signout">Sign out</a><img src="/account/signout">
<script>
fetch('/api/me').then(r => r.text()).then(t => { document.title = 'got ' + t.length; });
fetch('`+otherSrv.URL+`/other');
fetch('/api/auth/end', {method: 'GET'});
fetch('/logout');
</script>`)(w, r)
		case "/plain":
			htmlPage(`<!doctype html><title>Plain</title><script>fetch('/api/me')</script>`)(w, r)
		default:
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"ok":true}`))
		}
	}))
	refuse := false
	b := newBrowser(t, Config{Allow: allowOnly(srv.URL, otherSrv.URL),
		Session: func(ctx context.Context, identity string) (Session, error) {
			if refuse {
				return Session{}, errors.New("refused: dial is observe")
			}
			return Session{Origin: srv.URL, Never: []string{srv.URL + "/api/auth/end"},
				Header: http.Header{"Cookie": {"kr_session=s3cret"}, "Authorization": {"Bearer t0ken"}}}, nil
		}})
	ctx := context.Background()
	r, err := b.RenderAs(ctx, srv.URL+"/account", "a")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/account", "/api/me"} {
		got := site.get(path)
		if len(got) == 0 {
			t.Fatalf("%s was not requested: %v", path, r.Notes)
		}
		for _, h := range got {
			if !strings.Contains(h, "kr_session=s3cret") || !strings.HasSuffix(h, "|Bearer t0ken") {
				t.Errorf("%s was requested without the session: %q", path, h)
			}
		}
	}
	if got := other.get("/other"); len(got) != 1 || got[0] != "|" {
		t.Errorf("another origin got %q, want one request without credentials", got)
	}
	for _, path := range []string{"/account/signout", "/logout", "/api/auth/end"} {
		if n := len(site.get(path)); n != 0 {
			t.Errorf("the sign-out %s was requested %d times", path, n)
		}
	}
	if !slicesContains(r.Notes, "sign-out requests refused") {
		t.Errorf("no note of the refused sign-outs: %v", r.Notes)
	}

	// Nothing of the session stays: a plain render sends no credential.
	render(t, b, srv.URL+"/plain")
	for _, path := range []string{"/plain", "/api/me"} {
		got := site.get(path)
		last := got[len(got)-1]
		if path == "/plain" && len(got) != 1 {
			t.Fatalf("/plain requested %d times", len(got))
		}
		if last != "|" {
			t.Errorf("after the signed-in render, %s carried %q", path, last)
		}
	}

	// The URL opened is a sign-out link, or the session is refused:
	// nothing is opened.
	before := site.total()
	if _, err := b.RenderAs(ctx, srv.URL+"/account/signout", "a"); !errors.Is(err, ErrSignOut) {
		t.Errorf("RenderAs of a sign-out link: %v, want ErrSignOut", err)
	}
	refuse = true
	if _, err := b.RenderAs(ctx, srv.URL+"/account", "a"); err == nil || !strings.Contains(err.Error(), "observe") {
		t.Errorf("RenderAs with a refused session: %v", err)
	}
	if n := site.total() - before; n != 0 {
		t.Errorf("%d requests reached the site for renders that were refused", n)
	}
	nb := newBrowser(t, Config{Allow: allowOnly(srv.URL)})
	if _, err := nb.RenderAs(ctx, srv.URL+"/account", "a"); !errors.Is(err, ErrNoSession) {
		t.Errorf("RenderAs without Config.Session: %v, want ErrNoSession", err)
	}
}

func slicesContains(list []string, part string) bool {
	for _, s := range list {
		if strings.Contains(s, part) {
			return true
		}
	}
	return false
}
