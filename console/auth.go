package console

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/qafleet/fleetd/clip"
)

// sessionCookie names the browser session cookie.
const sessionCookie = "fleetd_session"

// sessionTTL is how long a browser login lasts.
const sessionTTL = 12 * time.Hour

// maxSessions bounds the sessions kept; the oldest goes first.
const maxSessions = 256

type session struct {
	id      string
	csrf    string
	name    string // who logged in, as they said (for the audit log)
	expires time.Time
	flash   string // a message for the next page view
}

// sessions holds browser logins in memory.
type sessions struct {
	mu  sync.Mutex
	m   map[string]*session
	now func() time.Time
}

func newSessions(now func() time.Time) *sessions {
	return &sessions{m: map[string]*session{}, now: now}
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b) // never fails (crypto/rand: it panics on the platform's failure)
	return hex.EncodeToString(b)
}

// create starts a session for name.
func (s *sessions) create(name string) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for id, se := range s.m {
		if now.After(se.expires) {
			delete(s.m, id)
		}
	}
	if len(s.m) >= maxSessions {
		var oldest *session
		for _, se := range s.m {
			if oldest == nil || se.expires.Before(oldest.expires) {
				oldest = se
			}
		}
		delete(s.m, oldest.id)
	}
	se := &session{id: randomHex(32), csrf: randomHex(32), name: name, expires: now.Add(sessionTTL)}
	s.m[se.id] = se
	c := *se
	return &c
}

// get returns a copy of the live session named by r's cookie, or nil.
func (s *sessions) get(r *http.Request) *session {
	c, err := r.Cookie(sessionCookie)
	if err != nil || c.Value == "" {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	se := s.m[c.Value]
	if se == nil {
		return nil
	}
	if s.now().After(se.expires) {
		delete(s.m, se.id)
		return nil
	}
	cp := *se
	return &cp
}

// takeFlash returns and clears a session's flash message.
func (s *sessions) takeFlash(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	se := s.m[id]
	if se == nil {
		return ""
	}
	f := se.flash
	se.flash = ""
	return f
}

func (s *sessions) setFlash(id, msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if se := s.m[id]; se != nil {
		se.flash = msg
	}
}

func (s *sessions) remove(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, id)
}

// tokenEqual compares a presented token with the expected one in constant
// time; an empty expected token matches nothing.
func tokenEqual(presented, want string) bool {
	return want != "" && subtle.ConstantTimeCompare([]byte(presented), []byte(want)) == 1
}

// bearer returns the token of an "Authorization: Bearer T" header.
func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimSpace(tok), true
}

// crossSite reports why a state-changing request looks cross-site, or "".
// Browsers send Sec-Fetch-Site on every request (Chromium, Firefox, Safari
// since 2023) and it settles the question. Without it, an Origin naming
// another host is refused; "null" (what a browser sends under a strict
// referrer policy) is left to the CSRF token and the SameSite cookie. A
// request with neither header is a program, which authenticates with the
// bearer header or a cookie it obtained itself.
func crossSite(r *http.Request) string {
	switch sfs := r.Header.Get("Sec-Fetch-Site"); sfs {
	case "same-origin", "none":
		return ""
	case "":
	default:
		return "cross-site request refused (Sec-Fetch-Site: " + clip.Text(sfs, 20) + ")"
	}
	if o := r.Header.Get("Origin"); o != "" && o != "null" {
		u, err := url.Parse(o)
		if err != nil || !strings.EqualFold(u.Host, r.Host) {
			return "cross-site request refused (Origin " + clip.Text(o, 80) + " is not " + clip.Text(r.Host, 80) + ")"
		}
	}
	return ""
}

// loopbackHost reports whether a Host header names this machine's loopback:
// localhost (or a name under .localhost) or a loopback IP, with any port.
func loopbackHost(host string) bool {
	h := host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		h = hh
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	h = strings.ToLower(strings.TrimSuffix(h, "."))
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// LoopbackAddr reports whether a listen address binds only loopback
// interfaces ("127.0.0.1:8787", "[::1]:0", "localhost:8787"). An empty host
// ("":8787, all interfaces) is not loopback.
func LoopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
