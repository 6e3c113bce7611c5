package qatools

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
)

// Sessions are one run's signed-in identities and their keys (qa_login's),
// shared by the run's tools and, through Browser, its rendering crawl
// (issue 33: the rendering crawl behind the login).
type Sessions struct {
	mu   sync.Mutex
	keys map[string]*chain.Key
	live map[string]*Session
	dial fleet.DialSource // read at every Browser call; nil refuses
}

// NewSessions returns a run's sessions; the rendering crawl gets one only
// while dial allows exercise.
func NewSessions(dial fleet.DialSource) *Sessions { return &Sessions{dial: dial} }

// BrowserSession is what the rendering crawl attaches for one identity:
// its credentials (Cookie, Authorization), the origin they go to, and the
// sign-out endpoints it must never request.
type BrowserSession struct {
	Origin string
	Header http.Header
	Never  []string
}

// Browser returns identity's session for the rendering crawl (a signed-in
// render), read under the dial as it is now: below exercise, with a dial
// that cannot be read, or for an identity this run's qa_login did not sign
// in, it refuses, and nothing behind the login is rendered. logout, when
// set, is the sign-out endpoint (target.auth.logout) added to Never. The
// values go to the browser only; never into a result or a record.
func (s *Sessions) Browser(ctx context.Context, identity, logout string) (BrowserSession, error) {
	if s == nil || s.dial == nil {
		return BrowserSession{}, fmt.Errorf("refused: no dial for the rendering crawl's sessions (observe assumed)")
	}
	d, err := s.dial.Dial()
	if err != nil {
		return BrowserSession{}, fmt.Errorf("refused: the dial cannot be read (%v): observe assumed", err)
	}
	if !d.Allows(fleet.Exercise) {
		return BrowserSession{}, fmt.Errorf("refused: rendering as a signed-in identity needs dial exercise, dial is %s (observe renders only public pages)", d)
	}
	s.mu.Lock()
	live := s.live[identity]
	s.mu.Unlock()
	if live == nil {
		return BrowserSession{}, fmt.Errorf("no session for identity %q: sign it in with qa_login first", identity)
	}
	out := BrowserSession{Origin: live.origin, Header: http.Header{}}
	var cookies []string
	for _, c := range live.cookies {
		cookies = append(cookies, c.Name+"="+c.Value)
	}
	if len(cookies) > 0 {
		out.Header.Set("Cookie", strings.Join(cookies, "; "))
	}
	if live.bearer != "" {
		out.Header.Set("Authorization", "Bearer "+live.bearer)
	}
	if logout != "" {
		out.Never = append(out.Never, logout)
	}
	return out, nil
}
